"""A pull runner: follows the store's notification log from the projection's position.

eventsourcing 9.5's SQLite recorder cannot ``subscribe`` (NOTES-eventsourcing), so the
runner reads the log from its tracking position, a page at a time, through an
``EventSource`` (the store's typed values, ADR-0062), and folds each page in one view
transaction. It sleeps until woken by an append in the same process, or until
``poll_interval`` passes (which picks up appends by other processes). ADR-0004.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from zoneinfo import ZoneInfo

from eventsourcing.persistence import IntegrityError, OperationalError

from miam_economies.domain.formulas import FORMULES
from miam_economies.projections.journal import JournalFollower
from miam_economies.projections.pacing import LocalPacing, Pacing
from miam_economies.projections.projection import BilanProjection
from miam_economies.projections.source import EventSource
from miam_economies.projections.view import BilanView

log = logging.getLogger(__name__)


def same_source(source: EventSource, position: int, identite: str | None) -> bool:
    """Whether a projection at ``position`` (> 0), with ``identite`` recorded there, was
    folded from ``source``: the store's event at ``position`` has that identity (ADR-0105).
    Without a recorded identity, whether the store reaches ``position`` at all. Raises the
    store's ``PersistenceError``."""
    found = source.identity(position)
    return found is not None and (identite is None or found == identite)


def rebuild(view: BilanView, name: str, position: int) -> None:
    """Start projection ``name`` of ``view``, found at ``position`` folded from another
    store (or from a store since replaced), again from the first event of this one, saying
    so (a warning: a command prints it). Raises ``IntegrityError`` when another runner
    moved the position meanwhile (it saw the same and rebuilds), and the view's
    ``PersistenceError``."""
    log.warning("projection %s was folded from another store (the event at its position "
                "%d is not the one it folded there): rebuilding it from this store",
                name, position)
    view.reset(name, previous=position)


