"""Replay benchmark: rebuild every projection from the store, against the raw log read rate.

Run with ``make bench`` (or ``.venv/bin/python -m bench.replay [--events 200000]``). Fills a
data directory through the real store, then measures in the same run: reading the whole
notification log raw (``select_notifications`` pages of 500, the reference), and replaying
it under ``pondere-v1`` (every projection: clients, days, models, demandes, groups). Prints
events/s and the ratio replay / raw read.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from api.replay import replay
from api.services import open_services
from api.settings import Settings
from domain.validation import validate_batch
from tests.conftest import TOKEN
from tests.corpus import generate, journal_lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data=Path(tmp) / "data", token=TOKEN, fuseau="UTC")
        events = generate(args.events, seed=9)[: args.events]
        settings.data.mkdir(parents=True)
        settings.journal_path.write_text("\n".join(journal_lines(events)) + "\n")
        with open_services(settings, run_projections=False) as services:
            for i in range(0, len(events), 500):
                services.store.append(validate_batch({"evenements": events[i:i + 500]}))
            recorder = services.store.recorder
            start, position, read = time.perf_counter(), 0, 0
            while page := recorder.select_notifications(start=position + 1, limit=500):
                read += len(page)
                position = page[-1].id
            raw = read / (time.perf_counter() - start)
        start = time.perf_counter()
        result = replay(settings, "pondere-v1")
        rate = result["evenements"] / (time.perf_counter() - start)
    table = Table(title=f"replay of {len(events):,} stored events (one run)")
    table.add_column("path")
    table.add_column("events/s", justify="right")
    table.add_column("vs raw log read", justify="right")
    table.add_row("raw notification-log read (reference)", f"{raw:,.0f}", "1.00")
    table.add_row("replay under pondere-v1, every projection", f"{rate:,.0f}",
                  f"{rate / raw:.2f}")
    Console(width=120).print(table)


if __name__ == "__main__":
    main()
