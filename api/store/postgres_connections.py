"""How long anything waits for a PostgreSQL connection of ours: the event store's
(``api.store.postgres``) and the view's (``api.service.bootstrap``).

* Bounded waits while the database is away (issue 34.4, ADR-0152): a connection attempt,
  a request for a connection and a pool's attempts to reconnect each end within the lock
  timeout (``bounded_pool``); an append's requests by its deadline
  (``bounded_connection``).

This module imports ``psycopg``: it is loaded only for a PostgreSQL database (ADR-0043).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from eventsourcing.persistence import (
    DatabaseError,
    DataError,
    IntegrityError,
    InterfaceError,
    InternalError,
    NotSupportedError,
    OperationalError,
    PersistenceError,
    ProgrammingError,
)
from eventsourcing.postgres import PostgresDatastore

_LIBRARY_ERRORS: tuple[tuple[type[psycopg.Error], type[PersistenceError]], ...] = (
    (psycopg.InterfaceError, InterfaceError), (psycopg.OperationalError, OperationalError),
    (psycopg.DataError, DataError), (psycopg.IntegrityError, IntegrityError),
    (psycopg.InternalError, InternalError), (psycopg.ProgrammingError, ProgrammingError),
    (psycopg.NotSupportedError, NotSupportedError), (psycopg.DatabaseError, DatabaseError),
    (psycopg.Error, PersistenceError))
"""psycopg's errors and the library's that ``PostgresDatastore.get_connection`` raises for
them, most specific first."""


def bounded_pool(datastore: PostgresDatastore) -> None:
    """Make every connection of ``datastore``'s pool follow our rules, from its lock
    timeout ``w`` seconds (ADR-0152): a connection attempt gives up after ``w``
    seconds (libpq's ``connect_timeout``, at least its 2) and sent bytes left
    unacknowledged for ``w`` seconds drop the connection (``tcp_user_timeout``, Linux: a
    network gone); a request for a connection waits at most ``w`` seconds; a pool slot
    that has failed to reconnect for ``w`` seconds is given up, so that once the server is
    back the next request connects at once, not after psycopg_pool's backoff (doubling
    up to minutes). Best before the pool opens: an open pool's connections are made
    again."""
    wait = max(1, int(datastore.lock_timeout or 0) or 5)
    pool = datastore.pool
    assert isinstance(pool.kwargs, dict), "the library passes its settings as a dict"
    pool.kwargs.update(connect_timeout=max(2, wait), tcp_user_timeout=wait * 1000)
    pool.timeout = float(wait)
    pool.reconnect_timeout = float(wait)
    if not pool.closed:  # the library's tests share an open datastore between recorders
        pool.drain()


@contextmanager
def bounded_connection(datastore: PostgresDatastore,
                       deadline: float | None) -> Iterator[Any]:
    """A connection of ``datastore``'s pool, as ``get_connection`` gives it, had by
    ``deadline`` (a ``time.monotonic()`` instant) at the latest; None: within the pool's
    timeout. psycopg's errors are raised as the library's (``OperationalError`` when no
    connection came in time), as ``get_connection`` raises them."""
    if deadline is None:
        with datastore.get_connection() as conn:
            yield conn
        return
    try:
        with datastore.pool.connection(timeout=max(0.001, deadline - time.monotonic())) \
                as conn:
            yield conn
    except psycopg.Error as exc:
        raise next(ours for theirs, ours in _LIBRARY_ERRORS
                   if isinstance(exc, theirs))(str(exc)) from exc
