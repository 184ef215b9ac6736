"""Ingest benchmark: 500-event POSTs to a real server against raw sqlite3 in the same run.

Run with ``make bench`` (or ``.venv/bin/python -m bench.ingest [--events N]``). Prints one
table: the server's ingest rate and the p50/p99 latency of one 500-event POST (1 client),
beside the physical-limit reference, plain ``sqlite3`` ``executemany`` of the same payloads
in batches of 500 with the store's durability settings (WAL, synchronous FULL). Figures are
medians over ``--repeat`` runs; read the ratio, the machine is noisy. Issue 6 extends this.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from rich.console import Console
from rich.table import Table

from tests.conftest import LiveServer
from tests.corpus import generate


def raw_sqlite(events: list[dict], path: Path) -> float:
    """Events/s writing ``events`` with plain sqlite3, 500 a transaction, WAL + FULL."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE e (id TEXT, v INTEGER, topic TEXT, state BLOB, "
               "PRIMARY KEY (id, v))")
    rows = [(uuid.uuid5(uuid.NAMESPACE_URL, e["id"]).hex, 1, e["type"],
             json.dumps(e).encode()) for e in events]
    start = time.perf_counter()
    for i in range(0, len(rows), 500):
        db.execute("BEGIN")
        db.executemany("INSERT INTO e VALUES (?, ?, ?, ?)", rows[i:i + 500])
        db.execute("COMMIT")
    elapsed = time.perf_counter() - start
    db.close()
    return len(rows) / elapsed


def server_ingest(events: list[dict], data: Path) -> tuple[float, list[float]]:
    """Events/s over HTTP through a real ``miam-economies serve``, and each POST's seconds."""
    server = LiveServer(data)
    server.start()
    try:
        bodies = [json.dumps({"evenements": events[i:i + 500]}).encode()
                  for i in range(0, len(events), 500)]
        latencies = []
        start = time.perf_counter()
        for body in bodies:
            t0 = time.perf_counter()
            response = server.client.post("/economies", content=body)
            latencies.append(time.perf_counter() - t0)
            assert response.status_code == 200 and response.json()["doublons"] == 0
        elapsed = time.perf_counter() - start
        return len(events) / elapsed, latencies
    finally:
        server.stop()
        server.client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    events = generate(args.events, seed=1)[: args.events]
    raw, ours, p50, p99 = [], [], [], []
    for run in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            raw.append(raw_sqlite(events, Path(tmp) / "raw.sqlite"))
            rate, latencies = server_ingest(events, Path(tmp) / f"data{run}")
            ours.append(rate)
            q = statistics.quantiles(latencies, n=100)
            p50.append(q[49] * 1000)
            p99.append(q[98] * 1000)
    size = len(json.dumps({"evenements": events[:500]}).encode())
    table = Table(title=f"ingest, {len(events):,} events, 500-event batches (~{size // 1000} KB),"
                        f" median of {args.repeat}")
    table.add_column("path")
    for column in ("events/s", "vs raw sqlite3", "POST p50 ms", "POST p99 ms"):
        table.add_column(column, justify="right")
    raw_m, ours_m = statistics.median(raw), statistics.median(ours)
    table.add_row("raw sqlite3 executemany (reference)", f"{raw_m:,.0f}", "1.00", "", "")
    table.add_row("POST /economies, 1 client", f"{ours_m:,.0f}", f"{ours_m / raw_m:.2f}",
                  f"{statistics.median(p50):.1f}", f"{statistics.median(p99):.1f}")
    Console(width=120).print(table)


if __name__ == "__main__":
    main()
