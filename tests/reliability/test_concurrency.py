"""Concurrency: many clients, identical batches at once, two server processes on one file.

Issue 5: Σ recus over all responses = distinct ids; each id stored once; never a 500;
"database is locked" is a retry inside the server or a 503 the plugin retries, never a 200
for an unstored event.
"""

from __future__ import annotations

import random
import sqlite3
import threading
from pathlib import Path
from typing import Any

from tests.conftest import LiveServer
from tests.corpus import generate


def stored_count(data: Path) -> int:
    with sqlite3.connect(data / "economies.sqlite") as db:
        return int(db.execute("SELECT count(*) FROM stored_events").fetchone()[0])


def post_until_accepted(server: LiveServer, batch: list[dict[str, Any]],
                        statuses: list[int]) -> int:
    """Post like the plugin: a 503 keeps the batch and sends it again. Returns recus."""
    while True:
        response = server.post({"evenements": batch})
        statuses.append(response.status_code)
        if response.status_code != 503:
            assert response.status_code == 200, response.text
            return int(response.json()["recus"])


def run_clients(servers: list[LiveServer], pool: list[dict[str, Any]], clients: int,
                batches_each: int) -> tuple[int, set[str], list[int]]:
    recus: list[int] = []
    sent: set[str] = set()
    statuses: list[int] = []
    lock = threading.Lock()

    def client(n: int) -> None:
        rng = random.Random(n)
        for _ in range(batches_each):
            batch = rng.sample(pool, rng.randint(1, 200))  # overlapping draws
            got = post_until_accepted(servers[n % len(servers)], batch, statuses)
            with lock:
                recus.append(got)
                sent.update(e["id"] for e in batch)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(recus), sent, statuses


def test_eight_clients_with_overlapping_batches_store_each_id_once(
        server: LiveServer) -> None:
    pool = generate(3_000, seed=61)
    total, sent, statuses = run_clients([server], pool, clients=8, batches_each=12)
    assert 500 not in statuses
    assert total == len(sent) == stored_count(server.data)
    bilan = server.bilan()
    assert bilan["conservation"]["stockes"] == bilan["conservation"]["comptes"] == len(sent)


def test_ten_identical_batches_at_once_store_it_once(server: LiveServer) -> None:
    batch = generate(400, seed=62)[:400]
    barrier = threading.Barrier(10)
    answers: list[dict[str, Any]] = []

    def fire() -> None:
        barrier.wait()
        response = server.post({"evenements": batch})
        assert response.status_code == 200, response.text
        answers.append(response.json())

    threads = [threading.Thread(target=fire) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(a["recus"] for a in answers) == len(batch)
    assert sum(a["doublons"] for a in answers) == 9 * len(batch)
    assert stored_count(server.data) == len(batch)


def test_two_server_processes_on_one_store_keep_every_guarantee(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = LiveServer(data, env={"MIAM_ECONOMIES_TZ": "UTC"})
    first.start()
    second = LiveServer(data, env={"MIAM_ECONOMIES_TZ": "UTC"})
    second.start()
    try:
        pool = generate(3_000, seed=63)
        total, sent, statuses = run_clients([first, second], pool, clients=8,
                                            batches_each=10)
        assert 500 not in statuses
        assert total == len(sent) == stored_count(data)
        one, other = first.bilan(), second.bilan()
        assert one["economies"] == other["economies"]
        assert one["conservation"]["stockes"] == one["conservation"]["comptes"] == len(sent)
    finally:
        for live in (first, second):
            live.stop()
            live.client.close()
