"""The bound on the answers that only read the store's and the projection's positions:
``/healthz`` and ``/metrics`` answer within the lock timeout plus ``READ_MARGIN``, as a
POST does, whatever the database does (issue 34.4; ADR-0152).

Their reads are bounded where they wait (a connection within the lock timeout, no
retries: ``api.store.postgres.bounded_pool``; SQLite's busy timeout), but a server that
keeps a connection open and never answers holds a query for as long as the connection
lives: past the bound the answer is a 503 and the thread is left to finish alone. A
read has nothing to undo.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.to_thread

from miam_economies.api.service.services import Services
from miam_economies.api.store.application import StoreUnavailable

T = TypeVar("T")

READ_MARGIN = 1.5
"""Seconds past the lock timeout a read of positions may take, within issue 34's bound
(the lock timeout plus 2.5 s) with a second left for the answer. Each read waits at most
the lock timeout (SQLite's busy timeout, a PostgreSQL connection), but ``/healthz`` makes
two or three: when the first waits long (a pool busy to its last connection, a database
slow to answer) the answer is a 503 even though the database is up. The probe says the
service cannot answer in time, which is what it is for."""


async def within_lock_timeout(services: Services, read: Callable[[], T]) -> T:
    """``read()`` in a worker thread, its answer awaited at most ``lock_timeout +
    READ_MARGIN`` seconds (``services.settings``). Raises ``StoreUnavailable`` (503) past
    them, and what ``read`` raises (``PersistenceError``: 503)."""
    limit = services.settings.lock_timeout + READ_MARGIN
    with anyio.move_on_after(limit):
        return await anyio.to_thread.run_sync(read, abandon_on_cancel=True)
    raise StoreUnavailable(f"the database did not answer within {limit:g} s")
