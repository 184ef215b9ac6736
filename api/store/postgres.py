"""``EconomiesRecorder`` on PostgreSQL (the library's ``PostgresApplicationRecorder``).

Originator ids are a ``uuid`` column. Notification ids come from a sequence: a
rolled-back insert (a lost race) leaves a gap, so events up to a position are counted,
incrementally. The library takes an exclusive lock on the table for each insert, so ids
become visible in order and a gap below the head is never filled later (ADR-0031). Each
insert sends a NOTIFY on the table's channel at commit, which ``listen`` waits for.

This module imports ``psycopg``: the library's factory loads it only when a database URL
names PostgreSQL (``backends.Database.store_env`` names it by topic).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any
from uuid import UUID

from eventsourcing.persistence import PersistenceError, StoredEvent
from eventsourcing.postgres import PostgresAggregateRecorder, PostgresApplicationRecorder
from psycopg import Cursor
from psycopg.rows import DictRow, tuple_row
from psycopg.sql import SQL, Identifier, Literal

from miam_economies.api.store.recorders import EconomiesRecorder

log = logging.getLogger(__name__)

RECONNECT = 1.0
"""Seconds before the listening connection is opened again after an error."""


class PostgresEconomiesRecorder(EconomiesRecorder, PostgresApplicationRecorder):
    """``EconomiesRecorder`` over the library's PostgreSQL events table."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._table = f'"{self.datastore.schema}"."{self.events_table_name}"'
        self._counted = (0, 0)  # (position, events with an id up to it)
        self._counted_lock = threading.Lock()
        self._lock_statement = SQL("LOCK TABLE {0}.{1} IN EXCLUSIVE MODE").format(
            Identifier(self.datastore.schema), Identifier(self.events_table_name))

    def insert_within(self, stored_events: Sequence[StoredEvent],
                      deadline: float) -> Sequence[int] | None:
        """See ``EconomiesRecorder.insert_within``. The library's ``insert_events``
        retries a lock timeout 10 times, 0.2 s apart, each waiting ``lock_timeout``: here
        it is called once, undecorated, and the table's lock waits only the time left."""
        assert not self.datastore.enable_db_functions, "the insert function has its own wait"
        insert = PostgresApplicationRecorder.insert_events.__wrapped__
        return insert(self, stored_events, deadline=deadline)  # type: ignore[no-any-return]

    def _insert_stored_events(self, curs: Cursor[DictRow],
                              stored_events: Sequence[StoredEvent], **kwargs: Any) -> None:
        deadline = kwargs.get("deadline")
        if deadline is None:
            super()._insert_stored_events(curs, stored_events, **kwargs)
            return
        # The library's table lock and NOTIFY, the lock waiting the time left only.
        timeout = Literal(f"{self.milliseconds_left(deadline)}ms")
        curs.execute(SQL("SET LOCAL lock_timeout = {0}").format(timeout))
        curs.execute(self._lock_statement)
        self._notify_channel(curs)
        PostgresAggregateRecorder._insert_stored_events(self, curs, stored_events, **kwargs)

    def _query(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        with self.datastore.get_connection() as conn, \
                conn.cursor(row_factory=tuple_row) as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()

    def stored_streams(self, ids: Sequence[UUID]) -> set[UUID]:
        """See ``EconomiesRecorder.stored_streams``."""
        if not ids:
            return set()
        rows = self._query(f"SELECT originator_id FROM {self._table} "
                           "WHERE originator_id = ANY(%s)", [list(ids)])
        return {row[0] for row in rows}

    def stored_states(self, ids: Sequence[UUID]) -> dict[UUID, bytes]:
        """See ``EconomiesRecorder.stored_states``."""
        if not ids:
            return {}
        rows = self._query(f"SELECT originator_id, state FROM {self._table} "
                           "WHERE originator_id = ANY(%s)", [list(ids)])
        return {r[0]: bytes(r[1]) for r in rows}

    def select_states(self, start: int, limit: int) -> list[tuple[int, str, bytes]]:
        """See ``EconomiesRecorder.select_states``: tuples, ``state`` as ``bytes``."""
        rows = self._query(f"SELECT notification_id, topic, state FROM {self._table} "
                           "WHERE notification_id >= %s ORDER BY notification_id LIMIT %s",
                           [start, limit])
        return [(n, topic, bytes(state)) for n, topic, state in rows]

    def identity_at(self, notification_id: int) -> str | None:
        """See ``EconomiesRecorder.identity_at``."""
        rows = self._query(f"SELECT originator_id, state FROM {self._table} "
                           "WHERE notification_id = %s", [notification_id])
        return None if not rows else self.identity(rows[0][0], bytes(rows[0][1]))

    def count_up_to(self, position: int, head: int) -> int:
        """See ``EconomiesRecorder.count_up_to``. The count up to a position never
        changes (see the module), so it is kept and extended from the last one asked:
        one index range scan over the new ids only."""
        position = min(position, head)
        with self._counted_lock:
            done, count = self._counted
        if position < done:  # another projection, behind: count from the start
            done, count = 0, 0
        if position > done:
            count += self._query(f"SELECT count(*) FROM {self._table} WHERE "
                                 "notification_id > %s AND notification_id <= %s",
                                 [done, position])[0][0]
            with self._counted_lock:
                if position > self._counted[0]:
                    self._counted = (position, count)
        return count

    def listen(self, wake: Callable[[], None], stop: threading.Event) -> None:
        """See ``EconomiesRecorder.listen``: LISTEN on the events table's channel, as the
        library's own subscription does."""
        while not stop.is_set():
            try:
                with self.datastore.get_connection() as conn:
                    conn.execute(SQL("LISTEN {0}").format(Identifier(self.channel_name)))
                    wake()  # whatever was appended before we listened
                    while not stop.is_set():
                        for _ in conn.notifies(timeout=1.0, stop_after=1):
                            wake()
            except (PersistenceError, OSError) as exc:
                log.warning("listening on %s failed (%s); polling until it is back",
                            self.channel_name, exc)
                stop.wait(RECONNECT)
