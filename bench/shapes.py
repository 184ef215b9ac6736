"""The requests the plugin really sends (issue 14, items 2 and 3), on one server.

The plugin re-sends a batch until it gets a 200, always with what arrived since: a batch
of doublons, or half doublons, is its most common request, and in steady state it posts
about 10 events every 5 s. Each shape is posted sequentially by one client on a real
``miam-economies serve`` whose projection folds every append as it comes, and timed per
POST:

* ``new``: 500-event batches never seen (the reference of the other two);
* ``doublons``: the same batches again, every event a doublon;
* ``half``: 500-event batches of 250 re-sent and 250 new events;
* ``small``: 10-event batches of new events, one after the other.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from bench.servers import BATCH, bodies, client_for, corpus, serving

SMALL = 10
"""Events in the plugin's steady-state request (a batch every 5 s)."""


def _post(server: Any, batches: list[bytes], expect: tuple[int, int] | None = None
          ) -> list[float]:
    """Seconds of each POST of ``batches``, one client, in order; each must be a 200,
    with ``(recus, doublons)`` equal to ``expect`` when given."""
    times = []
    with client_for(server) as http:
        for body in batches:
            t0 = time.perf_counter()
            response = http.post("/economies", content=body)
            times.append(time.perf_counter() - t0)
            answer = response.json()
            if response.status_code != 200:
                raise RuntimeError(f"POST failed: {response.text[:200]}")
            if expect is not None and (answer["recus"], answer["doublons"]) != expect:
                raise RuntimeError(f"expected recus, doublons = {expect}: {answer}")
    return times


def shapes(size: int, work: Path) -> dict[str, list[float]]:
    """POST seconds of each shape, ``size`` events each for the 500-event shapes (and as
    many 10-event POSTs as ``size / 20``), on a fresh server in ``work``."""
    events = corpus(3 * size, seed=7)
    first, fresh, small = events[:size], events[size:2 * size], events[2 * size:]
    half_batches = [
        json.dumps({"evenements": first[i:i + BATCH // 2] + fresh[i:i + BATCH // 2]},
                   ensure_ascii=False, separators=(",", ":")).encode()
        for i in range(0, size, BATCH // 2)][: size // BATCH]
    small_batches = [
        json.dumps({"evenements": small[i:i + SMALL]}, ensure_ascii=False,
                   separators=(",", ":")).encode()
        for i in range(0, min(len(small), size // 2), SMALL)]
    with serving(work) as server:
        result = {"new": _post(server, bodies(first), (BATCH, 0)),
                  "doublons": _post(server, bodies(first), (0, BATCH)),
                  "half": _post(server, half_batches, (BATCH // 2, BATCH // 2)),
                  "small": _post(server, small_batches, (SMALL, 0))}
    return result
