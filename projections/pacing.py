"""Whether the projection runner may fold now: the signal of batches being ingested and
readers waiting (ADR-0011), within one process (``LocalPacing``) or, through
``api.service.pacing.SharedPacing``, across the processes of one SQLite data directory
(ADR-0115)."""

from __future__ import annotations

import time
from typing import Protocol


class Pacing(Protocol):
    """Where the runner learns whether batches are being ingested and readers wait
    (ADR-0011): ``LocalPacing`` in one process, ``api.service.pacing.SharedPacing``
    across the processes of one SQLite data directory (ADR-0115). ``cross_process``: a
    wake-up may come from another process, which the runner looks for while idle."""

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


class LocalPacing:
    """``Pacing`` within one process: plain attributes, written by the event loop's
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
