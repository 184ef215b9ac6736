"""The bench's ingest sections (issue 22, items 1, 2, 3 and 5): sustained ingest over HTTP,
ours against the bare append and the naive design, interleaved; a burst; the plugin's
requests; and PostgreSQL.

Each section posts to a fresh server in a fresh data directory, so no section inherits
another's store. Within a repeat the three servers take turns, in an order reversed every
other repeat: a machine that gets busier or quieter over the run moves them alike, and
the ratios, read within the run, keep their meaning.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

from bench.servers import (
    BATCH,
    KINDS,
    Posted,
    Server,
    bodies,
    corpus,
    post_all,
    remove_tree,
    serving,
)
from bench.shapes import shapes, small_bare
from tests.conftest import fresh_postgres

SHAPES_EVENTS = 10_000
"""Events of each 500-event shape (new, re-sent, half re-sent) per run: 20 POSTs each."""


def raw_sqlite(events: list[dict[str, Any]], path: Path) -> float:
    """Events/s writing the events' rows in this process with plain ``sqlite3``:
    ``executemany`` of 500 a transaction, WAL + synchronous FULL, the store's table shape:
    no HTTP, no parsing (the in-process limit)."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE stored_events (originator_id TEXT, originator_version INTEGER, "
               "topic TEXT, state BLOB, PRIMARY KEY (originator_id, originator_version))")
    rows = [(uuid.uuid5(uuid.NAMESPACE_URL, f"/economies/{e['id']}").hex, 1, e["type"],
             json.dumps(e, ensure_ascii=False).encode()) for e in events]
    started = time.perf_counter()
    for i in range(0, len(rows), BATCH):
        db.execute("BEGIN")
        db.executemany("INSERT INTO stored_events VALUES (?, ?, ?, ?)", rows[i:i + BATCH])
        db.execute("COMMIT")
    elapsed = time.perf_counter() - started
    db.close()
    return len(rows) / elapsed


def _record(into: dict[str, Any], name: str, posted: Posted) -> None:
    """Add one section's figures to ``into[name]``: lists of runs, latencies pooled."""
    entry = into.setdefault(name, {"rates": [], "until_current": [], "cpu_server_ms": [],
                                   "cpu_descendants_ms": [], "latencies": []})
    figures = posted.figures()
    for key in ("rate", "until_current", "cpu_server_ms", "cpu_descendants_ms"):
        entry["rates" if key == "rate" else key].append(figures[key])
    entry["latencies"] += figures["latencies"]


def _section(kind: str, batches: list[bytes], clients: int, data: Path) -> Posted:
    """One section on a fresh server of ``kind`` in ``data`` (removed afterwards)."""
    with serving(data, kind) as server:
        posted = post_all(server, batches, clients)
    remove_tree(data)
    return posted


def ingest(size: int, burst: int, repeat: int, work: Path,
           timings: dict[str, float]) -> dict[str, Any]:
    """Sustained ingest: per run, the in-process raw ``executemany``, then ``size`` events
    in 500-event POSTs from 1 and 4 clients to each of ours, the bare append and the naive
    design (interleaved); then a ``burst``-event burst from 1 client to ours and the bare
    append (none when ``burst`` is 0). Returns ``{"events", "burst", "batch_kb", "raw":
    [events/s], "runs": {"<kind>-<clients>" or "<kind>-burst": figures}}``; adds each
    server's seconds (start and stop included) to ``timings["ingest: <kind>"]``."""
    events = corpus(size, seed=1)
    batches = bodies(events)
    result: dict[str, Any] = {
        "events": len(events), "burst": burst,
        "batch_kb": round(statistics.mean(map(len, batches)) / 1000), "raw": [], "runs": {}}

    def timed(step: str, data: Path, kind: str, batches: list[bytes], clients: int) -> Posted:
        started = time.perf_counter()
        posted = _section(kind, batches, clients, data)
        timings[step] = timings.get(step, 0.0) + time.perf_counter() - started
        return posted

    for run in range(repeat):
        started = time.perf_counter()
        result["raw"].append(raw_sqlite(events, work / f"raw{run}.sqlite"))
        (work / f"raw{run}.sqlite").unlink()
        timings["ingest: raw"] = timings.get("ingest: raw", 0.0) + time.perf_counter() - started
        order = KINDS if run % 2 == 0 else KINDS[::-1]
        for clients in (1, 4):
            for kind in order:
                posted = timed(f"ingest: {kind}", work / f"ingest-{kind}-{run}", kind,
                               batches, clients)
                _record(result["runs"], f"{kind}-{clients}", posted)
        for kind in (k for k in order if k != "naive" and burst):
            posted = timed("ingest: burst", work / f"burst-{kind}-{run}", kind,
                           batches[:burst // BATCH], 1)
            _record(result["runs"], f"{kind}-burst", posted)
    return result


def requests(repeat: int, work: Path) -> dict[str, list[float]]:
    """The plugin's requests (``bench.shapes``), per run: the 500-event shapes and the
    10-event POSTs on ours, and the 10-event POSTs on the bare append, in an order
    reversed every other run. Returns each shape's POST seconds, pooled over the runs
    (``"small-bare"``: the bare append's)."""
    result: dict[str, list[float]] = {}
    for run in range(repeat):
        for kind in (("ours", "bare") if run % 2 == 0 else ("bare", "ours")):
            data = work / f"requests-{kind}-{run}"
            if kind == "ours":
                for shape, times in shapes(SHAPES_EVENTS, data).items():
                    result.setdefault(shape, []).extend(times)
            else:
                result.setdefault("small-bare", []).extend(small_bare(data))
            remove_tree(data)
    return result


def ingest_postgres(size: int, repeat: int, work: Path) -> dict[str, Any]:
    """Ingest on PostgreSQL (``MIAM_TEST_POSTGRES``'s server): ``serve --workers 1`` and
    ``--workers 4`` with a ``project`` process beside, 4 clients, ``size`` events, a fresh
    database per run. Returns ``{"events", "runs": {"pg-<workers>": figures}}``."""
    batches = bodies(corpus(size, seed=1))
    result: dict[str, Any] = {"events": size, "runs": {}}
    for run in range(repeat):
        for workers in (1, 4) if run % 2 == 0 else (4, 1):
            data = work / f"ingest-pg-{workers}-{run}"
            with fresh_postgres() as url:
                server = Server(data, database_url=url, workers=workers)
                server.start()
                try:
                    posted = post_all(server, batches, 4)
                finally:
                    server.stop()
            _record(result["runs"], f"pg-{workers}", posted)
            remove_tree(data)
    return result
