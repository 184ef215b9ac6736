"""A page is folded with Python's cyclic collector paused, and the collector is left as it
was found (``projections.collector``; ADR-0062, ADR-0181): a real store and view, the
live runner's 500-event pages; pauses overlapping in real threads, in any order of
their ends."""

from __future__ import annotations

import gc
import sys
import threading
from pathlib import Path
from typing import Any

from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.settings import Settings
from miam_economies.domain.acceptance import accept_batch
from miam_economies.projections.collector import collector_paused
from tests.conftest import TOKEN
from tests.corpus import generate


def _folding() -> bool:
    # Whether a page is being folded: a runner's _fold_page on the calling stack.
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "_fold_page":
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


def test_a_live_page_runs_no_collection_and_leaves_the_collector_as_it_was(
        tmp_path: Path) -> None:
    collections: list[bool] = []  # for each collection: whether a page was being folded

    def seen(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            collections.append(_folding())

    settings = Settings(data=tmp_path / "data", token=TOKEN, fuseau="UTC")
    with open_services(settings, run_projections=False) as services:
        events = generate(1_500, seed=8)
        for start in range(0, len(events), 500):
            services.store.append(accept_batch({"evenements": events[start:start + 500]}))
        runner = services.runner
        assert gc.isenabled()
        gc.callbacks.append(seen)
        try:
            assert runner.fold_page() == 500
            assert gc.isenabled() and not any(collections)
            gc.disable()  # one the host paused stays paused
            assert runner.fold_page() == 500
            assert not gc.isenabled()
        finally:
            gc.enable()
            gc.callbacks.remove(seen)
        # The same check sees a collection when the page is folded with it on. A low
        # threshold: a thread left by another test, allocating meanwhile, could
        # otherwise trigger every collection of the page's length in its own frames.
        collections.clear()
        thresholds = gc.get_threshold()
        gc.set_threshold(100)
        gc.callbacks.append(seen)
        try:
            runner._fold_page()
        finally:
            gc.callbacks.remove(seen)
            gc.set_threshold(*thresholds)
        assert any(collections)


def _pause_until(entered: threading.Event, leave: threading.Event) -> None:
    with collector_paused():
        entered.set()
        leave.wait(10)


def test_overlapping_pauses_in_two_threads_restore_the_collector_after_the_last(
        ) -> None:
    for first_to_leave in (0, 1):  # the first to begin ends first, or last
        entered = [threading.Event(), threading.Event()]
        leave = [threading.Event(), threading.Event()]
        threads = [threading.Thread(target=_pause_until, args=(entered[i], leave[i]))
                   for i in (0, 1)]
        for thread, began in zip(threads, entered, strict=True):
            thread.start()
            assert began.wait(10)
        assert not gc.isenabled()
        leave[first_to_leave].set()
        threads[first_to_leave].join(10)
        assert not gc.isenabled()  # the other one's page is still folded
        leave[1 - first_to_leave].set()
        threads[1 - first_to_leave].join(10)
        assert gc.isenabled()


def test_a_collector_the_host_turned_off_stays_off() -> None:
    gc.disable()
    try:
        with collector_paused(), collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
