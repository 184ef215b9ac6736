"""Reading one's own writes: waiting until the projection has folded up to a position
(SPEC, "Interfaces", ``?attendre=1``; ADR-0120), as the library's
``TrackingRecorder.wait`` waits on a view's position."""

from __future__ import annotations

import asyncio
import time

from miam_economies.api.service.services import Services


async def folded_up_to(services: Services, position: int, timeout: float) -> bool:
    """Wait, without blocking the event loop (each look runs in a worker thread), until
    the projection that serves has folded up to ``position`` (a notification id) and
    joined every complete journal line, or ``timeout`` seconds pass.

    Returns whether both were reached. The runner folds now, even during ingestion
    (``IngestFirst.waiting``), and is woken at once (the journal is otherwise looked at
    every poll interval). Polls every 20 ms: folds by other processes send no signal.
    Raises ``PersistenceError``, and ``UnknownFormula`` for a formula this release does not
    know (``ActiveProjection.now``).
    """
    deadline = time.monotonic() + timeout
    with services.pacing.waiting():
        services.runner.wake()
        # SQLite reads: in a worker thread, never on the event loop.
        while not await asyncio.to_thread(_caught_up, services, position):
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.02)
        return True


def _caught_up(services: Services, position: int) -> bool:
    if services.projection.position() < position:
        return False
    return services.journal is None or services.journal.caught_up()
