"""Ingestion first across processes on SQLite: the pacing signal in a small shared file.

The projection runner puts its pages off while batches are being ingested (ADR-0011). In
one process that signal is a few attributes (``projections.pacing.LocalPacing``). When
the projection is folded by another process (``serve``'s projector, ADR-0115; or
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
from contextlib import suppress
from pathlib import Path

PACING_FILE = "projections.pacing"
"""The shared signal's file, in the data directory beside ``projections.sqlite``."""

_LAYOUT = struct.Struct("<qdqqqq")
"""ingesting (count), last ingest (``time.monotonic()``, seconds), waiting readers,
appends (count), failing (0/1), a version word (1)."""

_SIZE = 64


class SharedPacing:
    """The ``projections.pacing.Pacing`` signal, in ``path`` mapped by
    every process on one SQLite data directory (see the module).

    ``time.monotonic()`` is the system-wide ``CLOCK_MONOTONIC`` on Linux and macOS, so
    the last ingest's instant compares across processes. Raises ``OSError`` when the
    file cannot be created or mapped (mode 0600, as the databases: ADR-0010).
    """

    cross_process = False
    """True in a process that folds what others append (``miam-economies project``,
    ``api.service.follow``): its runner then looks at the appends' count every 10 ms while
    idle, since no append of its own wakes it."""

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
