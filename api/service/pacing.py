"""Ingestion first: when the projection runner may fold (ADR-0011, ADR-0120), and the
signal that tells it, in one process or in a small file shared across processes.

The projection runner puts its pages off while batches are being ingested (ADR-0011):
``IngestFirst`` is that policy, the runner's ``projections.pacing.Pacing``. In one
process its signal is a few attributes (``LocalPacing``). When the projection is folded
by another process (``serve``'s projector, ADR-0115; or
``miam-economies project`` run beside a server), the server's POSTs and readers and the
folding process must see the same signal: ``SharedPacing`` keeps it in
``DATA/projections.pacing``, a 64-byte file both processes map into memory.

Each field has one writer thread per process (the event loop marks ingestion and
waiting readers; the appending thread counts appends; the folding process its failure),
and each is a plain aligned 8-byte word: a reader may see a value a moment late, never a
torn one that matters. The fields are hints, not locks: a process killed in the middle
of a POST leaves ``ingesting`` raised until the next server starts (``reset``), which
only makes the runner defer up to ``max_defer`` a page meanwhile; nothing is lost or
folded twice (the tracking compare-and-set, ADR-0007, arbitrates the folds).
"""

from __future__ import annotations

import mmap
import os
import struct
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Protocol

PACING_FILE = "projections.pacing"
"""The shared signal's file, in the data directory beside ``projections.sqlite``."""

_LAYOUT = struct.Struct("<qdqqqq")
"""ingesting (count), last ingest (``time.monotonic()``, seconds), waiting readers,
appends (count), failing (0/1), a version word (1)."""

_SIZE = 64


class Signal(Protocol):
    """Where ``IngestFirst`` keeps whether batches are being ingested and readers wait:
    ``LocalPacing`` in one process, ``SharedPacing`` across the processes of one SQLite
    data directory (ADR-0115). ``cross_process``: appends come from other processes,
    which a folding process looks for while idle."""

    cross_process: bool

    def begin_ingest(self) -> None:
        """A batch is being ingested (the event loop's thread)."""
    def end_ingest(self) -> None:
        """That batch is answered: the quiet time starts now."""
    def begin_wait(self) -> None:
        """A reader waits for the projection: fold now."""
    def end_wait(self) -> None:
        """That reader stopped waiting."""
    def appended(self) -> None:
        """An append stored events (any thread)."""
    def state(self) -> tuple[int, float, int, int]:
        """``(ingesting, last ingest instant, waiting readers, appends so far)``:
        counts, and a ``time.monotonic()`` instant in seconds."""
    def set_failing(self, failing: bool) -> None:
        """Tell other processes whether the last page failed."""
    def failing(self) -> bool:
        """Whether another process's runner said its last page failed."""


class IngestFirst:
    """The runner's ``projections.pacing.Pacing``: ingestion first (ADR-0011).

    While a batch is being ingested (``ingesting()``), or for ``quiet`` seconds after the
    last one, the runner does not start a page, for at most ``max_defer`` seconds, and not
    at all while a reader waits (``waiting()``). A burst of POSTs is thus answered without
    the fold competing for the interpreter, and folded right after it; under sustained
    load, once ``max_defer`` has passed, the runner folds until it has caught up, then may
    defer again. ``max_defer=0`` never defers. ``signal``: where the state lives
    (``LocalPacing`` by default; ``SharedPacing`` on one SQLite data directory when
    another process folds: ADR-0115).
    """

    def __init__(self, signal: Signal | None = None, *, quiet: float = 0.05,
                 max_defer: float = 0.0):
        self.signal: Signal = signal or LocalPacing()
        self.quiet = quiet
        self.max_defer = max_defer
        self._deferred_since: float | None = None

    @contextmanager
    def ingesting(self) -> Iterator[None]:
        """Mark a batch being ingested (from the event loop's thread only): the runner
        defers its next page until ingestion has been quiet (see the class)."""
        self.signal.begin_ingest()
        try:
            yield
        finally:
            self.signal.end_ingest()

    @contextmanager
    def waiting(self) -> Iterator[None]:
        """Mark a reader waiting for the projection (``?attendre=1``): the runner folds
        now, even during ingestion."""
        self.signal.begin_wait()
        try:
            yield
        finally:
            self.signal.end_wait()

    def may_fold(self) -> bool:
        """Whether the runner may start a page now (the runner's thread only). Pages are
        put off at most ``max_defer`` from the first time one was; then the runner folds
        until it has caught up (``caught_up``), so the lag stays bounded under sustained
        load instead of growing by a page a second."""
        ingesting, last_ingest, waiting, _ = self.signal.state()
        if self.max_defer <= 0 or waiting:
            return True
        now = time.monotonic()
        if ingesting == 0 and now - last_ingest >= self.quiet:
            return True
        if self._deferred_since is None:
            self._deferred_since = now
        return now - self._deferred_since >= self.max_defer

    def caught_up(self) -> None:
        """The runner found nothing to fold: the next burst may be deferred again."""
        self._deferred_since = None

    @property
    def deferring_since(self) -> float | None:
        """The ``time.monotonic()`` at which the runner began putting its pages off, or
        None when it has not since it last caught up (for tests and diagnostics)."""
        return self._deferred_since

    def appended(self) -> None:
        """An append stored events: counted, for a folding process elsewhere."""
        self.signal.appended()

    def fold_for_other_processes(self) -> None:
        """This process folds what others append (``miam-economies project``,
        ``api.service.follow``): its runner then looks at the shared appends' count while
        idle, since no append of its own wakes it. Meaningful on ``SharedPacing`` only;
        raises ``TypeError`` on a signal of one process."""
        if not isinstance(self.signal, SharedPacing):
            raise TypeError("only a shared pacing signal reaches other processes")
        self.signal.cross_process = True

    def appends_elsewhere(self) -> int | None:
        """The appends' count when other processes append for this runner
        (``signal.cross_process``), else None."""
        return self.signal.state()[3] if self.signal.cross_process else None

    def report(self, failing: bool) -> None:
        """Tell other processes whether the runner's last page failed."""
        self.signal.set_failing(failing)

    def failing(self) -> bool:
        """Whether the process that folds said its last page failed."""
        return self.signal.failing()


