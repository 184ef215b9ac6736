"""``make bench``: the service against the physical limit and the naive design, in one run.

Every figure is measured in this run on this machine, and read as a ratio against a
reference measured beside it (issue 6):

1. ingest over HTTP: a real ``miam-economies serve``, 1 and 4 concurrent clients posting
   500-event batches of a generated corpus: events/s, p50/p99 of one POST;
2. the physical limit: the same rows written with plain ``sqlite3`` ``executemany``, 500 a
   transaction, WAL + synchronous FULL (the store's durability);
3. the naive design (``bench.naive``): ``economies.jsonl`` + a set of ids, bilan by scan,
   on the same Starlette/uvicorn: ingest, bilan reads and start-up, ours / naive;
4. bilan read latency (per client, one day, one demande) at each history size, and the
   classement's (``par=preset``, with its verdicts; and paired on ``test_id``, 1,000
   tasks x 6 presets of MIAM's test runs), which the naive design does not have;
5. replay of every projection at the largest size, against the raw notification-log read;
6. the server's peak RSS and its time to a first 200 at each size;
7. with ``--postgres`` (the default): ingest over HTTP on PostgreSQL, ``serve --workers 1``
   and ``--workers 4`` with ``miam-economies project`` beside, 4 clients, in a fresh
   database each run (ADR-0031), beside SQLite's figures of section 1.

Figures are medians over ``--repeat`` runs (latency percentiles: over every request of
every run). Prints one table and writes it as JSON (``--json``, default
``bench/latest.json``). ``python -m bench.run --help`` for the sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from bench.servers import BATCH, Server, bodies, client_for, corpus, post_all, serving
from bench.shapes import SMALL, shapes
from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.replay import replay
from miam_economies.api.service.settings import Settings
from miam_economies.domain.acceptance import accept_batch
from tests.conftest import TOKEN, fresh_postgres
from tests.corpus import journal_lines, with_fields

console = Console(width=130, stderr=True)


# --- 1-3. Ingest --------------------------------------------------------------------------


def raw_sqlite(events: list[dict[str, Any]], path: Path) -> float:
    """Events/s writing the events' rows with plain ``sqlite3``: ``executemany`` of 500 a
    transaction, WAL + synchronous FULL, the store's table shape (the physical limit)."""
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


