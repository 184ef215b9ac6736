"""The bench's history sections: reads, start-up and memory at each history size, and the
replay at the largest, with its peak memory (issue 22, item 4; the replay's and
``compare``'s own processes: ``bench.replays``).

Each size's store is filled in this process through the store's own append (the stored
format is ours), with no projection folded; the projection is then built by a replay of
every projection in a process of its own, which is both the replay measure and the fill's
fold: a live catch-up folds twice as slowly, and folding twice bought nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from bench import servers
from bench.replays import BESIDE_FORMULA, compare_apart, raw_log_read, replay_apart
from bench.servers import BATCH, Server, client_for, corpus, remove_tree, serving
from bench.write_floor import write_floor
from miam_economies.api.service.bootstrap import open_store
from miam_economies.api.service.settings import Settings
from miam_economies.domain.acceptance import accept_batch
from tests.conftest import TOKEN
from tests.corpus import journal_lines, with_fields

TEST_PRESETS, TEST_TASKS = 6, 1_000
"""MIAM's test runs in the journal: the first 6,000 demandes are 1,000 tasks run under 6
presets of their own, so the paired classement read joins 6,000 demandes (ADR-0081)."""

NAIVE_BUDGET = 5.0
"""Seconds of naive reads of one kind after which no further one starts: at 1,000,000
events one naive scan takes about 10 s, and a second would only repeat it."""


def with_test_runs(lines: list[str]) -> list[str]:
    """The journal with its first ``TEST_PRESETS * TEST_TASKS`` demandes' lines given a
    test preset and a ``test_id``."""
    def test_run(k: int) -> dict[str, str]:
        if k >= TEST_PRESETS * TEST_TASKS:
            return {}
        return {"preset": f"test-{k % TEST_PRESETS}", "test_id": f"t{k // TEST_PRESETS:04d}"}

    return with_fields(lines, test_run)


def fill(size: int, ours: Path, naive: Path, progress: Callable[[int], None]) -> dict[str, str]:
    """Store ``size`` events in our data directory (store and MIAM's journal; the
    projection is left at its first event for ``replay_apart`` to build) and in the naive
    one's file; return a day and a demande to read."""
    events = corpus(size, seed=size)
    ours.mkdir(parents=True)
    (ours / "delegations.jsonl").write_text("\n".join(with_test_runs(journal_lines(events)))
                                            + "\n")
    settings = Settings(data=ours, token=TOKEN, fuseau="UTC")
    recu_le = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    naive.mkdir(parents=True)
    with closing(open_store(settings.database)) as store, \
            (naive / "economies.jsonl").open("w", encoding="utf-8") as jsonl:
        for i in range(0, len(events), BATCH):
            batch = events[i:i + BATCH]
            store.append(accept_batch({"evenements": batch}))
            jsonl.writelines(json.dumps({**e, "recu_le": recu_le}, ensure_ascii=False) + "\n"
                             for e in batch)
            progress(len(batch))
    # The projections are created by the checkout measured (its schema may differ from
    # this one's: ``--ours-bin``), at no event, in UTC.
    subprocess.run([str(servers.OURS_BIN / "python"), "-c", OPEN_CHILD, str(ours), TOKEN],
                   check=True, capture_output=True, text=True, cwd=ours)
    demande = next(e["demande_id"] for e in events if e["type"] == "delegation")
    middle = events[len(events) // 2]
    return {"day": middle["date"][:10], "demande": demande,
            "session": middle["session_id"]}


OPEN_CHILD = """
import sys
from pathlib import Path
from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.settings import Settings

with open_services(Settings(data=Path(sys.argv[1]), token=sys.argv[2], fuseau="UTC"),
                   run_projections=False):
    pass
"""
"""``python -c OPEN_CHILD DATA TOKEN``: open the services once, creating the projections
(their tables in the measured checkout's schema, the serving one's settings)."""

NEW_KINDS = ("semaine", "mois", "preset_semaine", "modele_jour", "preset_semaine_tout")
"""The reads of ``new_breakdowns``, by kind."""

SESSION_KINDS = ("session", "ligne")
"""The session reads (issue 31, items 2 and 4; ADR-0176, ADR-0178): skipped on a release
without the session route."""

WINDOW_KINDS = ("classement_semaine", "classement_depuis")
"""The windowed classement reads (issue 30, ADR-0167), by kind: skipped on a release that
refuses ``depuis`` on the classement."""


def windowed_classements(day: str) -> dict[str, tuple[str, dict[str, str]]]:
    """The classement of ``preset`` over the week of ``day`` (what MIAM asks of the recent
    days) and from ``day`` on (half the history: the most days a window sums here)."""
    monday = date.fromisoformat(day) - timedelta(days=date.fromisoformat(day).weekday())
    return {
        "classement_semaine": ("/economies/classement", {
            "par": "preset", "depuis": monday.isoformat(),
            "jusqu_au": (monday + timedelta(days=6)).isoformat()}),
        "classement_depuis": ("/economies/classement", {"par": "preset", "depuis": day}),
    }


def new_breakdowns(day: str) -> dict[str, tuple[str, dict[str, str]]]:
    """Issue 24's breakdowns, read as MIAM's dashboard would (ADR-0132, ADR-0133): weeks
    and months over the whole history, a preset per week and a model per day over the
    week of ``day``, and a preset per week over the whole history."""
    monday = date.fromisoformat(day) - timedelta(days=date.fromisoformat(day).weekday())
    week = {"depuis": monday.isoformat(), "jusqu_au": (monday + timedelta(days=6)).isoformat()}
    return {
        "semaine": ("/economies/bilan", {"par": "semaine"}),
        "mois": ("/economies/bilan", {"par": "mois"}),
        "preset_semaine": ("/economies/bilan", {"par": "preset", "puis": "semaine", **week}),
        "modele_jour": ("/economies/bilan", {"par": "modele", "puis": "jour", **week}),
        "preset_semaine_tout": ("/economies/bilan", {"par": "preset", "puis": "semaine"}),
    }


def reads(server: Server, target: dict[str, str], requests: int,
          paired: int) -> dict[str, list[float]]:
    """Seconds of sequential reads of each kind: ``requests`` of each (``paired`` of the
    paired classement, a hundred times slower), after 3 untimed ones; on the naive server,
    which has no classement and whose every read scans the file, up to ``requests`` of
    each, none started past ``NAIVE_BUDGET``, none untimed (its start-up has just read the
    whole file)."""
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
        kinds.update(new_breakdowns(target["day"]))
        kinds.update(windowed_classements(target["day"]))
        session = f"/economies/sessions/{target['session']}"
        kinds.update({"session": (session, {}), "ligne": (session, {"format": "ligne"})})
    out: dict[str, list[float]] = {}
    with client_for(server) as http:
        # An earlier release measured with --ours-bin has no periods but the day, and
        # would take par=mois for a journal field: its answer would time another read.
        periods = server.naive or http.get("/economies/bilan", params={
            "par": "mois", "depuis": "2000-01-01"}).status_code == 200
        windows = not server.naive and http.get("/economies/classement", params={
            "par": "preset", "depuis": "2000-01-01"}).status_code == 200
        sessions = not server.naive and http.get(
            f"/economies/sessions/{target['session']}").status_code == 200
        for kind, (path, params) in kinds.items():
            if ((kind in NEW_KINDS and not periods) or (kind in WINDOW_KINDS and not windows)
                    or (kind in SESSION_KINDS and not sessions)):
                continue
            for _ in range(0 if server.naive else 3):
                http.get(path, params=params).raise_for_status()
            times: list[float] = []
            began = time.perf_counter()
            for _ in range(paired if kind == "paired" else requests):
                if server.naive and times and time.perf_counter() - began > NAIVE_BUDGET:
                    break
                t0 = time.perf_counter()
                http.get(path, params=params).raise_for_status()
                times.append(time.perf_counter() - t0)
            out[kind] = times
    return out


def removed(data: Path) -> None:
    """Remove our data directory (``servers.remove_tree``); should a file appear meanwhile
    (seen once, at 100,000 events, after the servers had stopped), it is named on standard
    error and the removal tried again a second later."""
    try:
        remove_tree(data)
    except OSError:
        left = sorted(p.name for p in data.rglob("*"))
        print(f"bench: {data} not empty after removal ({left}); again in 1 s",
              file=sys.stderr)
        time.sleep(1)
        remove_tree(data)


def history(sizes: list[int], repeat: int, requests: int, paired: int, naive_requests: int,
            work: Path, progress: Callable[[str, int], Callable[[int], None]],
            timings: dict[str, float]) -> dict[str, Any]:
    """At each size: fill, replay apart (at the largest also the raw log read before it,
    then the writes of the view it built, ``bench.write_floor``, and ``compare``), then ours
    started ``repeat`` times (read on the first: ``reads``) and the naive server once.
    ``progress(label, total)`` gives the fill's advance callback; ``timings`` gets the
    seconds of each step at each size. At the largest, last, a replay under
    ``BESIDE_FORMULA`` beside the serving projection."""
    result: dict[str, Any] = {}
    for size in sizes:
        label, clock = f"history {size:,}", time.perf_counter()

        def lap(step: str) -> None:
            nonlocal clock
            timings[f"{label}: {step}"] = time.perf_counter() - clock  # noqa: B023
            clock = time.perf_counter()

        ours, naive = work / f"ours-{size}", work / f"naive-{size}"
        target = fill(size, ours, naive, progress(f"storing {size:,} events", size))
        lap("fill")
        entry: dict[str, Any] = {"startup": {"ours": [], "naive": []},
                                 "rss_mb": {"ours": [], "naive": []},
                                 "descendants_rss_mb": {"ours": [], "naive": []},
                                 "reads": {"ours": {}, "naive": {}}}
        if size == sizes[-1]:
            entry["raw_log_read"] = [raw_log_read(ours)]
            lap("raw log read")
        entry["replay"] = replay_apart(ours)
        lap("replay")
        if size == sizes[-1]:
            entry["write_floor"] = write_floor(
                Settings(data=ours, token=TOKEN).projections_path, work)
            lap("write floor")
            entry["compare"] = compare_apart(ours, int(entry["replay"]["events"]))
            lap("compare")
        for run in range(repeat):
            for kind, data, n in (("ours", ours, requests), ("naive", naive, naive_requests)):
                if kind == "naive" and run:
                    continue  # its start-up reads the whole file: once is enough
                with serving(data, kind) as server:
                    entry["startup"][kind].append(server.startup)
                    if run == 0:
                        entry["reads"][kind] = reads(server, target, n, paired)
                        entry["rss_mb"][kind].append(server.peak_rss_mb())
                        entry["descendants_rss_mb"][kind].append(
                            server.descendants_peak_rss_mb())
        lap("servers and reads")
        if size == sizes[-1]:  # last: the formula it switches to would serve the reads
            entry["replay_beside"] = replay_apart(ours, BESIDE_FORMULA)
            lap("replay beside")
        result[str(size)] = entry
        remove_tree(naive)
        removed(ours)
    return result
