"""Read benchmark: bilan read latency over HTTP at two history sizes, as a ratio.

Run with ``make bench`` (or ``.venv/bin/python -m bench.read [--sizes 10000,200000]``).
For each size, a data directory is filled through the real store (500-event batches) and
the projection, with MIAM's journal beside it; then a real ``miam-economies serve`` answers
``--requests`` reads of each kind. Prints p50/p99 in ms per size and the ratio of the
largest size to the smallest: near 1 means reads cost the answer, not the history.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from api.services import open_services
from api.settings import Settings
from domain.validation import validate_batch
from tests.conftest import TOKEN, LiveServer
from tests.corpus import generate, journal_lines


def fill(data: Path, size: int) -> tuple[str, str]:
    """Store ``size`` events and fold them; return a demande id and a day to read."""
    events = generate(size, seed=size)[:size]
    (data / "delegations.jsonl").parent.mkdir(parents=True, exist_ok=True)
    (data / "delegations.jsonl").write_text("\n".join(journal_lines(events)) + "\n")
    with open_services(Settings(data=data, token=TOKEN, fuseau="UTC"),
                       run_projections=False) as services:
        for i in range(0, len(events), 500):
            services.store.append(validate_batch({"evenements": events[i:i + 500]}))
        services.runner.catch_up()
    demande = next(e["demande_id"] for e in events if e["type"] == "delegation")
    return demande, events[0]["date"][:10]


def measure(server: LiveServer, path: str, params: dict[str, str], n: int) -> list[float]:
    """Seconds of ``n`` sequential GETs (after 10 warm-up reads)."""
    for _ in range(10):
        server.client.get(path, params=params).raise_for_status()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        server.client.get(path, params=params).raise_for_status()
        times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,200000")
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[str, dict[int, list[float]]] = {}
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            data = Path(tmp) / "data"
            demande, day = fill(data, size)
            server = LiveServer(data)
            server.start()
            try:
                reads = {
                    "bilan (per client)": ("/economies/bilan", {}),
                    "bilan ?par=jour, one day": ("/economies/bilan",
                                                 {"par": "jour", "depuis": day,
                                                  "jusqu_au": day}),
                    "bilan ?par=preset (journal)": ("/economies/bilan", {"par": "preset"}),
                    "bilan ?par=modele": ("/economies/bilan", {"par": "modele"}),
                    "one demande": (f"/economies/demandes/{demande}", {}),
                }
                for name, (path, params) in reads.items():
                    results.setdefault(name, {})[size] = measure(server, path, params,
                                                                 args.requests)
            finally:
                server.stop()
                server.client.close()
    table = Table(title=f"bilan reads over HTTP, {args.requests} sequential requests each")
    table.add_column("read")
    for size in sizes:
        table.add_column(f"{size:,} events p50 / p99 ms", justify="right")
    table.add_column(f"p50 ratio {sizes[-1]:,} / {sizes[0]:,}", justify="right")
    for name, by_size in results.items():
        cells = []
        for size in sizes:
            q = statistics.quantiles(by_size[size], n=100)
            cells.append(f"{q[49] * 1000:.2f} / {q[98] * 1000:.2f}")
        ratio = statistics.median(by_size[sizes[-1]]) / statistics.median(by_size[sizes[0]])
        table.add_row(name, *cells, f"{ratio:.2f}")
    Console(width=140).print(table)


if __name__ == "__main__":
    main()
