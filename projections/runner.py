"""A pull runner: follows the store's notification log from the projection's position.

eventsourcing 9.5's SQLite recorder cannot ``subscribe`` (NOTES-eventsourcing), so the
runner reads the log from its tracking position, a page at a time, through an
``EventSource`` (the store's typed values, ADR-0062), and folds each page in one view
transaction. It sleeps until woken by an append in the same process, or until
``poll_interval`` passes (which picks up appends by other processes). ADR-0004.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from eventsourcing.persistence import IntegrityError, OperationalError, PersistenceError

from miam_economies.projections.collector import collector_paused
from miam_economies.projections.journal import JournalFollower
from miam_economies.projections.pacing import Pacing, Unpaced
from miam_economies.projections.projection import BilanProjection
from miam_economies.projections.set_aside import fold_singly, poisoned, said_aside
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


STOPPED_AFTER = 120.0
"""Seconds a build's mark may go without a folded page before the live runner takes it
for a stopped build's and rebuilds the groups it left (ADR-0179): far above a build's
page (a few seconds at 1,000,000 events) and its journal's first read."""

LOOK_BUSY, LOOK_QUIET, QUIET_AFTER = 0.01, 0.1, 30.0
"""Seconds between an idle runner's looks at the appends other processes count
(``Pacing.appends_elsewhere``): ``LOOK_BUSY`` within ``QUIET_AFTER`` seconds of its last
page (a POST wakes the fold within about 10 ms: ADR-0115), ``LOOK_QUIET`` after (each
look wakes the thread, about 140 µs of CPU on this machine's timers: a hundred a second
cost 1.4 % of a core while nothing happens; ADR-0184)."""


def look_interval(quiet_for: float) -> float:
    """Seconds until an idle runner's next look at other processes' appends, when it has
    folded nothing for ``quiet_for`` seconds (ADR-0184)."""
    return LOOK_BUSY if quiet_for < QUIET_AFTER else LOOK_QUIET