def ingest(size: int, repeat: int, work: Path) -> dict[str, Any]:
    """Section 1-3: the raw reference, then ours and the naive one with 1 and 4 clients."""
    events = corpus(size, seed=1)
    batches = bodies(events)
    result: dict[str, Any] = {
        "events": len(events), "batch_kb": round(statistics.mean(map(len, batches)) / 1000),
        "raw": [], "runs": {}}
    for run in range(repeat):
        result["raw"].append(raw_sqlite(events, work / f"raw{run}.sqlite"))
        for naive in (False, True):
            for clients in (1, 4):
                name = f"{'naive' if naive else 'ours'}-{clients}"
                data = work / f"ingest-{name}-{run}"
                with serving(data, naive) as server:
                    rate, latencies, current = post_all(server, batches, clients)
                entry = result["runs"].setdefault(
                    name, {"rates": [], "latencies": [], "until_current": []})
                entry["rates"].append(rate)
                entry["until_current"].append(current)
                entry["latencies"] += latencies
                shutil.rmtree(data)
        for shape, times in shapes(size // 2, work / f"shapes-{run}").items():
            result.setdefault("shapes", {}).setdefault(shape, []).extend(times)
        shutil.rmtree(work / f"shapes-{run}")
    return result


def ingest_postgres(size: int, repeat: int, work: Path) -> dict[str, Any]:
    """Section 7: ingest on PostgreSQL with 1 and 4 workers, 4 clients, a fresh database
    per run (``MIAM_TEST_POSTGRES``'s server)."""
    batches = bodies(corpus(size, seed=1))
    result: dict[str, Any] = {"runs": {}}
    for run in range(repeat):
        for workers in (1, 4):
            data = work / f"ingest-pg-{workers}-{run}"
            with fresh_postgres() as url:
                server = Server(data, database_url=url, workers=workers)
                server.start()
                try:
                    rate, latencies, current = post_all(server, batches, 4)
                finally:
                    server.stop()
            entry = result["runs"].setdefault(
                f"pg-{workers}", {"rates": [], "latencies": [], "until_current": []})
            entry["rates"].append(rate)
            entry["until_current"].append(current)
            entry["latencies"] += latencies
            shutil.rmtree(data)
    return result


# --- 4-6. History sizes: reads, start-up, memory, replay -----------------------------------


def fill(size: int, ours: Path, naive: Path, progress: Callable[[int], None]) -> dict[str, str]:
    """Store ``size`` events in our data directory (store, projection, MIAM's journal) and
    in the naive one's file; return a day and a demande to read."""
    events = corpus(size, seed=size)
    ours.mkdir(parents=True)
    (ours / "delegations.jsonl").write_text("\n".join(with_test_runs(journal_lines(events)))
                                            + "\n")
    settings = Settings(data=ours, token=TOKEN, fuseau="UTC")
    recu_le = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    naive.mkdir(parents=True)
    with open_services(settings, run_projections=False) as services, \
            (naive / "economies.jsonl").open("w", encoding="utf-8") as jsonl:
        for i in range(0, len(events), BATCH):
            batch = events[i:i + BATCH]
            services.store.append(accept_batch({"evenements": batch}))
            jsonl.writelines(json.dumps({**e, "recu_le": recu_le}, ensure_ascii=False) + "\n"
                             for e in batch)
            progress(len(batch))
        services.runner.catch_up()
    demande = next(e["demande_id"] for e in events if e["type"] == "delegation")
    return {"day": events[len(events) // 2]["date"][:10], "demande": demande}


TEST_PRESETS, TEST_TASKS = 6, 1_000
"""MIAM's test runs in the journal: the first 6,000 demandes are 1,000 tasks run under 6
presets of their own, so the paired classement read joins 6,000 demandes (ADR-0081)."""


def with_test_runs(lines: list[str]) -> list[str]:
    """The journal with its first ``TEST_PRESETS * TEST_TASKS`` demandes' lines given a
    test preset and a ``test_id``."""
    def test_run(k: int) -> dict[str, str]:
        if k >= TEST_PRESETS * TEST_TASKS:
            return {}
        return {"preset": f"test-{k % TEST_PRESETS}", "test_id": f"t{k // TEST_PRESETS:04d}"}

    return with_fields(lines, test_run)


def reads(server: Server, target: dict[str, str], requests: int) -> dict[str, list[float]]:
    """Seconds of ``requests`` sequential reads of each kind (after 3 warm-up reads)."""
    kinds = {
        "client": ("/economies/bilan", {}),
        "jour": ("/economies/bilan", {"par": "jour", "depuis": target["day"],
                                      "jusqu_au": target["day"]}),
        "demande": (f"/economies/demandes/{target['demande']}", {}),
    }
    if server.naive:
        kinds["jour"] = ("/economies/bilan", {"depuis": target["day"]})
    else:  # the naive design has no classement: ours is read against its own bilan
        kinds["classement"] = ("/economies/classement", {"par": "preset"})
        kinds["paired"] = ("/economies/classement", {"par": "preset", "apparier": "test_id"})
    out: dict[str, list[float]] = {}
    with client_for(server) as http:
        for kind, (path, params) in kinds.items():
            for _ in range(3):
                http.get(path, params=params).raise_for_status()
            times = []
            for _ in range(requests):
                t0 = time.perf_counter()
                http.get(path, params=params).raise_for_status()
                times.append(time.perf_counter() - t0)
            out[kind] = times
    return out


def raw_log_read(data: Path) -> float:
    """Events/s reading the whole notification log through the recorder, 500 a page (the
    library's ``select_notifications``: the replay's own source)."""
    with open_services(Settings(data=data, token=TOKEN), run_projections=False) as services:
        recorder = services.store.recorder
        started, position, read = time.perf_counter(), 0, 0
        while page := recorder.select_notifications(start=position + 1, limit=BATCH):
            read += len(page)
            position = page[-1].id
        return read / (time.perf_counter() - started)


def replay_rate(data: Path, run: int) -> float:
    """Events/s building every projection (clients, days, models, demandes, journal
    groups) from the store under ``v1``, from scratch: each run in a new zone
    (``Etc/GMT-<run+1>``), so a new projection beside the one that serves."""
    settings = Settings(data=data, token=TOKEN)
    started = time.perf_counter()
    result = replay(settings, "v1", fuseau=f"Etc/GMT-{run + 1}")
    return int(result["evenements"]) / (time.perf_counter() - started)


def history(sizes: list[int], repeat: int, requests: int, naive_requests: int,
            work: Path) -> dict[str, Any]:
    """Sections 3-6 at each history size; replay at the largest."""
    result: dict[str, Any] = {}
    for size in sizes:
        ours, naive = work / f"ours-{size}", work / f"naive-{size}"
        with Progress(console=console, transient=True) as bar:
            task = bar.add_task(f"storing {size:,} events", total=size)
            target = fill(size, ours, naive, lambda n: bar.advance(task, n))  # noqa: B023
        entry: dict[str, Any] = {"startup": {"ours": [], "naive": []},
                                 "rss_mb": {"ours": [], "naive": []},
                                 "reads": {"ours": {}, "naive": {}}}
        for run in range(repeat):
            for kind, data, n in (("ours", ours, requests), ("naive", naive, naive_requests)):
                with serving(data, naive=kind == "naive") as server:
                    entry["startup"][kind].append(server.startup)
                    if run == 0 or kind == "ours":
                        for read, times in reads(server, target, n).items():
                            entry["reads"][kind].setdefault(read, []).extend(times)
                    entry["rss_mb"][kind].append(server.peak_rss_mb())
        if size == sizes[-1]:
            entry["raw_log_read"] = [raw_log_read(ours) for _ in range(repeat)]
            entry["replay"] = [replay_rate(ours, run) for run in range(repeat)]
        result[str(size)] = entry
        shutil.rmtree(naive)
        shutil.rmtree(ours)
    return result


# --- Report -------------------------------------------------------------------------------


def median(values: list[float]) -> float:
    """The median (statistics.median), for lists of runs."""
    return statistics.median(values)


def percentile(values: list[float], p: int) -> float:
    """The ``p``-th percentile of ``values`` (inclusive method), in the values' unit."""
    return statistics.quantiles(values, n=100, method="inclusive")[p - 1]


def postgres_rows(ingested: dict[str, Any], postgres: dict[str, Any]) -> list[list[str]]:
    """Section 7's rows, against SQLite's 4-client figure of the same run."""
    sqlite = median(ingested["runs"]["ours-4"]["rates"])
    out = []
    for workers in (1, 4):
        entry = postgres["runs"][f"pg-{workers}"]
        rate = median(entry["rates"])
        out.append([f"ingest over HTTP on PostgreSQL, {workers} worker(s), 4 clients",
                    f"{rate:,.0f} ev/s", f"{sqlite:,.0f} SQLite", f"{rate / sqlite:.2f}", ""])
        current = median(entry["until_current"])
        out.append(["  ... until the bilan shows them all (project process)",
                    f"{current:,.0f} ev/s", f"{sqlite:,.0f} SQLite",
                    f"{current / sqlite:.2f}", ""])
        p50, p99 = percentile(entry["latencies"], 50), percentile(entry["latencies"], 99)
        out.append([f"one {BATCH}-event POST on PostgreSQL, {workers} worker(s): p50 / p99",
                    f"{p50 * 1000:.1f} / {p99 * 1000:.1f} ms", "", "", ""])
    return out


def shape_rows(times: dict[str, list[float]]) -> list[list[str]]:
    """The rows of the plugin's real requests (``bench.shapes``): a re-sent batch against
    a new one, and the 10-event POST."""
    new = percentile(times["new"], 50)
    out = []
    for shape, label in (("doublons", "every event re-sent"),
                         ("half", "half re-sent, half new")):
        p50 = percentile(times[shape], 50)
        out.append([f"one {BATCH}-event POST, {label}: p50", f"{p50 * 1000:.1f} ms",
                    f"new {new * 1000:.1f} ms", f"{p50 / new:.2f}", "<= 1"])
    small = times["small"]
    out.append([f"one {SMALL}-event POST, projection folding each: p50 / p99",
                f"{percentile(small, 50) * 1000:.2f} / {percentile(small, 99) * 1000:.2f} ms",
                "", "", "p50 <= 2, p99 <= 10"])
    return out


def rows(ingested: dict[str, Any], histories: dict[str, Any]) -> list[list[str]]:
    """The table: [measure, value, reference, ratio, target]."""
    out: list[list[str]] = []
    raw = median(ingested["raw"])
    out.append(["ingest: raw sqlite3 executemany (physical limit)", f"{raw:,.0f} ev/s", "",
                "1.00", ""])
    for clients in (1, 4):
        ours = ingested["runs"][f"ours-{clients}"]
        naive = ingested["runs"][f"naive-{clients}"]
        rate, naive_rate = median(ours["rates"]), median(naive["rates"])
        out.append([f"ingest over HTTP, {clients} client(s): ours", f"{rate:,.0f} ev/s",
                    f"{raw:,.0f} raw", f"{rate / raw:.2f}", ">= 0.5"])
        current = median(ours["until_current"])
        out.append(["  ... until the bilan shows them all (projection included)",
                     f"{current:,.0f} ev/s", f"{raw:,.0f} raw", f"{current / raw:.2f}", ""])
        out.append([f"ingest over HTTP, {clients} client(s): ours / naive", "",
                    f"{naive_rate:,.0f} naive", f"{rate / naive_rate:.2f}", "> 1"])
        p50, p99 = percentile(ours["latencies"], 50), percentile(ours["latencies"], 99)
        target = "p50 <= 25, p99 <= 60" if clients == 4 else ""
        out.append([f"one {BATCH}-event POST, {clients} client(s): p50 / p99",
                    f"{p50 * 1000:.1f} / {p99 * 1000:.1f} ms",
                    f"naive {percentile(naive['latencies'], 50) * 1000:.1f} / "
                    f"{percentile(naive['latencies'], 99) * 1000:.1f} ms", "", target])
    out += shape_rows(ingested["shapes"])
    sizes = list(histories)
    smallest, largest = sizes[0], sizes[-1]
    for read in ("client", "jour", "demande"):
        for size in sizes:
            ours = histories[size]["reads"]["ours"][read]
            naive = histories[size]["reads"]["naive"][read]
            p50, naive_p50 = percentile(ours, 50), percentile(naive, 50)
            out.append([f"bilan read ({read}) at {int(size):,} events: p50 / p99",
                        f"{p50 * 1000:.2f} / {percentile(ours, 99) * 1000:.2f} ms",
                        f"naive {naive_p50 * 1000:,.1f} ms",
                        f"naive / ours {naive_p50 / p50:,.0f}x",
                        "<= 5 ms" if size == largest else ""])
        ratio = (percentile(histories[largest]["reads"]["ours"][read], 50)
                 / percentile(histories[smallest]["reads"]["ours"][read], 50))
        out.append([f"bilan read ({read}): p50 {int(largest):,} / {int(smallest):,}", "", "",
                    f"{ratio:.2f}", "<= 1.5"])
    for size in sizes:
        ours = histories[size]["reads"]["ours"]
        p50, jour = percentile(ours["classement"], 50), percentile(ours["jour"], 50)
        out.append([f"classement read (par=preset, verdicts) at {int(size):,} events: "
                    "p50 / p99",
                    f"{p50 * 1000:.2f} / {percentile(ours['classement'], 99) * 1000:.2f} ms",
                    f"bilan par jour {jour * 1000:.2f} ms", f"{p50 / jour:.2f}",
                    "<= 5 ms" if size == largest else ""])
    for size in sizes:
        ours = histories[size]["reads"]["ours"]
        paired, ranked = percentile(ours["paired"], 50), percentile(ours["classement"], 50)
        out.append([f"paired classement read (apparier=test_id, {TEST_TASKS:,} tasks x "
                    f"{TEST_PRESETS} presets) at {int(size):,} events: p50 / p99",
                    f"{paired * 1000:.2f} / {percentile(ours['paired'], 99) * 1000:.2f} ms",
                    f"classement {ranked * 1000:.2f} ms", f"{paired / ranked:.2f}", "stated"])
    top = histories[largest]
    raw_read, rate = median(top["raw_log_read"]), median(top["replay"])
    out.append([f"replay, every projection, {int(largest):,} events", f"{rate:,.0f} ev/s",
                f"{raw_read:,.0f} raw log read", f"{rate / raw_read:.2f}",
                ">= 100,000 and >= 0.5"])
    for size in sizes:
        entry = histories[size]
        startup, naive_startup = median(entry["startup"]["ours"]), median(
            entry["startup"]["naive"])
        out.append([f"start-up to first 200 at {int(size):,} events", f"{startup:.2f} s",
                    f"naive {naive_startup:.2f} s", f"naive / ours {naive_startup / startup:.1f}x",
                    "<= 2 s" if size == largest else ""])
        out.append([f"server peak RSS at {int(size):,} events",
                    f"{median(entry['rss_mb']['ours']):.0f} MB",
                    f"naive {median(entry['rss_mb']['naive']):.0f} MB", "",
                    "<= 250 MB" if size == largest else ""])
    return out


def main() -> None:
    """Run every section, print the table, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ingest-events", type=int, default=20_000)
    parser.add_argument("--sizes", default="10000,100000,1000000",
                        help="history sizes, comma-separated (the largest gets the replay)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--requests", type=int, default=200,
                        help="reads of each kind per run on our server")
    parser.add_argument("--naive-requests", type=int, default=3,
                        help="reads of each kind on the naive server (each scans the file)")
    parser.add_argument("--json", type=Path, default=Path("bench/latest.json"))
    parser.add_argument("--postgres", action=argparse.BooleanOptionalAction, default=True,
                        help="also ingest on PostgreSQL with 1 and 4 workers "
                             "(MIAM_TEST_POSTGRES, default the local server's test database)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="miam-bench-") as tmp:
        console.print(f"ingest: {args.ingest_events:,} events x {args.repeat} runs")
        ingested = ingest(args.ingest_events, args.repeat, Path(tmp))
        console.print(f"history sizes {sizes}")
        postgres = None
        if args.postgres:
            console.print(f"ingest on PostgreSQL: {args.ingest_events:,} events x "
                          f"{args.repeat} runs, 1 and 4 workers")
            postgres = ingest_postgres(args.ingest_events, args.repeat, Path(tmp))
        histories = history(sizes, args.repeat, args.requests, args.naive_requests, Path(tmp))
    table = Table(title=f"miam-economies benchmark, {datetime.now(UTC):%Y-%m-%d}, "
                        f"{os.cpu_count()} cores, median of {args.repeat} runs "
                        f"({ingested['batch_kb']} KB per {BATCH}-event batch)")
    for column in ("measure", "value", "reference", "ratio", "target"):
        table.add_column(column, justify="left" if column == "measure" else "right")
    lines = rows(ingested, histories)
    if postgres is not None:
        lines += postgres_rows(ingested, postgres)
    for line in lines:
        table.add_row(*line)
    Console(width=160).print(table)
    args.json.write_text(json.dumps({
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "make bench", "seconds": round(time.perf_counter() - started),
        "table": [dict(zip(("measure", "value", "reference", "ratio", "target"), line,
                           strict=True)) for line in lines],
        "raw": {"ingest": ingested, "history": histories, "postgres": postgres},
    }, indent=1) + "\n")
    console.print(f"written {args.json} in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
