"""The bench's table: its rows from the sections' figures, as ``docs/performance.md``'s
Markdown.

Every row is ``[measure, value, reference, ratio, target]``. Ingest rows are read against
the bare append of the same run (``bench.bare``: the design's own limit, issue 22); the
PostgreSQL rows (``bench.report_postgres``) against an earlier checkout's run.
"""

from __future__ import annotations

import statistics
import textwrap
from pathlib import Path
from typing import Any

from bench.history import TEST_PRESETS, TEST_TASKS
from bench.replays import BESIDE_FORMULA
from bench.servers import BATCH
from bench.shapes import SMALL
from bench.write_floor import floor_rows

Row = list[str]
COLUMNS = ("measure", "value", "reference", "ratio", "target")

BURST_BEFORE = 27_940 / 41_683
"""Ours / bare append in a 20,000-event burst, 1 client, at commit 267ce71 (the probe of
2026-12-01, run H1, medians of 5 interleaved rounds): "bursts no worse than before"."""

MARKERS = ("<!-- bench:table -->", "<!-- /bench:table -->")
"""Around ``docs/performance.md``'s generated table."""


def median(values: list[float]) -> float:
    """The median (statistics.median), for lists of runs."""
    return statistics.median(values)


def percentile(values: list[float], p: int) -> float:
    """The ``p``-th percentile of ``values`` (inclusive method), in the values' unit."""
    return statistics.quantiles(values, n=100, method="inclusive")[p - 1]


def ms_pair(values: list[float]) -> str:
    """``p50 / p99`` of seconds, in ms."""
    return f"{percentile(values, 50) * 1000:.1f} / {percentile(values, 99) * 1000:.1f} ms"


def ingest_rows(ingested: dict[str, Any]) -> list[Row]:
    """Sustained ingest per client count, against the bare append; the burst; raw."""
    runs, raw = ingested["runs"], median(ingested["raw"])
    out = [["ingest: raw sqlite3 executemany, in process (no HTTP, no parsing)",
            f"{raw:,.0f} ev/s", "", "", ""]]
    for clients in (1, 4):
        ours, bare, naive = (runs[f"{kind}-{clients}"] for kind in ("ours", "bare", "naive"))
        rate, limit = median(ours["rates"]), median(bare["rates"])
        naive_rate, current = median(naive["rates"]), median(ours["until_current"])
        out += [
            [f"ingest over HTTP, {clients} client(s), {ingested['events']:,} events: "
             "bare append (the limit)", f"{limit:,.0f} ev/s", f"{raw:,.0f} raw",
             f"{limit / raw:.2f}", ""],
            [f"ingest over HTTP, {clients} client(s): ours", f"{rate:,.0f} ev/s",
             f"{limit:,.0f} bare", f"{rate / limit:.2f}", ">= 0.8"],
            ["  ... until the bilan shows them all (projection included)",
             f"{current:,.0f} ev/s", f"{limit:,.0f} bare", f"{current / limit:.2f}",
             ">= 0.6"],
            [f"ingest over HTTP, {clients} client(s): naive design", f"{naive_rate:,.0f} ev/s",
             f"{limit:,.0f} bare", f"{naive_rate / limit:.2f}", ""],
            [f"ingest over HTTP, {clients} client(s): ours / naive", "",
             f"{naive_rate:,.0f} naive", f"{rate / naive_rate:.2f}", ""],
            [f"one {BATCH}-event POST, {clients} client(s): p50 / p99", ms_pair(ours["latencies"]),
             f"bare {ms_pair(bare['latencies'])}; naive {ms_pair(naive['latencies'])}",
             f"{percentile(ours['latencies'], 50) / percentile(bare['latencies'], 50):.2f}",
             ""]]
        cpu = {kind: median(runs[f"{kind}-{clients}"]["cpu_server_ms"])
               for kind in ("ours", "bare", "naive")}
        below = median(ours["cpu_descendants_ms"])
        out += [
            [f"server CPU per {BATCH}-event POST, {clients} client(s): ours (serve process)",
             f"{cpu['ours']:.1f} ms", f"{cpu['bare']:.1f} ms bare",
             f"{cpu['ours'] / cpu['bare']:.2f}", "<= 1.2"],
            ["  ... ours' descendant processes (the projection's fold)", f"{below:.1f} ms",
             "", "", "stated"],
            ["  ... ours, serve and its descendants", f"{cpu['ours'] + below:.1f} ms",
             f"{cpu['bare']:.1f} ms bare", f"{(cpu['ours'] + below) / cpu['bare']:.2f}",
             "stated"],
            ["  ... naive design", f"{cpu['naive']:.1f} ms", f"{cpu['bare']:.1f} ms bare",
             f"{cpu['naive'] / cpu['bare']:.2f}", ""]]
    if ingested["burst"]:
        ours, bare = runs["ours-burst"], runs["bare-burst"]
        rate, limit = median(ours["rates"]), median(bare["rates"])
        current = median(ours["until_current"])
        out += [[f"ingest burst of {ingested['burst']:,} events, 1 client: ours",
                 f"{rate:,.0f} ev/s", f"{limit:,.0f} bare", f"{rate / limit:.2f}",
                 f">= {BURST_BEFORE:.2f} (267ce71)"],
                ["  ... until the bilan shows them all", f"{current:,.0f} ev/s",
                 f"{limit:,.0f} bare", f"{current / limit:.2f}", ""]]
    return out