class CatchUpRunner:
    """Runs one projection over one event store, in a background thread or inline: it
    folds, and only folds (ADR-0120).

    ``source``: the event store (its typed values, page by page); ``projection``: the
    projection to fold, or a callable giving the one to fold now, asked before each page
    (the service layer's ``api.service.switching``: a replay's switch reaches a running
    server without restart; ADR-0009); ``journal``: MIAM's journal to join, read after
    each page (lines appended by MIAM are seen within ``poll_interval``); ``page_size``:
    events folded per view transaction, read ``read_size`` at a time (default: the whole
    page in one read; smaller reads are freed once folded, so memory holds the page's
    deltas rather than its events: ADR-0062); ``poll_interval``: seconds between looks at
    the log when nobody wakes the runner; ``pacing``: asked whether the thread may start
    a page now, and told when it has caught up (ingestion first, ADR-0011: the service
    layer's ``api.service.pacing``; ``Unpaced`` by default). Errors never kill the
    thread: they are logged, kept in ``last_error``, told to ``pacing``, and the page is
    retried after ``retry_delay`` seconds (rising to 30 s). Caught up, the thread
    rebuilds the groups a stopped build left marked for ``stopped_after`` seconds
    (``finish_stopped_build``; ADR-0179).
    """

    def __init__(self, source: EventSource,
                 projection: BilanProjection | Callable[[], BilanProjection], *,
                 journal: JournalFollower | None = None, page_size: int = 500,
                 read_size: int | None = None, poll_interval: float = 1.0,
                 retry_delay: float = 0.5, pacing: Pacing | None = None):
        self.source = source
        self._projection_now: Callable[[], BilanProjection] = (
            (lambda: projection) if isinstance(projection, BilanProjection) else projection)
        self.journal = journal
        self.page_size = page_size
        self.read_size = read_size or page_size
        self.poll_interval = poll_interval
        self.retry_delay = retry_delay
        self.last_error: str | None = None
        self.stopped_after = STOPPED_AFTER
        self.pacing: Pacing = pacing or Unpaced()
        self._said_failing: bool | None = None  # what the pacing was last told
        self._folding = ""  # the name of the projection last folded, for the log
        self._wakeup = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._folded_at = time.monotonic()  # the last page folded, for look_interval

    def fold_page(self) -> int:
        """Fold the next page of events, if any; return how many were folded.

        A stored event the fold cannot take is set aside, never a stop: read as an
        ``Ecarte`` (``domain.storable_text``), or, refused by the view for its data, found
        by folding the page event by event (``set_aside``; ADR-0135); each is logged.
        The cyclic garbage collector is paused meanwhile (``collector_paused``).
        Raises the view's or the source's ``PersistenceError`` (an ``IntegrityError`` when
        another runner folded the page first), and what ``projection`` raises.
        """
        with collector_paused():
            return self._fold_page()

    def _fold_page(self) -> int:
        projection = self._projection_now()  # one per page, even across a switch
        self._folding = projection.tracking_name
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
        if not folded:
            return 0
        try:
            projection.commit(delta, last, previous=position,
                              identite=self.source.identity(last))
        except PersistenceError as exc:
            if not poisoned(exc):
                raise
            # An event's data the view refuses: fold the page event by event, setting
            # aside the ones refused, rather than stop here for ever (ADR-0135).
            return fold_singly(self.source, projection, position, last)
        said_aside(projection, delta.ecartes)
        return folded

    def finish_stopped_build(self) -> bool:
        """Rebuild the groups of the projection this runner folds if a build marked them
        and has folded nothing for ``stopped_after`` seconds (killed between its pages
        and its rebuild: ADR-0179); return whether it did. One read when there is no
        mark. Raises the view's ``PersistenceError``."""
        projection = self._projection_now()
        view, name = projection.view, projection.tracking_name
        idle = view.groups_deferred(name)
        if idle is None or idle < self.stopped_after:
            return False
        done = view.rebuild_stopped_groups(name, self.stopped_after)
        if done:
            log.warning("projection %s: computed the groups a stopped build left undone",
                        name)
        return done

    def step(self) -> int:
        """Fold the next page, then join new journal lines; return the work done (events
        and lines). Raises as ``fold_page`` and ``JournalFollower.follow`` do (an
        unreadable journal does not raise: it never holds the events back)."""
        done = self.fold_page()
        if self.journal is not None:
            done += self.journal.follow()
        return done

    def catch_up(self) -> int:
        """Fold pages and journal lines until both are exhausted (inline use, e.g. the
        ``bilan`` command); return the events this call folded. Each page folds the
        projection ``projection`` gives then (a replay's switch is followed). Raises as
        ``fold_page`` does, but for ``IntegrityError`` (another runner folded the page:
        the position is read again)."""
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
        ``PersistenceError``, and what ``projection`` raises (``UnknownFormula`` for a formula
        this release does not know: ``api.service.switching``)."""
        try:
            self.catch_up()
        except OperationalError:
            return False
        return True

    def start(self) -> None:
        """Start following the log in a daemon thread."""
        self._folded_at = time.monotonic()  # a runner starts looking often
        self._thread = threading.Thread(target=self._run, name="projection-runner",
                                        daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Ask the thread to stop after its current page and wait up to ``timeout`` s."""
        self._stopping.set()
        self._wakeup.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def wake(self) -> None:
        """Tell the runner new events were appended (cheap; safe from any thread), in
        this process or, through ``pacing``, in another."""
        self._wakeup.set()
        self.pacing.appended()

    def _run(self) -> None:
        delay = self.retry_delay
        while not self._stopping.is_set():
            try:
                if not self.pacing.may_fold():
                    self._stopping.wait(0.01)
                    continue
                self._wakeup.clear()
                # Read before the step: an append counted while it reads the store is then
                # seen by _idle as a change, not left to the next poll_interval.
                appends = self._appends_elsewhere()
                n = self.step()
                if n == 0 and self.finish_stopped_build():
                    n = 1  # a rebuild is work done: look at the log again at once
                if n:
                    self._folded_at = time.monotonic()
                else:
                    self.pacing.caught_up()  # the next burst may wait
                self.last_error = None
                if self._said_failing is not False:  # also clears a restarted process's
                    self.pacing.report(False)
                    self._said_failing = False
                delay = self.retry_delay
            except IntegrityError:
                continue  # another runner folded this page first
            except Exception as exc:  # a runner that dies silently would freeze the bilan
                self.last_error = f"{type(exc).__name__}: {exc}"
                self.pacing.report(True)
                self._said_failing = True
                log.exception("projection %s: page failed; retrying in %.1f s",
                              self._folding or "(the serving one)", delay)
                self._stopping.wait(delay)
                delay = min(delay * 2, 30.0)
                continue
            if n == 0:
                try:
                    self._idle(appends)
                except Exception:  # a pacing that cannot be read: poll as a lone process
                    log.exception("projection runner: the pacing could not be read")
                    self._wakeup.wait(self.poll_interval)

    def _appends_elsewhere(self) -> int | None:
        # The pacing's count of other processes' appends; None when it cannot be read
        # (then _idle reads it again, and says so if it still fails).
        try:
            return self.pacing.appends_elsewhere()
        except Exception:
            return None

    def _idle(self, appends: int | None) -> None:
        # Until woken, or poll_interval passes. An append of another process says so
        # only through the pacing's count (``appends``: as read before the last step),
        # looked at every 10 ms, or 100 ms once nothing was folded for a while (ADR-0115,
        # ADR-0184).
        if appends is None:
            appends = self.pacing.appends_elsewhere()
        if appends is None:
            self._wakeup.wait(self.poll_interval)
            return
        deadline = time.monotonic() + self.poll_interval
        while not self._wakeup.wait(look_interval(time.monotonic() - self._folded_at)):
            if (self.pacing.appends_elsewhere() != appends
                    or time.monotonic() >= deadline):
                return
