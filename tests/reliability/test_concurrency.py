"""Concurrency: many clients, identical batches at once, two server processes on one file,
and on PostgreSQL four uvicorn workers appending at once beside two projection runners.

Issue 5: Σ recus over all responses = distinct ids; each id stored once; never a 500;
"database is locked" is a retry inside the server or a 503 the plugin retries, never a 200
for an unstored event. Issue 7: the same with 4 workers on PostgreSQL, and the bilan equals
an independent recomputation (``tests.corpus.expected_bilan``) even with two runners.
"""

from __future__ import annotations

import random
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from tests.conftest import LiveServer
from tests.corpus import expected_bilan, generate


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
        assert total == len(sent) == first.stored_count()
        one, other = first.bilan(), second.bilan()
        assert one["economies"] == other["economies"]
        assert one["conservation"]["stockes"] == one["conservation"]["comptes"] == len(sent)
    finally:
        for live in (first, second):
            live.stop()
            live.client.close()


class ConcurrencyContract:
    """Concurrent clients against one server, whatever the backend (one subclass each)."""

    def test_eight_clients_with_overlapping_batches_store_each_id_once(
            self, server: LiveServer) -> None:
        pool = generate(3_000, seed=61)
        total, sent, statuses = run_clients([server], pool, clients=8, batches_each=12)
        assert 500 not in statuses
        assert total == len(sent) == server.stored_count()
        bilan = server.bilan()
        assert bilan["conservation"]["stockes"] == bilan["conservation"]["comptes"] == len(sent)


    def test_ten_identical_batches_at_once_store_it_once(
            self, server: LiveServer) -> None:
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
        assert server.stored_count() == len(batch)


class TestConcurrencySQLite(ConcurrencyContract):
    """On SQLite: one process, its appends serialised by a lock and SQLite's."""

    backend = "sqlite"


class TestConcurrencyPostgres(ConcurrencyContract):
    """On PostgreSQL: ``serve`` appends, ``project`` folds."""

    backend = "postgresql"

    def test_four_workers_and_eight_clients_store_each_id_once_and_count_it_once(
            self, tmp_path: Path, database_url: str) -> None:
        live = LiveServer(tmp_path / "data", database_url=database_url, workers=4,
                          env={"MIAM_ECONOMIES_TZ": "UTC"})
        live.start()
        # A second runner started by mistake: the tracking compare-and-set arbitrates.
        script = Path(sys.executable).with_name("miam-economies")
        second = subprocess.Popen([str(script), "project", "--data", str(live.data)],
                                  env=live.env, stdout=live.log, stderr=subprocess.STDOUT)
        try:
            pool = generate(4_000, seed=71)
            total, sent, statuses = run_clients([live], pool, clients=8, batches_each=12)
            assert 500 not in statuses
            assert total == len(sent) == live.stored_count()
            bilan = live.bilan()
            conservation = bilan["conservation"]
            assert conservation["stockes"] == conservation["comptes"] == len(sent)
            drawn = [e for e in pool if e["id"] in sent]
            assert {k: bilan[k] for k in ("economies", "total")} == expected_bilan(drawn)
            assert second.poll() is None and live.projector is not None \
                and live.projector.poll() is None  # both runners still following
        finally:
            second.terminate()
            second.wait(timeout=20)
            live.close()
