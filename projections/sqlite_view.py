"""``BilanView`` in an SQLite file of its own, beside the event store's (ADR-0004).

The statements are ``projections.sql_view``'s and its parts', shared with PostgreSQL;
here are SQLite's own: the file's tuning, its schema version (``PRAGMA user_version``),
the column types, and its dialect (``SQLITE``: token sums past 2^63 as decimal text, the
planner hint of the conservation query, the chunked reads). Writes start with the tracking
(or journal offset) row, which takes the write lock before any read (NOTES-eventsourcing,
pitfalls).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from eventsourcing.persistence import IntegrityError
from eventsourcing.sqlite import (
    SQLiteConnection,
    SQLiteConnectionPool,
    SQLiteCursor,
    SQLiteDatastore,
    SQLiteTrackingRecorder,
)

from miam_economies.projections.sql_dialect import SqlDialect
from miam_economies.projections.sql_schema import (
    REBUILT_ON_UPGRADE,
    TOKEN_LIMIT,
    view_tables,
)
from miam_economies.projections.sql_view import SqlBilanView
from miam_economies.projections.view import ProjectionMismatch

SCHEMA_VERSION = 14
"""``PRAGMA user_version`` of the view's tables: an older file is rebuilt from the store, a
newer one (written by a later release) is refused rather than wiped. 5: token sums past
2^63 (ADR-0051), the journal's fingerprint (ADR-0052);
6: the classement's samples (ADR-0073); 7: a pilotage covers each distinct demande once
(ADR-0101), the store's identity at each position (ADR-0105); 8: groups and models by
day, and each demande's figures by day (ADR-0133); 9: the events set aside
(ADR-0135), when the fold last advanced (ADR-0136), the journal values left out; 10:
each demande's session, the samples' sums over sessions (ADR-0166); 11: each demande's
day, the samples per day and their clusters per (session, day) (ADR-0167); 12: Claude
Code's replies folded from the relevés, and their count (ADR-0173); 13: the samples'
per-session sums of the net's leverage correction (ADR-0175); 14: each session's figures
and each subagent's pilotages in it (ADR-0176), the sessions both sources saw and their
replies summed per agent (ADR-0177)."""

CACHE_KIB = 65_536
"""Page cache of each projections connection, KiB (SQLite's default is 2,000)."""

CHECKPOINT_PAGES = 20_000
"""WAL pages between automatic checkpoints of the projections file (default 1,000)."""


def _tokens_param(value: int) -> int | str:
    # SQLite's integers stop at 2^63 and turn into REAL past it: a sum that may get there
    # is bound as decimal text, in a column with no type affinity (ADR-0051).
    return value if -TOKEN_LIMIT < value < TOKEN_LIMIT else str(value)


def _big_add(stored: int | str, added: int | str) -> int | str:
    """The exact sum of two token sums, each an int or decimal text: an int below
    ``TOKEN_LIMIT`` in magnitude, decimal text from there (``SQLITE.add_tokens``' slow path)."""
    return _tokens_param(int(stored) + int(added))


def _stream(c: SQLiteCursor, query: str, params: Sequence[Any],
            size: int) -> Iterator[list[Any]]:
    # A second cursor of c's connection, read size rows at a time (SQLite steps the
    # statement as rows are fetched).
    reader = c.sqlite_cursor.connection.cursor()
    try:
        reader.execute(query, params)
        while rows := reader.fetchmany(size):
            yield rows
    finally:
        reader.close()


def _overflowed(error: Exception) -> bool:
    # SQLite's integer sum() past 2^63: "integer overflow".
    return isinstance(error, sqlite3.OperationalError) and "overflow" in str(error)


SQLITE = SqlDialect(
    tracking_table="tracking",
    stream=_stream,
    # Two sums below 2^62 in magnitude add in SQL; any other pair (one held as text
    # already) goes to big_add, in Python: exact at any size (ADR-0051).
    add_tokens=(f"CASE WHEN abs({{t}}.{{c}}) < {TOKEN_LIMIT} AND abs(excluded.{{c}}) < "
                f"{TOKEN_LIMIT} THEN {{t}}.{{c}} + excluded.{{c}} "
                "ELSE big_add({t}.{c}, excluded.{c}) END"),
    tokens=_tokens_param,
    exact_sums=False,  # sum() overflows past 2^63: the groups' rebuild checks first
    overflowed=_overflowed,
    # CROSS JOIN fixes the loop order: the few waiting demandes (partial index) first,
    # then their links; left to itself the planner scans every link.
    en_attente=("SELECT count(DISTINCT l.event_id) FROM bilan_demandes AS d "
                "INDEXED BY bilan_demandes_en_attente CROSS JOIN bilan_liens AS l "
                "ON l.projection = d.projection AND l.demande_id = d.demande_id "
                "AND l.client = d.client WHERE d.projection = ? AND d.delegations = 0"),
)
"""SQLite's ``SqlDialect`` for the bilan view."""


class _ViewConnectionPool(SQLiteConnectionPool):
    def _create_connection(self) -> SQLiteConnection:
        connection = super()._create_connection()
        db = connection._sqlite_conn
        # Derived data: a commit lost to a power cut loses the page and its tracking
        # position together, and the runner folds them again (ADR-0011).
        db.execute("PRAGMA synchronous=NORMAL")
        # A fold upserts rows all over the per-demande tables: keep their B-tree pages in
        # memory, and checkpoint the WAL less often (each checkpoint rewrites and syncs).
        db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        db.execute(f"PRAGMA wal_autocheckpoint={CHECKPOINT_PAGES}")
        db.create_function("big_add", 2, _big_add, deterministic=True)
        return connection


class ViewDatastore(SQLiteDatastore):
    """The library's ``SQLiteDatastore`` (WAL) tuned for the projections' file: NORMAL
    synchronisation (a commit writes the WAL without an fsync), a page cache of
    ``CACHE_KIB`` KiB per connection, and a WAL checkpoint every ``CHECKPOINT_PAGES``
    pages. Together with replay pages of 20,000 events they took a 300,000-event replay
    from 15,800 to 30,500 events/s (ADR-0011). The event store keeps the library's FULL
    (ADR-0010). ``db_name``: the file's path; ``lock_timeout``: seconds. Raises as the
    library's."""

    def __init__(self, db_name: str, *, lock_timeout: int | None = None):
        super().__init__(db_name, lock_timeout=lock_timeout)
        self.pool.close()
        self.pool = _ViewConnectionPool(db_name=db_name, lock_timeout=lock_timeout)


class SQLiteBilanView(SQLiteTrackingRecorder, SqlBilanView):
    """``BilanView`` on an ``eventsourcing`` ``SQLiteDatastore`` (see ``BilanView``)."""

    def __init__(self, datastore: SQLiteDatastore):
        super().__init__(datastore)
        self.compose(SQLITE)

    def construct_create_table_statements(self) -> list[str]:
        """The library's tracking table, then the view's tables and indexes; token sums in
        columns without a type, so decimal text stays text (SQLite's affinity rules)."""
        return [*super().construct_create_table_statements(),
                *view_tables("TEXT", "INTEGER", "", "INTEGER", " WITHOUT ROWID")]

    @contextmanager
    def _write(self) -> Iterator[SQLiteCursor]:
        with self.datastore.transaction(commit=True) as c:
            yield c

    @contextmanager
    def _read_transaction(self) -> Iterator[SQLiteCursor]:
        with self.datastore.transaction(commit=False) as c:
            yield c

    def create_table(self) -> None:
        """Create the tables if missing, after dropping a view of an older schema version
        (derived data: it is rebuilt from the store). Raises ``ProjectionMismatch`` for a
        file of a newer version. Two processes starting on a fresh directory race to insert
        the library's ``__migration__`` row: the loser retries."""
        with self.datastore.transaction(commit=False) as c:
            c.execute("PRAGMA user_version")
            version = c.fetchone()[0]
        if version == SCHEMA_VERSION:
            # Nothing to migrate: no write, so no lock to wait for while a runner folds.
            self._create_missing_tables()
            return
        with self.datastore.transaction(commit=True) as c:
            c.execute("PRAGMA user_version")
            version = c.fetchone()[0]
            if version > SCHEMA_VERSION:
                raise ProjectionMismatch(
                    f"the projections file has schema {version}, newer than this release's "
                    f"{SCHEMA_VERSION}: upgrade miam-economies, or delete projections.sqlite")
            if 0 < version < SCHEMA_VERSION:
                for table in REBUILT_ON_UPGRADE:
                    c.execute(f"DROP TABLE IF EXISTS {table}")
                c.execute("UPDATE bilan_state SET evenements = 0")
                c.execute("DELETE FROM tracking WHERE application_name LIKE 'bilan:%'")
            c.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        self._create_missing_tables()

    def _create_missing_tables(self) -> None:
        try:
            super().create_table()
        except IntegrityError:
            super().create_table()
