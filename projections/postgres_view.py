"""``BilanView`` in PostgreSQL, beside the event store's tables (ADR-0031).

The statements are ``projections.sql_view``'s and its parts', shared with SQLite; here
are PostgreSQL's own (its ``SqlDialect``: exact ``numeric`` sums, the schema-qualified
tracking table, server-side cursors for long reads):

* Column types: ``text COLLATE "C"`` (keys compare by code point, as Python and SQLite
  do: the smallest delegation id wins, groups come in the same order), ``bigint``,
  ``boolean``.
* Placeholders: the shared ``?`` become psycopg's ``%s`` (``_QmarkCursor``).
* Writers are serialised by a transaction-scoped advisory lock, as SQLite's write lock
  serialises them. Under READ COMMITTED, a page fold and a journal join running at once
  could each miss the other's uncommitted rows (a demande's figures would never reach its
  journal group); one writer at a time rules that out. The tracking compare-and-set stays
  the arbiter between runners (ADR-0007): the second runner's ``UPDATE ... WHERE
  notification_id = previous`` matches nothing once the first has committed.
* Reads run in one REPEATABLE READ, READ ONLY transaction: one snapshot, as SQLite's.
* Every lock a view transaction waits for (the advisory lock, a table lock) is waited for
  at most the datastore's lock timeout, as SQLite's busy timeout bounds its view
  (ADR-0104).
* The schema version lives in ``bilan_schema`` (SQLite has ``PRAGMA user_version``).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from eventsourcing.postgres import PostgresDatastore, PostgresTrackingRecorder
from psycopg.rows import tuple_row
from psycopg.sql import SQL

from miam_economies.projections.sql_dialect import SqlDialect
from miam_economies.projections.sql_schema import REBUILT_ON_UPGRADE, view_tables
from miam_economies.projections.sql_view import SqlBilanView
from miam_economies.projections.view import ProjectionMismatch

SCHEMA_VERSION = 14
"""Version of the view's tables, in ``bilan_schema`` (the SQLite view's numbering): older
tables are dropped and the projections rebuilt from the store, as on SQLite."""

WRITE_LOCK = 0x6D69616D  # "miam"
"""Key of the advisory lock every view write transaction takes first (per database)."""

TRACKING_TABLE = "bilan_tracking"
"""The library's tracking table of the view (positions by projection name)."""


@lru_cache(maxsize=512)
def _qmark(query: str) -> str:
    return query.replace("%", "%%").replace("?", "%s")


class _QmarkCursor:
    """A psycopg cursor taking the shared statements' ``?`` placeholders; the library's
    own composed statements (``psycopg.sql``) pass through unchanged."""

    def __init__(self, cursor: Any):
        self._cursor = cursor

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> _QmarkCursor:
        if isinstance(query, str) and params is not None:
            query = _qmark(query)
        self._cursor.execute(query, params, **kwargs)
        return self

    def executemany(self, query: str, rows: Sequence[Any]) -> None:
        rows = list(rows)
        if rows:
            self._cursor.executemany(_qmark(query), rows)

    def fetchone(self) -> Any:
        return self._cursor.fetchone()

    def fetchall(self) -> list[Any]:
        rows: list[Any] = self._cursor.fetchall()
        return rows

    def stream(self, query: str, params: Sequence[Any], size: int) -> Iterator[list[Any]]:
        """The rows of ``query`` in lists of at most ``size``, through a server-side cursor
        of this cursor's transaction: psycopg's ordinary cursor receives the whole
        result before the first row is read."""
        with self._cursor.connection.cursor(name="miam_stream",
                                            row_factory=tuple_row) as reader:
            reader.execute(_qmark(query), params)
            while rows := reader.fetchmany(size):
                yield rows


def _stream(c: _QmarkCursor, query: str, params: Sequence[Any],
            size: int) -> Iterator[list[Any]]:
    return c.stream(query, params, size)


