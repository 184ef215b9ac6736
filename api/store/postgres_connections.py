"""What every PostgreSQL connection of ours is, and how long anything waits for one: the
event store's (``api.store.postgres``) and the view's (``api.service.bootstrap``).

* UTF-8 end to end: the client encoding is set to UTF8, and a database of another
  encoding is refused at open (``check_utf8``, called for the view and a store that
  writes; issue 34.3, ADR-0153).
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

from miam_economies.domain.errors import MiamEconomiesError

_LIBRARY_ERRORS: tuple[tuple[type[psycopg.Error], type[PersistenceError]], ...] = (
    (psycopg.InterfaceError, InterfaceError), (psycopg.OperationalError, OperationalError),
    (psycopg.DataError, DataError), (psycopg.IntegrityError, IntegrityError),
    (psycopg.InternalError, InternalError), (psycopg.ProgrammingError, ProgrammingError),
    (psycopg.NotSupportedError, NotSupportedError), (psycopg.DatabaseError, DatabaseError),
    (psycopg.Error, PersistenceError))
"""psycopg's errors and the library's that ``PostgresDatastore.get_connection`` raises for
them, most specific first."""


class DatabaseNotUtf8(MiamEconomiesError):
    """The PostgreSQL database's encoding is not UTF8 (LATIN1, SQL_ASCII...): it cannot
    hold every string the contract accepts, so it is refused at open, before anything is
    stored (issue 34.3; ADR-0153). The message names the encoding and how to create a
    UTF8 database."""


def bounded_pool(datastore: PostgresDatastore) -> None:
    """Make every connection of ``datastore``'s pool follow our rules, from its lock
    timeout ``w`` seconds (ADR-0152): the client encoding is UTF8 (whatever
    ``PGCLIENTENCODING`` says, ADR-0153); a connection attempt gives up after ``w``
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
    pool.kwargs.update(client_encoding="UTF8", connect_timeout=max(2, wait),
                       tcp_user_timeout=wait * 1000)
    pool.timeout = float(wait)
    pool.reconnect_timeout = float(wait)
    if not pool.closed:  # the library's tests share an open datastore between recorders
        pool.drain()


def check_utf8(datastore: PostgresDatastore) -> None:
    """Raise ``DatabaseNotUtf8`` unless the database of ``datastore`` is UTF8 and its
    connections talk UTF8 (``bounded_pool`` asks for it); the library's
    ``PersistenceError`` when no connection can be had (ADR-0153)."""
    with datastore.get_connection() as conn:
        server = conn.info.parameter_status("server_encoding") or "?"
        client = conn.info.parameter_status("client_encoding") or "?"
        name = conn.info.dbname
    if server != "UTF8":
        raise DatabaseNotUtf8(
            f"the PostgreSQL database {name} has encoding {server}, which cannot hold every "
            "string an event may carry: use a UTF8 database (CREATE DATABASE "
            f"{name}_utf8 ENCODING 'UTF8' TEMPLATE template0, or createdb -E UTF8 -T "
            f"template0 {name}_utf8); the events stored here, if any, move with "
            "miam-economies export from this one and miam-economies import into that one")
    if client != "UTF8":
        raise DatabaseNotUtf8(f"the connection to {name} talks {client}, not UTF8: a "
                              "connection pooler or a server setting overrides the "
                              "client_encoding asked for; let clients choose UTF8")


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
