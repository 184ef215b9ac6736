"""Ingestion comes first (ADR-0011): the live runner puts its pages off while batches are
being ingested, at most ``max_defer`` seconds, and at once when a reader waits.

Real store and projection files, the runner in its own thread; the times asserted are
bounds far from the defaults (``quiet`` 50 ms, ``max_defer`` 1 s), never exact timings.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from miam_economies.api.service.answers import bilan_answer
from miam_economies.api.service.bootstrap import MAX_DEFER, open_services
from miam_economies.api.service.freshness import folded_up_to
from miam_economies.api.service.services import Services
from miam_economies.api.service.settings import Settings
from miam_economies.domain.acceptance import accept_batch
from tests.conftest import TOKEN
from tests.corpus import generate


def store_batch(services: Services, seed: int) -> int:
    """Append 200 new events; return the store's head."""
    events = generate(200, seed=seed)[:200]
    services.store.append(accept_batch({"evenements": events}))
    return services.store.head()


def folded_within(services: Services, head: int, seconds: float) -> float | None:
    """Seconds until the projection reached ``head``, or None if not within ``seconds``."""
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if services.projection.position() >= head:
            return time.monotonic() - started
        time.sleep(0.01)
    return None


def deferring(services: Services) -> None:
    """Wake the runner and wait until it puts its pages off. Inside ``ingesting()``, before
    a test appends: a page the thread began before ingestion did (its first, at start-up)
    would otherwise fold what is appended meanwhile, as it may (ADR-0011: only new pages
    wait)."""
    services.runner.wake()
    deadline = time.monotonic() + 10
    while services.pacing.deferring_since is None:
        assert time.monotonic() < deadline, "the runner never deferred"
        time.sleep(0.005)


def test_no_page_is_folded_during_ingestion_until_it_is_quiet(tmp_path: Path) -> None:
    with open_services(Settings(data=tmp_path / "data", token=TOKEN, fuseau="UTC")) as s:
        # The bound is the next test's: here, however slow the machine, it cannot expire.
        s.pacing.max_defer = 600.0
        with s.pacing.ingesting():
            deferring(s)
            head = store_batch(s, seed=1)
            assert folded_within(s, head, MAX_DEFER / 4) is None  # put off
        assert folded_within(s, head, 10) is not None  # quiet: folded


def test_under_sustained_ingestion_the_runner_catches_up_after_max_defer(
        tmp_path: Path) -> None:
    with open_services(Settings(data=tmp_path / "data", token=TOKEN, fuseau="UTC")) as s:
        # 2,000 events, four live pages, made before: only the appends happen below.
        batches = [accept_batch({"evenements": generate(200, seed=seed)[:200]})
                   for seed in range(2, 12)]
        with s.pacing.ingesting():  # never quiet while this holds
            deferring(s)
            since = s.pacing.deferring_since
            assert since is not None
            for batch in batches:
                s.store.append(batch)
            head = s.store.head()
            # Not a page a second: once the deferral expired, everything pending. Timed
            # from the deferral's start, which the runner's rule is stated from (a slow
            # machine may spend the whole bound appending).
            waited = folded_within(s, head, MAX_DEFER + 2.5)
            folded_at = time.monotonic()
        assert waited is not None and folded_at - since >= MAX_DEFER


def test_a_reader_that_waits_is_not_put_off(tmp_path: Path) -> None:
    settings = Settings(data=tmp_path / "data", token=TOKEN, fuseau="UTC")
    with open_services(settings) as s, s.pacing.ingesting():
        head = store_batch(s, seed=3)
        started = time.monotonic()
        assert asyncio.run(folded_up_to(s, head, timeout=10))
        assert time.monotonic() - started < MAX_DEFER  # not the deferral's bound
        assert bilan_answer(s.bilan())["provenance"]["position"] == head
