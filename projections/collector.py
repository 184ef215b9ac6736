"""Pausing Python's cyclic garbage collector while a page is folded (ADR-0062, ADR-0180).

A page of events holds thousands of live objects (its values and its deltas) and
allocates as many again: the collector, triggered every 700 allocations, walks them over
and over. Everything a page allocates is freed by reference counting when the page is
done, so nothing waits for the collector.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for the block (then restore its state).

    Measured: a quarter of a replay's time (ADR-0062); 10 to 20 % of the live runner's
    CPU per 500-event page (ADR-0180). Threads may nest or overlap such blocks: the
    collector is process-wide, and the block that found it enabled enables it again, so
    an overlap at worst lets a page run with it on; cyclic garbage of other threads is
    collected once it runs again.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