def request_rows(times: dict[str, list[float]]) -> list[Row]:
    """The plugin's requests (``bench.shapes``): re-sent batches against new ones, and the
    10-event POST against the bare append's."""
    new = percentile(times["new"], 50)
    out = []
    for shape, label in (("doublons", "every event re-sent"),
                         ("half", "half re-sent, half new")):
        p50 = percentile(times[shape], 50)
        out.append([f"one {BATCH}-event POST, {label}: p50", f"{p50 * 1000:.1f} ms",
                    f"new {new * 1000:.1f} ms", f"{p50 / new:.2f}", "<= 1"])
    small, bare = times["small"], times["small-bare"]
    out.append([f"one {SMALL}-event POST, sequential, projection folding each: p50 / p99",
                f"{percentile(small, 50) * 1000:.2f} / {percentile(small, 99) * 1000:.2f} ms",
                f"bare {percentile(bare, 50) * 1000:.2f} / "
                f"{percentile(bare, 99) * 1000:.2f} ms",
                f"{percentile(small, 50) / percentile(bare, 50):.2f}",
                "p50 <= 1.3, p99 <= 10 ms"])
    return out


BREAKDOWNS = {
    "semaine": ("par=semaine, whole history", "<= 5 ms"),
    "mois": ("par=mois, whole history", "<= 5 ms"),
    "preset_semaine": ("par=preset&puis=semaine, one week", "<= 5 ms"),
    "modele_jour": ("par=modele&puis=jour, one week", "<= 5 ms"),
    "preset_semaine_tout": ("par=preset&puis=semaine, whole history", "stated"),
}
"""Issue 24's reads (``bench.history.new_breakdowns``): label and target at the largest
size (the bilan's read budget; ADR-0132, ADR-0133)."""


def breakdown_rows(histories: dict[str, Any]) -> list[Row]:
    """Issue 24's breakdowns at each size against the bilan read (client) of the same
    size, and their growth from the smallest size to the largest; none for a run of a
    release without them (``--ours-bin``)."""
    out: list[Row] = []
    sizes = list(histories)
    smallest, largest = sizes[0], sizes[-1]
    for kind, (label, target) in BREAKDOWNS.items():
        if kind not in histories[largest]["reads"]["ours"]:
            continue
        for size in sizes:
            ours = histories[size]["reads"]["ours"]
            p50, client = percentile(ours[kind], 50), percentile(ours["client"], 50)
            out.append([f"bilan read ({label}) at {int(size):,} events: p50 / p99",
                        f"{p50 * 1000:.2f} / {percentile(ours[kind], 99) * 1000:.2f} ms",
                        f"bilan (client) {client * 1000:.2f} ms", f"{p50 / client:.2f}",
                        target if size == largest else ""])
        ratio = (percentile(histories[largest]["reads"]["ours"][kind], 50)
                 / percentile(histories[smallest]["reads"]["ours"][kind], 50))
        out.append([f"bilan read ({label}): p50 {int(largest):,} / {int(smallest):,}", "",
                    "", f"{ratio:.2f}", "<= 1.5" if target != "stated" else "stated"])
    return out


