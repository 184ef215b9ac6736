"""The requests the plugin really sends (issue 14, items 2 and 3; issue 22, item 3).

The plugin re-sends a batch until it gets a 200, always with what arrived since: a batch
of doublons, or half doublons, is its most common request, and in steady state it posts
about 10 events every 5 s. Each shape is posted by one client on a real
``miam-economies serve`` whose projection folds the appends, and timed per POST:

* ``new``: 500-event batches never seen (the reference of the other two);
* ``doublons``: the same batches again, every event a doublon;
* ``half``: 500-event batches of 250 re-sent and 250 new events;
* ``small``: 10-event batches of new events, one after the other, each folded as it
  comes; and the same on the bare append (``bench.bare``), its reference.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from bench.servers import BATCH, client_for, corpus, serving

SMALL = 10
"""Events in the plugin's steady-state request (a batch every 5 s)."""

SMALL_POSTS, WARM_UP = 500, 20
"""10-event POSTs timed per server and run, after ``WARM_UP`` untimed ones (the first
requests on a connection pay for imports and caches that no later one does)."""


def _post(http: Any, body: bytes, expect: tuple[int, int]) -> float:
    """Seconds of one POST of ``body``; it must be a 200 with ``(recus, doublons)`` equal
    to ``expect``."""
    t0 = time.perf_counter()
    response = http.post("/economies", content=body)
    elapsed = time.perf_counter() - t0
    if response.status_code != 200:
        raise RuntimeError(f"POST failed: {response.text[:200]}")
    answer = response.json()
    if (answer["recus"], answer["doublons"]) != expect:
        raise RuntimeError(f"expected recus, doublons = {expect}: {answer}")
    return elapsed


def _body(events: list[dict[str, Any]]) -> bytes:
    return json.dumps({"evenements": events}, ensure_ascii=False,
                      separators=(",", ":")).encode()


def small_posts(http: Any, events: list[dict[str, Any]]) -> list[float]:
    """Seconds of each of ``SMALL_POSTS`` sequential ``SMALL``-event POSTs of new events
    (taken from ``events``: at least ``(WARM_UP + SMALL_POSTS) * SMALL``), after
    ``WARM_UP`` untimed ones, on the client ``http``."""
    bodies = [_body(events[i:i + SMALL])
              for i in range(0, (WARM_UP + SMALL_POSTS) * SMALL, SMALL)]
    for body in bodies[:WARM_UP]:
        _post(http, body, (SMALL, 0))
    return [_post(http, body, (SMALL, 0)) for body in bodies[WARM_UP:]]


def small_bare(work: Path) -> list[float]:
    """``small_posts`` on a fresh bare append in ``work``."""
    events = corpus((WARM_UP + SMALL_POSTS) * SMALL, seed=8)
    with serving(work, "bare") as server, client_for(server) as http:
        return small_posts(http, events)


def shapes(size: int, work: Path) -> dict[str, list[float]]:
    """POST seconds of each shape on a fresh server in ``work``: ``size`` events in
    500-event batches, each new batch followed at once by its re-sending and by a batch
    of half of it and 250 new events, so the three shapes meet the same store and the
    same projection work; then, once the projection has caught up, ``small_posts``."""
    events = corpus(2 * size + (WARM_UP + SMALL_POSTS) * SMALL, seed=7)
    first, fresh, small = events[:size], events[size:2 * size], events[2 * size:]
    half = BATCH // 2
    result: dict[str, list[float]] = {"new": [], "doublons": [], "half": [], "small": []}
    with serving(work) as server, client_for(server) as http:
        for i in range(size // BATCH):
            batch = first[i * BATCH:(i + 1) * BATCH]
            result["new"].append(_post(http, _body(batch), (BATCH, 0)))
            result["doublons"].append(_post(http, _body(batch), (0, BATCH)))
            mixed = batch[:half] + fresh[i * half:(i + 1) * half]
            result["half"].append(_post(http, _body(mixed), (half, half)))
        http.get("/economies/bilan", params={"attendre": "1"}).raise_for_status()
        result["small"] = small_posts(http, small)
    return result