class PostgresBilanView(PostgresTrackingRecorder, SqlBilanView):
    """``BilanView`` on an ``eventsourcing`` ``PostgresDatastore`` (see ``BilanView``):
    the library's tracking table ``bilan_tracking`` and the view's tables, in the
    datastore's database (default schema)."""

    def __init__(self, datastore: PostgresDatastore):
        super().__init__(datastore, tracking_table_name=TRACKING_TABLE)
        statements = view_tables('text COLLATE "C"', "bigint", "numeric", "boolean", "")
        statements.append("CREATE TABLE IF NOT EXISTS bilan_schema (cle text PRIMARY KEY, "
                          "version bigint NOT NULL)")
        self._view_statements = [SQL(s).format() for s in statements]
        self.sql_create_statements += self._view_statements
        self.compose(SqlDialect(
            tracking_table=f'"{self.datastore.schema}"."{self.tracking_table_name}"',
            stream=_stream))

    def create_table(self) -> None:
        """Create the tables if missing and record the schema version; tables of an older
        version are dropped and created again, in one transaction (derived data: the
        projections are rebuilt from the store); raises ``ProjectionMismatch`` for tables
        of a newer version. Processes starting at once may race on ``CREATE TABLE IF NOT
        EXISTS`` (PostgreSQL then raises a unique violation on its catalog, a
        ``PersistenceError``): the caller tries again (``bootstrap._opened``, every
        attempt of which runs the whole of this again: each step is idempotent)."""
        super().create_table()
        with self._read() as c:
            c.execute("SELECT version FROM bilan_schema WHERE cle = 'bilan'", ())
            row = c.fetchone()
        if row is not None and row[0] == SCHEMA_VERSION:
            return  # nothing to migrate: no write, so no lock to wait for (ADR-0104)
        with self._write() as c:  # the advisory lock: one process migrates
            c.execute("INSERT INTO bilan_schema VALUES ('bilan', ?) ON CONFLICT DO NOTHING",
                      (SCHEMA_VERSION,))
            c.execute("SELECT version FROM bilan_schema WHERE cle = 'bilan'", ())
            version = c.fetchone()[0]
            if version < SCHEMA_VERSION:
                for table in REBUILT_ON_UPGRADE:
                    c.execute(f"DROP TABLE IF EXISTS {table} CASCADE")
                c.execute("UPDATE bilan_state SET evenements = 0")
                c.execute(f"DELETE FROM {self.dialect.tracking_table} "
                          "WHERE application_name LIKE 'bilan:%'")
                for statement in self._view_statements:
                    c.execute(statement)
                c.execute("UPDATE bilan_schema SET version = ?", (SCHEMA_VERSION,))
        if version > SCHEMA_VERSION:
            raise ProjectionMismatch(
                f"the projection tables have schema {version}, newer than this release's "
                f"{SCHEMA_VERSION}: upgrade miam-economies")

    def max_tracking_id(self, application_name: str) -> int | None:
        """The library's, tried once: its retries (10, each waiting for a connection up to
        the pool's timeout) held ``/healthz`` for 92 s while the database was away. A
        read fails within the lock timeout and its caller asks again (ADR-0152)."""
        read = inspect.unwrap(PostgresTrackingRecorder.max_tracking_id)
        return read(self, application_name)  # type: ignore[no-any-return]

    def _lock_timeout(self) -> str:
        # Every lock a view transaction waits for (the advisory lock above all) is waited
        # for at most the datastore's lock timeout, as SQLite's busy timeout bounds its
        # view: past it the statement fails, and a reader shows what it can (ADR-0104).
        return f"SET LOCAL lock_timeout = '{int(self.datastore.lock_timeout or 0) * 1000}ms'"

    @contextmanager
    def _write(self) -> Iterator[_QmarkCursor]:
        with self.datastore.get_connection() as conn, conn.transaction(), \
                conn.cursor(row_factory=tuple_row) as cursor:
            cursor.execute(self._lock_timeout())
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
            yield _QmarkCursor(cursor)

    @contextmanager
    def _read_transaction(self) -> Iterator[_QmarkCursor]:
        with self.datastore.get_connection() as conn, conn.transaction(), \
                conn.cursor(row_factory=tuple_row) as cursor:
            # One round trip: statements without parameters may share it.
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY; "
                           + self._lock_timeout())
            yield _QmarkCursor(cursor)
