"""``EconomiesRecorder`` on SQLite (the library's ``SQLiteApplicationRecorder``).

Originator ids are ``uuid.hex`` text (NOTES-eventsourcing); notification ids are rowids,
assigned max + 1 under the write lock, never reused once committed and never deleted, so
they are dense and counting up to a position needs no scan (ADR-0008). ``insert_events``
and ``insert_within`` return them, as the library's recorder does (ADR-0122); the append's
``insert_rows`` does not.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from uuid import UUID

from eventsourcing.persistence import StoredEvent
from eventsourcing.sqlite import (
    SQLITE3_DEFAULT_LOCK_TIMEOUT,
    SQLiteAggregateRecorder,
    SQLiteApplicationRecorder,
    SQLiteCursor,
)

from miam_economies.api.store.recorders import EconomiesRecorder, Row


class SQLiteEconomiesRecorder(EconomiesRecorder, SQLiteApplicationRecorder):
    """``EconomiesRecorder`` over the library's SQLite events table."""

    insert_leaves_no_trace = True  # a rolled-back insert draws no rowid (ADR-0117)

    @contextmanager
    def _transaction_within(self, deadline: float | None) -> Iterator[SQLiteCursor]:
        """A write transaction whose wait for the write lock (taken at its first insert)
        ends at ``deadline`` (the configured busy timeout again afterwards; None: the
        configured one throughout)."""
        with self.datastore.transaction(commit=True) as cursor:
            if deadline is None:
                yield cursor
                return
            configured = int((self.datastore.pool.lock_timeout
                              or SQLITE3_DEFAULT_LOCK_TIMEOUT) * 1000)
            cursor.execute(f"PRAGMA busy_timeout = {self.milliseconds_left(deadline)}")
            try:
                yield cursor
            finally:
                cursor.execute(f"PRAGMA busy_timeout = {configured}")

    def insert_within(self, stored_events: Sequence[StoredEvent],
                      deadline: float) -> Sequence[int] | None:
        """See ``EconomiesRecorder.insert_within``: the connection's busy timeout is the
        time left for this one transaction."""
        with self._transaction_within(deadline) as cursor:
            return self._insert_events(cursor, stored_events)

    def insert_rows(self, rows: Sequence[Row], deadline: float | None) -> None:
        """See ``EconomiesRecorder.insert_rows``: the rows as they are, hex ids being what
        this table stores, in one ``executemany`` (the library's statement), bounded by
        ``deadline`` as ``insert_within`` is."""
        params = [(sid, 1, topic, state) for sid, topic, state in rows]
        with self._transaction_within(deadline) as cursor:
            cursor.executemany(self.insert_events_statement, params)

    def _insert_events(self, c: SQLiteCursor, stored_events: Sequence[StoredEvent],
                       **kwargs: Any) -> Sequence[int] | None:
        """One ``executemany``, as the library's aggregate recorder inserts, rather than
        its application recorder's statement per event; returns the notification ids, as
        its application recorder does (``[]`` for no event). They are computed, not read
        back (ADR-0122): the first row's insert takes the write lock, held to the end of
        the transaction, and each row gets the table's largest rowid + 1, so the rows of
        one insert are one run of ids ending at ``last_insert_rowid()``."""
        if not stored_events:
            return []
        SQLiteAggregateRecorder._insert_events(self, c, stored_events, **kwargs)
        c.execute("SELECT last_insert_rowid()")
        last: int = c.fetchone()[0]
        return list(range(last - len(stored_events) + 1, last + 1))

    def _select(self, columns: str, ids: Sequence[UUID]) -> list[Any]:
        return self._select_hex(columns, [i.hex for i in ids])

    def _select_hex(self, columns: str, ids: Sequence[str]) -> list[Any]:
        marks = ",".join("?" * len(ids))
        with self.datastore.transaction(commit=False) as c:
            cursor = c.sqlite_cursor
            cursor.row_factory = None  # plain tuples: an sqlite3.Row per row costs
            cursor.execute(f"SELECT {columns} FROM {self.events_table_name} "
                           f"WHERE originator_id IN ({marks})", ids)
            return cursor.fetchall()

    def stored_states_hex(self, ids: Sequence[str]) -> dict[str, bytes]:
        """See ``EconomiesRecorder.stored_states_hex``: the stored hex text itself."""
        if not ids:
            return {}
        return dict(self._select_hex("originator_id, state", ids))

    def stored_streams(self, ids: Sequence[UUID]) -> set[UUID]:
        """See ``EconomiesRecorder.stored_streams``."""
        if not ids:
            return set()
        return {UUID(row[0]) for row in self._select("originator_id", ids)}

    def stored_states(self, ids: Sequence[UUID]) -> dict[UUID, bytes]:
        """See ``EconomiesRecorder.stored_states``: ids are matched by their hex text
        and given back as the UUIDs asked for, none parsed again."""
        if not ids:
            return {}
        asked = {i.hex: i for i in ids}
        return {asked[r[0]]: r[1] for r in self._select("originator_id, state", ids)}

    def select_states(self, start: int, limit: int) -> list[tuple[int, str, bytes]]:
        """See ``EconomiesRecorder.select_states``: plain tuples (the library's connections
        build an ``sqlite3.Row`` per row), ``state`` as stored."""
        with self.datastore.transaction(commit=False) as c:
            cursor = c.sqlite_cursor
            cursor.row_factory = None
            cursor.execute(f"SELECT rowid, topic, state FROM {self.events_table_name} "
                           "WHERE rowid >= ? ORDER BY rowid LIMIT ?", (start, limit))
            return cursor.fetchall()

    def identity_at(self, notification_id: int) -> str | None:
        """See ``EconomiesRecorder.identity_at``: the rowid's row."""
        with self.datastore.transaction(commit=False) as c:
            c.execute(f"SELECT originator_id, state FROM {self.events_table_name} "
                      "WHERE rowid = ?", (notification_id,))
            row = c.fetchone()
        return None if row is None else self.identity(UUID(row[0]), bytes(row[1]))

    def count_up_to(self, position: int, head: int) -> int:
        """See ``EconomiesRecorder.count_up_to``: dense ids, no query."""
        return min(position, head)
