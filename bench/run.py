"""``make bench``: the service against the design's own limit, in one run (issues 6, 22).

Every figure is measured in this run on this machine, and read as a ratio against a
reference measured beside it:

1. sustained ingest over HTTP (``bench.ingest``): ``--ingest-events`` events (100,000:
   longer than the projection's 1 s deferral) in 500-event POSTs from 1 and 4 clients to a
   real ``miam-economies serve``, to the bare append (``bench.bare``: HTTP, orjson and the
   store's rows in SQLite, WAL, ``synchronous=FULL``, one transaction per POST; no
   validation, no deduplication: the design's own limit) and to the naive design
   (``bench.naive``), interleaved; for each: events/s acknowledged, events/s until the
   bilan shows them all, p50/p99 per POST, and the server's CPU per POST (its process,
   and its descendants apart); beside them the same rows written in this process with
   plain ``sqlite3`` ``executemany`` (no HTTP); then a ``--burst-events`` burst from 1
   client, ours against the bare append;
2. the plugin's requests (``bench.shapes``): a batch re-sent whole or by half against a
   new one, and the 10-event POST, ours against the bare append's; then Claude Code's
   transcripts (``bench.transcripts``): 100,000 reply lines imported by ``releves``, and
   again, against a plain ``json.loads`` pass over the same files;
3. with ``--postgres`` (the default): ingest on PostgreSQL, ``serve --workers 1`` and
   ``--workers 4`` with ``miam-economies project`` beside, 4 clients, in a fresh
   database each run (ADR-0031), against the figures of commit 6e225cd;
4. at each history size (``bench.history``): the store filled, every projection replayed
   in a process of its own (events/s and its peak RSS; at the largest size against the
   raw notification-log read, and ``compare`` of two formulas by day likewise), then
   bilan reads (per client, one day, one demande), classement reads (``par=preset``
   with its verdicts; paired on ``test_id``, 1,000 tasks x 6 presets of MIAM's test
   runs), start-up and peak RSS, ours and the naive design's.

Figures are medians over ``--repeat`` runs (latency percentiles: over every request of
every run); history sizes are read once. Prints the table and each section's seconds,
writes the table as JSON (``--json``, default ``bench/latest.json``) and into
``docs/performance.md`` between its two ``bench:table`` markers (``--readme``; the README
held it before ADR-0121, hence the flag's name).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from bench import report, report_postgres, servers, transcripts
from bench.history import history
from bench.ingest import SHAPES_EVENTS, ingest, ingest_postgres, requests
from bench.servers import BATCH

console = Console(width=130, stderr=True)
ROOT = Path(__file__).resolve().parents[1]


def arguments() -> argparse.Namespace:
    """The command line (``--help``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ingest-events", type=int, default=100_000,
                        help="events per sustained ingest section")
    parser.add_argument("--burst-events", type=int, default=20_000,
                        help="events of the 1-client burst (0: none)")
    parser.add_argument("--sizes", default="10000,100000,1000000",
                        help="history sizes, comma-separated (the largest gets the raw "
                             "log read, the replay's and compare's rows)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of every ingest and request section, and starts of our "
                             "server at each history size")
    parser.add_argument("--requests", type=int, default=200,
                        help="reads of each kind on our server at each size")
    parser.add_argument("--paired-requests", type=int, default=30,
                        help="paired classement reads on our server at each size")
    parser.add_argument("--naive-requests", type=int, default=3,
                        help="reads of each kind at most on the naive server (each scans "
                             "the file; none started after 5 s)")
    parser.add_argument("--json", type=Path, default=ROOT / "bench" / "latest.json")
    parser.add_argument("--readme", type=Path, default=ROOT / "docs" / "performance.md",
                        help="the page whose table is rewritten (default "
                             "docs/performance.md)")
    parser.add_argument("--no-readme", dest="readme", action="store_const", const=None,
                        help="leave docs/performance.md (or --readme's page) as it is")
    parser.add_argument("--postgres", action=argparse.BooleanOptionalAction, default=True,
                        help="also ingest on PostgreSQL with 1 and 4 workers "
                             "(MIAM_TEST_POSTGRES, default the local server's test database)")
    parser.add_argument("--postgres-events", type=int, default=20_000,
                        help="events per PostgreSQL run (6e225cd's reference: 20,000)")
    parser.add_argument("--before", type=Path, default=ROOT / "bench" / "before-23c14db.json",
                        help="an earlier --ours-bin run whose PostgreSQL figures the "
                             "PostgreSQL rows are read against (default: 23c14db's, the "
                             "code before issue 22; absent: commit 6e225cd's fixed "
                             "figures)")
    parser.add_argument("--ours-bin", type=Path, default=None,
                        help="the bin directory of another checkout's venv whose "
                             "miam-economies is measured as ours (the before of a "
                             "before/after; the stored format is the same)")
    return parser.parse_args()