class LocalPacing:
    """``Signal`` within one process: plain attributes, written by the event loop's
    thread (ingestion, waiting readers) and the appending thread (appends), read by the
    runner's."""

    cross_process = False

    def __init__(self) -> None:
        self._ingesting = 0
        self._last_ingest = 0.0
        self._waiting = 0
        self._appends = 0

    def begin_ingest(self) -> None:
        """A batch is being ingested."""
        self._ingesting += 1

    def end_ingest(self) -> None:
        """That batch is answered: the quiet time starts now."""
        self._ingesting -= 1
        self._last_ingest = time.monotonic()

    def begin_wait(self) -> None:
        """A reader waits for the projection: fold now."""
        self._waiting += 1

    def end_wait(self) -> None:
        """That reader stopped waiting."""
        self._waiting -= 1

    def appended(self) -> None:
        """An append stored events."""
        self._appends += 1

    def state(self) -> tuple[int, float, int, int]:
        """``(ingesting, last ingest instant, waiting readers, appends so far)``."""
        return self._ingesting, self._last_ingest, self._waiting, self._appends

    def set_failing(self, failing: bool) -> None:
        """Nothing to tell another process: ``CatchUpRunner.last_error`` says it."""

    def failing(self) -> bool:
        """Always False: this process's runner keeps its own ``last_error``."""
        return False


class SharedPacing:
    """The ``Signal``, in ``path`` mapped by every process on one SQLite data directory
    (see the module).

    ``time.monotonic()`` is the system-wide ``CLOCK_MONOTONIC`` on Linux and macOS, so
    the last ingest's instant compares across processes. Raises ``OSError`` when the
    file cannot be created or mapped (mode 0600, as the databases: ADR-0010).
    """

    cross_process = False
    """True in a process that folds what others append (``miam-economies project``,
    ``api.service.follow``): its runner then looks at the appends' count while idle, every
    10 ms within 30 s of its last page and every 100 ms after (ADR-0184), since no append
    of its own wakes it."""

    def __init__(self, path: Path):
        self.path = path
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            status = os.fstat(fd)
            if status.st_mode & 0o077:  # left readable by an earlier copy: private again
                os.fchmod(fd, 0o600)
            if status.st_size < _SIZE:
                os.ftruncate(fd, _SIZE)  # zeros: nothing ingesting, nobody waiting
            self._map = mmap.mmap(fd, _SIZE)
        finally:
            os.close(fd)

    def _fields(self) -> tuple[int, float, int, int, int, int]:
        return _LAYOUT.unpack_from(self._map)

    def _add(self, index: int, delta: int) -> None:
        offset = index * 8
        (value,) = struct.unpack_from("<q", self._map, offset)
        struct.pack_into("<q", self._map, offset, max(0, value + delta))

    def begin_ingest(self) -> None:
        """A batch is being ingested (the event loop's thread)."""
        self._add(0, 1)

    def end_ingest(self) -> None:
        """That batch is answered: the quiet time starts now."""
        self._add(0, -1)
        struct.pack_into("<d", self._map, 8, time.monotonic())

    def begin_wait(self) -> None:
        """A reader waits for the projection (``?attendre=1``): fold now."""
        self._add(2, 1)

    def end_wait(self) -> None:
        """That reader stopped waiting."""
        self._add(2, -1)

    def appended(self) -> None:
        """An append stored events (the appending thread): wakes a folding process."""
        self._add(3, 1)

    def state(self) -> tuple[int, float, int, int]:
        """``(ingesting, last ingest instant, waiting readers, appends so far)``."""
        ingesting, last, waiting, appends, _, _ = self._fields()
        return ingesting, last, waiting, appends

    def set_failing(self, failing: bool) -> None:
        """Say whether the folding process's last page failed (or the process is down)."""
        struct.pack_into("<q", self._map, 32, int(failing))

    def failing(self) -> bool:
        """Whether the folding process said its last page failed."""
        return bool(self._fields()[4])

    def reset(self) -> None:
        """Clear what a process killed mid-POST (or mid-read) may have left raised: the
        ingesting and waiting counts and the failing flag. Called by a process that
        starts serving (``serve``, or the services with their runner thread), which owns
        them."""
        struct.pack_into("<qdqq", self._map, 0, 0, 0.0, 0, 0)
        self.set_failing(False)

    def close(self) -> None:
        """Unmap the file (it stays, for the next process)."""
        with suppress(BufferError, ValueError):
            self._map.close()
