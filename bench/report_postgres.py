"""The bench's PostgreSQL rows: ingest over HTTP with 1 and 4 workers, read against an
earlier checkout's run of this bench on this machine (``--before``: a JSON that
``python -m bench.run --ours-bin`` wrote), or, without one, the figures of commit 6e225cd
fixed here.

Issue 22's targets (item 5) are gains over 23c14db, the code before it: a row states them
only when its reference is that commit's run (``bench/before-23c14db.json``); against any
other the ratio is a before and after, with no target (issue 35, item 3).
"""

from __future__ import annotations

from typing import Any

from bench.report import Row, median, ms_pair
from bench.servers import BATCH

PG_TODAY = {1: (7_567, 6_793, "255.2 / 376.8"), 4: (7_997, 6_373, "209.6 / 395.3")}
"""PostgreSQL at commit 6e225cd (README, ``make bench`` of 2026-12-01; 20,000 events, 4
clients), by workers: events/s acknowledged, until the bilan shows them, POST p50 / p99."""

PG_TARGET = {1: ">= 1.7", 4: ">= 1.3"}
"""Issue 22, item 5: ratios to the code before it (``TARGETS_AGAINST``)."""

TARGETS_AGAINST = "23c14db"
"""The commit whose run ``PG_TARGET``'s ratios are read against."""


def postgres_rows(postgres: dict[str, Any],
                  before: dict[str, Any] | None = None) -> list[Row]:
    """PostgreSQL with 1 and 4 workers, against ``before`` when given (a JSON that
    ``python -m bench.run --ours-bin`` wrote for an earlier commit on this machine, with
    this bench: its ``commit``, ``date`` and ``raw.postgres``), else ``PG_TODAY``. The
    ingest rows' target is ``PG_TARGET``'s against ``TARGETS_AGAINST``'s run only, else
    "stated" (a before and after, no target)."""
    out = []
    for workers in (1, 4):
        entry = postgres["runs"][f"pg-{workers}"]
        rate, current = median(entry["rates"]), median(entry["until_current"])
        target = "stated"
        if before is not None:
            if before["commit"].startswith(TARGETS_AGAINST):
                target = PG_TARGET[workers]
            then = before["raw"]["postgres"]["runs"][f"pg-{workers}"]
            name = f"{before['commit'].split()[0]} ({before['date'][:10]})"
            today_rate = round(median(then["rates"]))
            today_current = round(median(then["until_current"]))
            today_ms = ms_pair(then["latencies"]).removesuffix(" ms")
        else:
            name = "6e225cd"
            today_rate, today_current, today_ms = PG_TODAY[workers]
        out += [[f"ingest over HTTP on PostgreSQL, {workers} worker(s), 4 clients, "
                 f"{postgres['events']:,} events", f"{rate:,.0f} ev/s",
                 f"{name}: {today_rate:,}", f"{rate / today_rate:.2f}", target],
                ["  ... until the bilan shows them all (project process)",
                 f"{current:,.0f} ev/s", f"{name}: {today_current:,}",
                 f"{current / today_current:.2f}", ""],
                [f"one {BATCH}-event POST on PostgreSQL, {workers} worker(s): p50 / p99",
                 ms_pair(entry["latencies"]), f"{name}: {today_ms} ms", "", ""]]
        # What bounds one worker: its CPU per POST times the POSTs a second is the cores
        # its Python keeps busy (1.0: saturated; the projector and the database share the
        # rest of the machine).
        cpu = median(entry["cpu_server_ms"]) + median(entry["cpu_descendants_ms"])
        out.append([f"  ... server CPU per {BATCH}-event POST (serve and its workers)",
                    f"{cpu:.1f} ms", f"{cpu / 1000 * rate / BATCH:.2f} cores busy", "",
                    "stated"])
    return out
