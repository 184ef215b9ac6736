"""Pausing Python's cyclic garbage collector while a page is folded (ADR-0062, ADR-0181).

A page of events holds thousands of live objects (its values and its deltas) and
allocates as many again: the collector, triggered every 700 allocations, walks them over
and over. Everything a page allocates is freed by reference counting when the page is
done, so nothing waits for the collector.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_paused = 0  # blocks under way, in every thread
_restore = False  # whether the collector was enabled when the first of them began


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for the block, then restore it.

    Measured: a quarter of a replay's time (ADR-0062); 6 to 22 % of the live runner's CPU
    per 500-event page, in process (ADR-0181). The collector is process-wide and threads
    may overlap such blocks (a server's runner, a host's reads folding a page): it stays
    paused while any block is under way, and the last to end restores the state the first
    found, under a lock, so no interleaving leaves it off. A host that turns it off
    while a page is folded finds it on again after (if it was on before). Cyclic garbage
    of other threads meanwhile is collected once it runs again: a page's length, longer
    when its commit waits for the view's lock (``lock_timeout``).
    """
    global _paused, _restore
    with _lock:
        if _paused == 0:
            _restore = gc.isenabled()
            gc.disable()
        _paused += 1
    try:
        yield
    finally:
        with _lock:
            _paused -= 1
            if _paused == 0 and _restore:
                gc.enable()
