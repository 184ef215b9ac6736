"""While another process holds the store's write lock, every POST answers within
``--lock-timeout`` (plus a small margin), whatever the queue in front of it: 503 with
``Retry-After``, nothing stored; once the lock is free the same batches are stored
(issue 13.3; ADR-0053)."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg

from tests.conftest import TOKEN, LiveServer
from tests.corpus import generate

LOCK_TIMEOUT = 2
"""Seconds (``--lock-timeout``): every answer must come within this plus ``MARGIN``."""
MARGIN = 1.0
CLIENTS = 6


@contextmanager
def write_lock_held(server: LiveServer) -> Iterator[None]:
    """The store's write lock held by another connection until the block ends."""
    if server.database_url is None:
        db = sqlite3.connect(server.data / "economies.sqlite", isolation_level=None)
        db.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            db.execute("ROLLBACK")
            db.close()
        return
    with psycopg.connect(server.database_url) as db:
        db.execute("LOCK TABLE economies_events IN EXCLUSIVE MODE")
        try:
            yield
        finally:
            db.rollback()


def post_all(server: LiveServer, batches: list[dict[str, Any]]) -> list[tuple[int, float, str]]:
    """POST every batch at once, one client each: (status, seconds, Retry-After)."""
    results: list[tuple[int, float, str]] = [(0, 0.0, "")] * len(batches)

    def post(i: int) -> None:
        with httpx.Client(base_url=server.url, timeout=60,
                          headers={"Authorization": f"Bearer {TOKEN}"}) as client:
            started = time.monotonic()
            answer = client.post("/economies", json=batches[i])
            results[i] = (answer.status_code, time.monotonic() - started,
                          answer.headers.get("retry-after", ""))

    threads = [threading.Thread(target=post, args=(i,)) for i in range(len(batches))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


class LockBoundContract:
    backend: str

    def test_a_held_write_lock_never_makes_an_answer_wait_past_the_timeout(
            self, tmp_path: Path, database_url: str | None) -> None:
        server = LiveServer(tmp_path / "data", database_url=database_url,
                            env={"MIAM_ECONOMIES_LOCK_TIMEOUT": str(LOCK_TIMEOUT)})
        server.start()
        try:
            events = generate(CLIENTS * 100, seed=9)[:CLIENTS * 100]
            batches = [{"evenements": events[i * 100:(i + 1) * 100]} for i in range(CLIENTS)]
            before = server.stored_count()
            with write_lock_held(server):
                held = post_all(server, batches)
            assert [status for status, _, _ in held] == [503] * CLIENTS
            assert all(retry == "1" for _, _, retry in held)
            longest = max(seconds for _, seconds, _ in held)
            assert longest <= LOCK_TIMEOUT + MARGIN, held
            assert server.stored_count() == before  # refused: nothing stored
            freed = post_all(server, batches)
            assert [status for status, _, _ in freed] == [200] * CLIENTS
            assert server.stored_count() == before + CLIENTS * 100
        finally:
            server.close()


class TestLockBoundSQLite(LockBoundContract):
    backend = "sqlite"


class TestLockBoundPostgres(LockBoundContract):
    backend = "postgresql"


