"""The append alone, guessing a batch new or asking the store first (ADR-0117): 500-event
batches of new events appended in this process to a fresh SQLite store, alternately with
the guess on and off, seconds per batch. Not part of ``make bench``: a measurement kept so
that ADR-0117's figure can be measured again.

Run: ``python -m bench.appends [--batches 80]``; prints the medians, ms per batch.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from bench.servers import BATCH, corpus
from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.settings import Settings
from miam_economies.domain.acceptance import accept_batch
from tests.conftest import TOKEN


def measure(batches: int) -> dict[str, float]:
    """Median ms per ``BATCH``-event append, ``{"guessed": ..., "asked": ...}``."""
    events = corpus(BATCH * batches, seed=3)
    accepted = [accept_batch({"evenements": events[i:i + BATCH]})
                for i in range(0, len(events), BATCH)]
    seconds: dict[str, list[float]] = {"guessed": [], "asked": []}
    with tempfile.TemporaryDirectory(prefix="miam-appends-") as tmp, \
            open_services(Settings(data=Path(tmp), token=TOKEN),
                          run_projections=False) as services:
        store = services.store
        for k, batch in enumerate(accepted):
            guessed = k % 2 == 0
            store._last_all_new = guessed  # what the previous append would have left
            began = time.perf_counter()
            appended = store.append(batch)
            seconds["guessed" if guessed else "asked"].append(time.perf_counter() - began)
            if appended.recus != len(batch):
                raise RuntimeError(f"batch {k}: {appended}")
    return {kind: statistics.median(values) * 1000 for kind, values in seconds.items()}


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=80)
    figures = measure(parser.parse_args().batches)
    print(f"guessed {figures['guessed']:.2f} ms, asked {figures['asked']:.2f} ms per "
          f"{BATCH}-event batch ({figures['guessed'] / figures['asked']:.2f}x)")


if __name__ == "__main__":
    main()