def history_rows(histories: dict[str, Any]) -> list[Row]:
    """Reads at each size, the replay at the largest, start-up and memory."""
    out: list[Row] = []
    sizes = list(histories)
    smallest, largest = sizes[0], sizes[-1]
    for read in ("client", "jour", "demande"):
        for size in sizes:
            ours = histories[size]["reads"]["ours"][read]
            naive = median(histories[size]["reads"]["naive"][read])  # 1 to 3 reads
            p50 = percentile(ours, 50)
            out.append([f"bilan read ({read}) at {int(size):,} events: p50 / p99",
                        f"{p50 * 1000:.2f} / {percentile(ours, 99) * 1000:.2f} ms",
                        f"naive {naive * 1000:,.1f} ms", f"naive / ours {naive / p50:,.0f}x",
                        "<= 5 ms" if size == largest else ""])
        ratio = (percentile(histories[largest]["reads"]["ours"][read], 50)
                 / percentile(histories[smallest]["reads"]["ours"][read], 50))
        out.append([f"bilan read ({read}): p50 {int(largest):,} / {int(smallest):,}", "", "",
                    f"{ratio:.2f}", "<= 1.5"])
    out += breakdown_rows(histories)
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
        for kind, what in (("classement_semaine", "one week"),
                           ("classement_depuis", "depuis the middle day")):
            if kind not in ours:  # a release without the window (--ours-bin)
                continue
            p50, whole = percentile(ours[kind], 50), percentile(ours["classement"], 50)
            out.append([f"classement read, windowed ({what}, with derive) at "
                        f"{int(size):,} events: p50 / p99",
                        f"{p50 * 1000:.2f} / {percentile(ours[kind], 99) * 1000:.2f} ms",
                        f"classement {whole * 1000:.2f} ms", f"{p50 / whole:.2f}",
                        "<= 5 ms" if size == largest else ""])
    for size in sizes:
        ours = histories[size]["reads"]["ours"]
        for kind, what in (("session", "JSON"), ("ligne", "format=ligne, the status line")):
            if kind not in ours:  # a release without the session route (--ours-bin)
                continue
            p50, demande = percentile(ours[kind], 50), percentile(ours["demande"], 50)
            out.append([f"session read ({what}) at {int(size):,} events: p50 / p99",
                        f"{p50 * 1000:.2f} / {percentile(ours[kind], 99) * 1000:.2f} ms",
                        f"demande {demande * 1000:.2f} ms", f"{p50 / demande:.2f}",
                        "<= 2 ms" if size == largest else ""])
    for size in sizes:
        ours = histories[size]["reads"]["ours"]
        paired, ranked = percentile(ours["paired"], 50), percentile(ours["classement"], 50)
        out.append([f"paired classement read (apparier=test_id, {TEST_TASKS:,} tasks x "
                    f"{TEST_PRESETS} presets) at {int(size):,} events: p50 / p99",
                    f"{paired * 1000:.2f} / {percentile(ours['paired'], 99) * 1000:.2f} ms",
                    f"classement {ranked * 1000:.2f} ms", f"{paired / ranked:.2f}", "stated"])
    top = histories[largest]
    raw_read, replay = median(top["raw_log_read"]), top["replay"]
    out += [[f"replay, every projection, {int(largest):,} events", f"{replay['rate']:,.0f} ev/s",
             f"{raw_read:,.0f} raw log read", f"{replay['rate'] / raw_read:.2f}",
             ">= 0.35 (aim 0.5)"],
            [f"replay's peak RSS at {int(largest):,} events (its own process)",
             f"{replay['peak_rss_mb']:.0f} MB", "", "", "<= 300 MB"]]
    if "replay_beside" in top:  # measured since ADR-0182
        beside = top["replay_beside"]
        out.append([f"replay under another formula ({BESIDE_FORMULA}) beside the serving "
                    f"projection, {int(largest):,} events", f"{beside['rate']:,.0f} ev/s",
                    f"{raw_read:,.0f} raw log read", f"{beside['rate'] / raw_read:.2f}",
                    "stated"])
    if "write_floor" in top:  # measured since ADR-0182
        out += floor_rows(top["write_floor"], int(replay["events"]), raw_read)
    if "compare" in top:  # a bench from before issue 35's item 2 has none
        compared = top["compare"]
        out += [[f"compare, two formulas by day, {int(largest):,} events",
                 f"{compared['rate']:,.0f} ev/s", f"{raw_read:,.0f} raw log read",
                 f"{compared['rate'] / raw_read:.2f}", ">= 0.35 (aim 0.5)"],
                [f"compare's peak RSS at {int(largest):,} events (its own process)",
                 f"{compared['peak_rss_mb']:.0f} MB", "", "", "<= 300 MB"]]
    for size in sizes:
        entry = histories[size]
        startup, naive_startup = median(entry["startup"]["ours"]), median(
            entry["startup"]["naive"])
        out.append([f"start-up to first 200 at {int(size):,} events", f"{startup:.2f} s",
                    f"naive {naive_startup:.2f} s", f"naive / ours {naive_startup / startup:.1f}x",
                    "<= 2 s" if size == largest else ""])
        below = median(entry["descendants_rss_mb"]["ours"])
        out.append([f"server peak RSS at {int(size):,} events (its descendants apart)",
                    f"{median(entry['rss_mb']['ours']):.0f} MB"
                    + (f" (+{below:.0f} MB)" if below else ""),
                    f"naive {median(entry['rss_mb']['naive']):.0f} MB", "",
                    "<= 250 MB" if size == largest else ""])
    return out


def markdown(rows: list[Row], heading: str) -> str:
    """``heading`` (wrapped as the page's prose is), a blank line and the rows as a
    Markdown table, between ``MARKERS``."""
    def line(cells: list[str] | tuple[str, ...]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    table = [line(COLUMNS), "|---|---:|---:|---:|---:|", *map(line, rows)]
    wrapped = textwrap.fill(heading, width=92, break_long_words=False, break_on_hyphens=False)
    return "\n".join([MARKERS[0], wrapped, "", *table, MARKERS[1]])


def replace_table(text: str, block: str) -> str:
    """``text`` with what lies between ``MARKERS`` (markers included) replaced by
    ``block``. Raises ``ValueError`` when the markers are not there once each, in order."""
    start, end = (text.find(marker) for marker in MARKERS)
    if start < 0 or end < start or any(text.count(marker) != 1 for marker in MARKERS):
        raise ValueError(f"expected {MARKERS[0]} ... {MARKERS[1]} once each")
    return text[:start] + block + text[end + len(MARKERS[1]):]


def write_readme(path: Path, block: str) -> None:
    """Rewrite ``path``'s generated table in place (``replace_table``)."""
    path.write_text(replace_table(path.read_text(encoding="utf-8"), block), encoding="utf-8")