class CatchUpRunner:
    """Runs one projection over one event store, in a background thread or inline.

    ``source``: the event store (its typed values, page by page); ``journal``: MIAM's
    journal to join, read after each page (lines appended by MIAM are seen within
    ``poll_interval``); ``follow_active``: before each step, switch to the projection
    the view names active (a replay's switch reaches a running server without restart;
    ADR-0009); ``page_size``: events folded per view transaction, read ``read_size`` at
    a time (default: the whole page in one read; smaller reads are freed once folded, so
    memory holds the page's deltas rather than its events: ADR-0062); ``poll_interval``:
    seconds between looks at the log when nobody wakes the runner. Errors never kill the thread:
    they are logged, kept in ``last_error``, and the page is retried after ``retry_delay``
    seconds (rising to 30 s).

    Ingestion comes first (ADR-0011): while a batch is being ingested (``ingesting()``),
    or for ``quiet`` seconds after the last one, the thread does not start a page, for at
    most ``max_defer`` seconds, and not at all while a reader waits (``wait_for``). A
    burst of POSTs is thus answered without the fold competing for the interpreter, and
    folded right after it; under sustained load, once ``max_defer`` has passed, the runner
    folds until it has caught up, then may defer again. ``max_defer=0`` never defers.
    ``pacing``: where that signal lives (``LocalPacing`` by default; shared by the
    processes of one SQLite data directory when another process folds: ADR-0115).
    """

    def __init__(self, source: EventSource, projection: BilanProjection, *,
                 journal: JournalFollower | None = None,
                 follow_active: bool = False, page_size: int = 500,
                 read_size: int | None = None,
                 poll_interval: float = 1.0, retry_delay: float = 0.5,
                 quiet: float = 0.05, max_defer: float = 0.0,
                 pacing: Pacing | None = None):
        self.source = source
        self.projection = projection
        self.journal = journal
        self.follow_active = follow_active
        self.page_size = page_size
        self.read_size = read_size or page_size
        self.poll_interval = poll_interval
        self.retry_delay = retry_delay
        self.quiet = quiet
        self.max_defer = max_defer
        self.last_error: str | None = None
        self.pacing: Pacing = pacing or LocalPacing()
        self._said_failing: bool | None = None  # what the pacing was last told
        self._deferred_since: float | None = None
        self._wakeup = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def fold_page(self) -> int:
        """Fold the next page of events, if any; return how many were folded.

        Raises the view's or the source's ``PersistenceError`` (an ``IntegrityError`` when
        another runner folded the page first).
        """
        projection = self.projection  # one projection per page, even across a switch
        position, identite = projection.source()
        if position and not same_source(self.source, position, identite):
            rebuild(projection.view, projection.tracking_name, position)
            position = 0
        last = position
        delta = projection.new_delta()
        folded = 0
        while folded < self.page_size:
            wanted = min(self.read_size, self.page_size - folded)
            read = self.source.read(last + 1, wanted)
            if not read:
                break
            delta.add_all([value for _, value in read])
            folded += len(read)
            last = read[-1][0]
            if len(read) < wanted:
                break  # the store's head, for now
        if folded:
            projection.commit(delta, last, previous=position,
                              identite=self.source.identity(last))
        return folded

    def follow_switch(self) -> bool:
        """Move to the active projection if a replay switched it; return whether it did.
        Raises the view's ``PersistenceError``, ``KeyError`` for an unknown formula."""
        view = self.projection.view
        active = view.active()
        if active is None or active == self.projection.tracking_name:
            return False
        settings = view.settings_of(active)
        if settings is None:
            return False
        self.projection = BilanProjection(view, ZoneInfo(settings.fuseau),
                                          FORMULES[settings.formule])
        log.info("projection switched to %s", active)
        return True

    def step(self) -> int:
        """Fold the next page, then join new journal lines; return the work done (events
        and lines). Raises as ``fold_page`` and ``JournalFollower.follow`` do (an
        unreadable journal does not raise: it never holds the events back)."""
        if self.follow_active:
            self.follow_switch()
        done = self.fold_page()
        if self.journal is not None:
            done += self.journal.follow()
        return done

    def catch_up(self) -> int:
        """Fold pages and journal lines until both are exhausted (inline use, e.g. the
        ``bilan`` command); return the events this call folded."""
        folded = 0
        while True:
            try:
                page = self.fold_page()
                lines = self.journal.follow() if self.journal is not None else 0
            except IntegrityError:
                continue  # another runner folded this page: read the position again
            if page == 0 and lines == 0:
                return folded
            folded += page

    def catch_up_unless_locked(self) -> bool:
        """``catch_up``, unless a database stays locked past its lock timeout (another
        process holding the view's write lock: a long replay page, a stuck transaction):
        then stop there and return False, so that a reader shows the snapshot as it
        stands, marked as not caught up, rather than fail (issue 21.3; ADR-0104); the
        reader says so. Returns True once caught up. Raises any other
        ``PersistenceError``."""
        try:
            self.catch_up()
        except OperationalError:
            return False
        return True

    def start(self) -> None:
        """Start following the log in a daemon thread."""
        self._thread = threading.Thread(target=self._run, name="projection-runner",
                                        daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Ask the thread to stop after its current page and wait up to ``timeout`` s."""
        self._stopping.set()
        self._wakeup.set()
        if self._thread is not None:
            self._thread.join(timeout)

    @contextmanager
    def ingesting(self) -> Iterator[None]:
        """Mark a batch being ingested (from the event loop's thread only): the thread
        defers its next page until ingestion has been quiet (see the class)."""
        self.pacing.begin_ingest()
        try:
            yield
        finally:
            self.pacing.end_ingest()

    def _deferring(self) -> bool:
        # Runner thread only. Pages are put off at most max_defer from the first time one
        # was; then the runner folds until it has caught up (``_deferred_since`` stays
        # set, expired, until a step finds nothing), so the lag stays bounded under
        # sustained load instead of growing by a page a second.
        ingesting, last_ingest, waiting, _ = self.pacing.state()
        if self.max_defer <= 0 or waiting:
            return False
        now = time.monotonic()
        if ingesting == 0 and now - last_ingest >= self.quiet:
            return False
        if self._deferred_since is None:
            self._deferred_since = now
        return now - self._deferred_since < self.max_defer

    @property
    def deferring_since(self) -> float | None:
        """The ``time.monotonic()`` at which the thread began putting its pages off, or
        None when it has not since it last caught up (for tests and diagnostics)."""
        return self._deferred_since

    def wake(self) -> None:
        """Tell the runner new events were appended (cheap; safe from any thread), in
        this process or, through ``pacing``, in another."""
        self._wakeup.set()
        self.pacing.appended()

    @property
    def failing(self) -> bool:
        """Whether the last page failed, here or in the process that folds (ADR-0115)."""
        return self.last_error is not None or self.pacing.failing()

    async def wait_for(self, position: int, timeout: float) -> bool:
        """Wait, without blocking the event loop (each look runs in a worker thread),
        until the projection has folded up to ``position`` (a notification id) and joined
        every complete journal line, or ``timeout`` seconds pass.

        Returns whether both were reached. Polls every 20 ms: folds by other processes
        send no signal. Raises ``PersistenceError``.
        """
        deadline = time.monotonic() + timeout
        self.pacing.begin_wait()  # a reader waits: fold now, even during ingestion
        try:
            self.wake()  # the journal is otherwise only looked at every poll_interval
            # SQLite reads: in a worker thread, never on the event loop.
            while not await asyncio.to_thread(self._caught_up, position):
                if time.monotonic() >= deadline:
                    return False
                await asyncio.sleep(0.02)
            return True
        finally:
            self.pacing.end_wait()

    def _caught_up(self, position: int) -> bool:
        if self.follow_active:
            self.follow_switch()
        if self.projection.position() < position:
            return False
        return self.journal is None or self.journal.caught_up()

    def _run(self) -> None:
        delay = self.retry_delay
        while not self._stopping.is_set():
            if self._deferring():
                self._stopping.wait(0.01)
                continue
            try:
                self._wakeup.clear()
                n = self.step()
                if n == 0:
                    self._deferred_since = None  # caught up: the next burst may wait
                self.last_error = None
                if self._said_failing is not False:  # also clears a restarted process's
                    self.pacing.set_failing(False)
                    self._said_failing = False
                delay = self.retry_delay
            except IntegrityError:
                continue  # another runner folded this page first
            except Exception as exc:  # a runner that dies silently would freeze the bilan
                self.last_error = f"{type(exc).__name__}: {exc}"
                self.pacing.set_failing(True)
                self._said_failing = True
                log.exception("projection %s: page failed; retrying in %.1f s",
                              self.projection.tracking_name, delay)
                self._stopping.wait(delay)
                delay = min(delay * 2, 30.0)
                continue
            if n == 0:
                self._idle()

    def _idle(self) -> None:
        # Until woken, or poll_interval passes. An append of another process says so
        # only through the shared pacing's count, looked at every 10 ms (ADR-0115).
        if not self.pacing.cross_process:
            self._wakeup.wait(self.poll_interval)
            return
        appends = self.pacing.state()[3]
        deadline = time.monotonic() + self.poll_interval
        while not self._wakeup.wait(0.01):
            if self.pacing.state()[3] != appends or time.monotonic() >= deadline:
                return