def before(args: argparse.Namespace) -> dict[str, Any] | None:
    """The earlier run the PostgreSQL rows are read against (``--before``), if it exists
    and holds PostgreSQL figures, and this run measures this checkout."""
    if args.ours_bin is not None or args.before is None or not args.before.exists():
        return None
    earlier: dict[str, Any] = json.loads(args.before.read_text())
    return earlier if earlier.get("raw", {}).get("postgres") else None


def commit(checkout: Path = ROOT) -> str:
    """``git rev-parse --short HEAD`` in ``checkout``, and whether its tree differs from it
    (the bench's own outputs aside)."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=checkout, capture_output=True, text=True,
                              check=True).stdout.strip()

    changed = git("status", "--porcelain", "--", ".", ":!docs/performance.md",
                  ":!bench/latest.json")
    return git("rev-parse", "--short", "HEAD") + (" with uncommitted changes" if changed
                                                    else "")


@contextmanager
def section(name: str, timings: dict[str, float]) -> Iterator[None]:
    """Time the block into ``timings[name]`` (seconds)."""
    started = time.perf_counter()
    timings[name] = 0.0  # before the steps a section adds under its name: printed first
    yield
    timings[name] = time.perf_counter() - started


def main() -> None:
    """Run every section, print the table and the sections' seconds, write the JSON and
    ``docs/performance.md``'s table."""
    args = arguments()
    sizes = [int(s) for s in args.sizes.split(",")]
    command = "make bench" if len(sys.argv) == 1 else \
        "python -m bench.run " + shlex.join(sys.argv[1:])
    at_commit = commit()
    if args.ours_bin is not None:  # ours is another checkout's: name both commits
        servers.OURS_BIN = args.ours_bin.resolve()
        at_commit = f"{commit(servers.OURS_BIN.parents[1])} (ours; bench at {at_commit})"
    started = time.perf_counter()
    timings: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="miam-bench-") as tmp, \
            Progress(console=console, transient=True) as bar:
        def progress(label: str, total: int) -> Callable[[int], None]:
            task, done = bar.add_task(label, total=total), [0]

            def advance(n: int) -> None:
                bar.advance(task, n)
                done[0] += n
                if done[0] >= total:  # else it stays on screen to the end of the run
                    bar.remove_task(task)
            return advance

        work = Path(tmp)
        with section("ingest", timings):
            console.print(f"ingest: {args.ingest_events:,} events x 1 and 4 clients x ours, "
                          f"bare, naive; burst {args.burst_events:,}; {args.repeat} runs")
            ingested = ingest(args.ingest_events, args.burst_events, args.repeat, work,
                              timings)
        with section("requests", timings):
            console.print(f"requests: {SHAPES_EVENTS:,}-event shapes, 10-event POSTs; "
                          f"{args.repeat} runs")
            shaped = requests(args.repeat, work)
        with section("transcripts", timings):
            console.print(f"transcripts: {transcripts.REPLY_LINES:,} reply lines imported "
                          f"by releves, against json.loads; {args.repeat} runs")
            imported = transcripts.transcripts(work, args.repeat)
        postgres = None
        if args.postgres:
            with section("postgres", timings):
                console.print(f"PostgreSQL: {args.postgres_events:,} events x 1 and 4 "
                              f"workers; {args.repeat} runs")
                postgres = ingest_postgres(args.postgres_events, args.repeat, work)
        console.print(f"history sizes {sizes}")
        histories = history(sizes, args.repeat, args.requests, args.paired_requests,
                            args.naive_requests, work, progress, timings)
    seconds = time.perf_counter() - started
    rows = (report.ingest_rows(ingested) + report.request_rows(shaped)
            + transcripts.rows(imported)
            + report.history_rows(histories)
            + (report_postgres.postgres_rows(postgres, before(args))
               if postgres is not None else []))
    date = datetime.now(UTC)
    heading = (f"Measured {date:%Y-%m-%d} with `{command}` ({seconds:.0f} s) at commit "
               f"{at_commit}, medians of {args.repeat} runs (history sizes: one pass), on a "
               f"{os.cpu_count()}-core "
               f"machine ({ingested['batch_kb']} KB per {BATCH}-event POST):")
    table = Table(title=heading)
    for column in report.COLUMNS:
        table.add_column(column, justify="left" if column == "measure" else "right")
    for row in rows:
        table.add_row(*row)
    Console(width=180).print(table)
    args.json.write_text(json.dumps({
        "date": date.isoformat(timespec="seconds"), "command": command,
        "commit": at_commit, "seconds": round(seconds),
        "sections": {name: round(s, 1) for name, s in timings.items()},
        "table": [dict(zip(report.COLUMNS, row, strict=True)) for row in rows],
        "raw": {"ingest": ingested, "requests": shaped, "transcripts": imported,
                "history": histories,
                "postgres": postgres},
    }, indent=1) + "\n")
    if args.readme is not None:
        report.write_readme(args.readme, report.markdown(rows, heading))
    for name, spent in timings.items():
        console.print(f"{name:>20}: {spent:6.0f} s")
    console.print(f"{'total':>20}: {seconds:6.0f} s; written {args.json}"
                  + (f" and {args.readme}" if args.readme else ""))


if __name__ == "__main__":
    main()
