"""The small batch appended on the event loop when the SQLite store takes it at once
(ADR-0118): never waiting there for the store's lock, falling back to a thread with the
POST's whole deadline, and storing as any other append."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import httpx

from miam_economies.api.service.services import Services
from miam_economies.domain.acceptance import accept_batch
from tests.conftest import EXAMPLE_BATCH, TOKEN, LiveServer
from tests.corpus import generate


def test_append_now_stores_only_when_the_lock_is_had_at_once(services: Services,
                                                             tmp_path: Path) -> None:
    batch = accept_batch({"evenements": generate(10, seed=21)[:10]})
    other = sqlite3.connect(services.settings.data / "economies.sqlite", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process's writer holds the store's lock
    try:
        started = time.monotonic()
        assert services.store.append_now(batch, within=0.002) is None
        assert time.monotonic() - started < 0.5  # it did not wait for the lock
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert services.store.head() == 0  # nothing stored
    appended = services.store.append_now(batch, within=0.002)
    assert appended is not None and (appended.recus, appended.doublons) == (10, 0)
    again = services.store.append_now(batch, within=0.002)
    assert again is not None and (again.recus, again.doublons) == (0, 10)


def test_a_small_post_under_a_held_lock_waits_in_a_thread_not_on_the_loop(
        tmp_path: Path) -> None:
    server = LiveServer(tmp_path / "data")
    server.start()
    try:
        assert server.post(EXAMPLE_BATCH).json()["recus"] == 2
        small = {"evenements": generate(10, seed=22)[:10]}
        other = sqlite3.connect(server.data / "economies.sqlite", isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        answers: list[httpx.Response] = []
        poster = threading.Thread(target=lambda: answers.append(server.post(small)))
        try:
            poster.start()
            time.sleep(0.3)  # the POST is in, and waiting for the lock
            # Meanwhile the event loop answers others at once: the wait is in a thread.
            with httpx.Client(base_url=server.url, timeout=5,
                              headers={"Authorization": f"Bearer {TOKEN}"}) as client:
                started = time.monotonic()
                assert client.get("/healthz").status_code in (200, 503)
                assert time.monotonic() - started < 0.2
            assert poster.is_alive()  # still waiting for the lock, within its deadline
        finally:
            other.execute("ROLLBACK")
            other.close()
        poster.join(timeout=10)
        assert answers and answers[0].status_code == 200
        assert answers[0].json() == {"ok": True, "recus": 10, "doublons": 0}
        assert server.bilan()["provenance"]["tete"] == 12
    finally:
        server.close()
