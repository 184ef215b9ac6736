"""Crash safety: kill -9 while clients post, restart, and nothing acknowledged is lost.

Issue 5: every event whose batch got a 200 is in the store after restart; no batch is
ever half stored; the projections after restart equal a from-scratch fold of the store;
the tracking position never skips or repeats an event (conservation). Rounds:
``MIAM_KILL_ROUNDS`` (20 in ``make test``, 40 in ``make soak``).
"""

from __future__ import annotations

import os
import random
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from miam_economies.api.service.replay import compare
from miam_economies.api.service.settings import Settings
from miam_economies.domain.events import stream_id
from tests.conftest import TOKEN, LiveServer
from tests.corpus import batches, generate

ROUNDS = int(os.environ.get("MIAM_KILL_ROUNDS", "20"))
SIX = ("delegations", "evites", "pilotage", "corrections", "net", "taux_reprise")


def stored_streams(data: Path) -> set[str]:
    with sqlite3.connect(data / "economies.sqlite") as db:
        return {row[0] for row in db.execute("SELECT originator_id FROM stored_events")}


def test_kill_9_while_posting_loses_no_acknowledged_event(tmp_path: Path) -> None:
    rng = random.Random(ROUNDS)
    server = LiveServer(tmp_path / "data", env={"MIAM_ECONOMIES_TZ": "UTC"})
    pending = batches(generate(ROUNDS * 2_000, seed=51), rng, largest=300)
    acknowledged: list[list[dict[str, Any]]] = []
    unanswered: list[list[dict[str, Any]]] = []
    statuses: list[int] = []
    for _ in range(ROUNDS):
        server.start()

        def post() -> None:
            while pending:
                batch = pending.pop(0)
                try:
                    response = server.post({"evenements": batch})
                except httpx.TransportError:  # killed while this request was in flight
                    unanswered.append(batch)
                    return
                statuses.append(response.status_code)
                (acknowledged if response.status_code == 200 else unanswered).append(batch)

        poster = threading.Thread(target=post)
        poster.start()
        time.sleep(rng.uniform(0.05, 0.6))  # kill at a random moment of the load
        server.stop(kill=True)
        poster.join()
    server.start()
    try:
        stored_before_resend = stored_streams(server.data)
        for batch in unanswered:  # a batch is stored whole or not at all
            ids = {stream_id(e["id"]).hex for e in batch}
            assert ids <= stored_before_resend or not ids & stored_before_resend
        # The plugin re-sends what got no 200: recus are exactly the events not stored.
        for batch in unanswered:
            ids = {stream_id(e["id"]).hex for e in batch}
            answer = server.post({"evenements": batch}).json()
            assert answer["recus"] == len(ids - stored_before_resend)
            assert answer["doublons"] == len(batch) - answer["recus"]
            stored_before_resend |= ids
        bilan = server.bilan()
    finally:
        server.stop()
        server.client.close()

    assert 500 not in statuses and len(acknowledged) >= ROUNDS
    assert unanswered, "no kill ever cut a request: the loop proved nothing about crashes"
    streams = stored_streams(server.data)
    for batch in acknowledged:  # every 200 is durable
        assert {stream_id(e["id"]).hex for e in batch} <= streams
    assert streams == stored_before_resend
    print(f"kill -9 rounds {ROUNDS}: requests {len(statuses) + len(unanswered)}, "
          f"acknowledged batches {len(acknowledged)}, cut by a kill {len(unanswered)}, "
          f"events acknowledged {sum(map(len, acknowledged))}, streams stored {len(streams)}")
    conservation = bilan["conservation"]
    assert conservation["stockes"] == conservation["comptes"] == len(streams)
    dry = compare(Settings(data=server.data, token=TOKEN), ["v1"])["groupes"]
    for client, figures in bilan["economies"].items():
        assert {k: figures[k] for k in SIX} == {k: dry[client][client]["v1"][k] for k in SIX}


def test_the_store_syncs_every_commit(tmp_path: Path) -> None:
    from miam_economies.api.service.bootstrap import open_services

    with open_services(Settings(data=tmp_path / "data", token=TOKEN, fuseau="UTC"),
                       run_projections=False) as services:
        datastore = services.store.recorder.datastore  # type: ignore[attr-defined]
        with datastore.transaction(commit=False) as cursor:
            cursor.execute("PRAGMA journal_mode")
            journal = cursor.fetchone()[0]
            cursor.execute("PRAGMA synchronous")
            synchronous = cursor.fetchone()[0]
    assert (journal, synchronous) == ("wal", 2)  # 2 is FULL: ADR-0010
