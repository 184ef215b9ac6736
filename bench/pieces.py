"""Where a 500-event POST's CPU goes, piece by piece: ours beside the bare append's, in one
process (issue 35, item 3). Not part of ``make bench``: the measure behind the note's
account of ``serve``'s CPU per POST, kept so that it can be taken again.

End to end, ``serve``'s CPU per POST moves by a millisecond or two between runs of the same
checkout on this kind of machine, more than any one piece below costs. So each piece is
timed alone, on the CPU clock of this thread (``time.thread_time``), on the bench's own
bodies (``bench.servers.corpus``, 500 events each), ours and the bare append's in turn
for every body (each first as often), each on an SQLite file of its own in one fresh
directory: the medians say what each piece costs, and the ratio of the medians of each
side's per-body totals (not the sum of the pieces' medians) what our request path costs
above the bare one, HTTP and the framework aside (``bench.protocols --profile`` times
those too, with the whole app). Ours leaves out what a real append adds around these
pieces (its lock and deadline, the doublons' check, which a batch of new events skips,
and the listeners' notice): a little less than the request path spends.

Ours: ``parse_json`` (strict JSON: ADR-0011, ADR-0183), ``accept_batch`` (the schema's
compiled check: ADR-0061), ``keyed`` (stream ids, the doublons apart: ADR-0116), the
stored rows (``EventStore._new_rows``), the insert and its commit (the library's
recorder). The bare append's: ``bare.rows_of`` (orjson, the same rows unchecked), then
its insert and commit (``bare.Appender.write``).

Run: ``python -m bench.pieces [--posts 200] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import bare
from bench.servers import bodies, corpus
from miam_economies.api.http.body import parse_json
from miam_economies.api.service.bootstrap import open_store
from miam_economies.api.store.backends import Database
from miam_economies.api.store.doublons import keyed
from miam_economies.domain.acceptance import accept_batch

WARM_UP = 20
"""Bodies appended untimed first, by each side."""

OURS = ("parse_json", "accept_batch", "keyed", "rows", "insert + commit")
BARE = ("rows_of", "insert + commit")


def _timed(piece: Callable[[], Any]) -> tuple[Any, float]:
    started = time.thread_time()
    result = piece()
    return result, (time.thread_time() - started) * 1000


def measure(posts: int) -> dict[str, dict[str, float]]:
    """``{"ours": {piece: median ms}, "bare": {...}}`` over ``posts`` bodies of 500
    events (after ``WARM_UP`` untimed), each side's pieces in order, then ``"total"``."""
    events = corpus((WARM_UP + posts) * 500, seed=35)
    batches = bodies(events)
    times: dict[str, dict[str, list[float]]] = {
        "ours": {p: [] for p in (*OURS, "total")}, "bare": {p: [] for p in (*BARE, "total")}}
    with tempfile.TemporaryDirectory(prefix="miam-pieces-") as tmp, \
            closing(open_store(Database.parse(f"sqlite:///{tmp}/economies.sqlite"))) as store:
        appender = bare.Appender(Path(tmp) / bare.FILE)
        recorder = store.economies_recorder

        def ours(body: bytes) -> list[float]:
            document, parse = _timed(lambda: parse_json(body))
            batch, accept = _timed(lambda: accept_batch(document, body))
            (first_seen, stamps, _), key = _timed(lambda: keyed(batch, None))
            rows, build = _timed(lambda: store._new_rows(list(first_seen.items()), stamps))
            _, insert = _timed(lambda: recorder.insert_rows(rows, None))
            return [parse, accept, key, build, insert]

        def bare_append(body: bytes) -> list[float]:
            rows, build = _timed(lambda: bare.rows_of(body, datetime.now(UTC)))
            _, insert = _timed(lambda: appender.write(rows))
            return [build, insert]

        try:
            for i, body in enumerate(batches):
                sides = [("ours", OURS, ours), ("bare", BARE, bare_append)]
                for name, pieces, run in sides if i % 2 else reversed(sides):
                    spent = run(body)
                    if i >= WARM_UP:
                        for piece, ms in zip((*pieces, "total"), (*spent, sum(spent)),
                                             strict=True):
                            times[name][piece].append(ms)
        finally:
            appender.db.close()
    return {name: {piece: statistics.median(values) for piece, values in pieces.items()}
            for name, pieces in times.items()}


def main() -> None:
    """Measure (see the module), print each piece's median and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--posts", type=int, default=200, help="timed bodies per side")
    parser.add_argument("--json", type=Path, help="also write the medians there")
    args = parser.parse_args()
    medians = measure(args.posts)
    for name, pieces in medians.items():
        for piece, ms in pieces.items():
            print(f"{name:>4} {piece:<16} {ms:7.2f} ms")
    ratio = medians["ours"]["total"] / medians["bare"]["total"]
    print(f"ours / bare, in process, HTTP aside: {ratio:.2f}x")
    if args.json:
        args.json.write_text(json.dumps({**medians, "ratio": ratio}, indent=1) + "\n")


if __name__ == "__main__":
    main()
