"""``EconomiesRecorder`` on PostgreSQL (the library's ``PostgresApplicationRecorder``).

Originator ids are a ``uuid`` column. Notification ids come from a sequence: a
rolled-back insert (a lost race) leaves a gap, so events up to a position are counted,
incrementally. Each insert takes the library's exclusive lock on the table, so ids
become visible in commit order and a gap below the head is never filled later
(ADR-0031), and sends a NOTIFY on the table's channel at commit, which ``listen`` waits
for.

An insert is the library's transaction in shape (lock, NOTIFY, insert, commit), but its
rows are encoded as one binary COPY before the lock is taken, instead of being adapted
into a composite array while the lock is held (ADR-0113).

Every connection follows ``postgres_connections``' rules (UTF8, waits bounded by the lock
timeout, an append's by its deadline; ADR-0152).

This module imports ``psycopg``: the library's factory loads it only when a database URL
names PostgreSQL (``backends.Database.store_env`` names it by topic).
"""

from __future__ import annotations

import inspect
import logging
import struct
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any
from uuid import UUID

from eventsourcing.persistence import (
    DataError,
    InterfaceError,
    OperationalError,
    PersistenceError,
    StoredEvent,
)
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore
from eventsourcing.utils import retry
from psycopg.rows import tuple_row
from psycopg.sql import SQL, Composed, Identifier, Literal

from miam_economies.api.store.postgres_connections import bounded_connection, bounded_pool
from miam_economies.api.store.recorders import EconomiesRecorder

log = logging.getLogger(__name__)

RECONNECT = 1.0
"""Seconds before the listening connection is opened again after an error."""

# PostgreSQL's binary COPY format ("COPY", "Binary Format" in its manual): a signature,
# 32-bit flags and header-extension length (both 0); per row a 16-bit field count, then
# each field as a 32-bit length and its bytes; a field count of -1 ends the data.
_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + bytes(8)
_COPY_TRAILER = struct.pack("!h", -1)
_ROW_START = struct.Struct("!hi16siq")  # 4 fields; a uuid's 16 bytes; a bigint's 8
_LENGTH = struct.Struct("!i")


def copy_data(stored_events: Sequence[StoredEvent], encoding: str = "utf-8") -> bytes:
    """``stored_events`` as the data of one ``COPY ... (originator_id, originator_version,
    topic, state) FROM STDIN (FORMAT BINARY)`` into the library's events table with a
    ``uuid`` originator id: the same column values the library's insert stores (ADR-0113).

    ``encoding``: the connection's client encoding (Python's name, ``conn.info.encoding``),
    in which PostgreSQL reads binary text fields. Raises ``DataError`` (the library's)
    for an originator id that is not a UUID or a version outside bigint, as the database
    would for the library's insert."""
    topics: dict[str, bytes] = {}  # a batch has a few topics: each encoded once
    parts = [_COPY_HEADER]
    try:
        for event in stored_events:
            topic = topics.get(event.topic)
            if topic is None:
                text = event.topic.encode(encoding)
                topic = topics[event.topic] = _LENGTH.pack(len(text)) + text
            oid = event.originator_id
            uuid = oid if isinstance(oid, UUID) else UUID(oid)
            parts += (_ROW_START.pack(4, 16, uuid.bytes, 8, event.originator_version),
                      topic, _LENGTH.pack(len(event.state)), event.state)
    except (ValueError, struct.error) as exc:
        raise DataError(f"event not storable: {exc}") from exc
    parts.append(_COPY_TRAILER)
    return b"".join(parts)


class PostgresEconomiesRecorder(EconomiesRecorder, PostgresApplicationRecorder):
    """``EconomiesRecorder`` over the library's PostgreSQL events table, inserting with
    one binary COPY whose data is built before the table's lock is taken (ADR-0113).

    Needs the library's default settings for what it writes: ``uuid`` originator ids
    (stream ids are ``uuid5``, ADR-0002) and no database functions; raises
    ``ValueError`` otherwise."""

    def __init__(self, datastore: PostgresDatastore, *args: Any, **kwargs: Any):
        bounded_pool(datastore)  # before the library's recorder opens its pool
        super().__init__(datastore, *args, **kwargs)
        if self.datastore.originator_id_type != "uuid" or self.datastore.enable_db_functions:
            raise ValueError("PostgresEconomiesRecorder writes uuid originator ids, "
                             "without the library's database functions (ADR-0113)")
        self._table = f'"{self.datastore.schema}"."{self.events_table_name}"'
        self._until = threading.local()  # .deadline: this thread's waits end then
        self._counted = (0, 0)  # (position, events with an id up to it)
        self._counted_lock = threading.Lock()
        table = SQL("{0}.{1}").format(Identifier(self.datastore.schema),
                                      Identifier(self.events_table_name))
        # The library's lock and NOTIFY (``_lock_table``, ``_notify_channel``), sent in
        # one round trip after the per-call ``SET LOCAL lock_timeout``.
        self._lock_and_notify = SQL("; LOCK TABLE {0} IN EXCLUSIVE MODE; NOTIFY {1}").format(
            table, Identifier(self.channel_name))
        self._copy_statement = SQL(
            "COPY {0} (originator_id, originator_version, topic, state) "
            "FROM STDIN (FORMAT BINARY)").format(table)
        self._last_id_statement = SQL(
            "SELECT currval(pg_get_serial_sequence({0}, 'notification_id'))").format(
            Literal(self._table))

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def insert_events(self, stored_events: Sequence[StoredEvent],
                      **kwargs: Any) -> Sequence[int] | None:
        """The library's ``ApplicationRecorder.insert_events``: all of ``stored_events``
        in one transaction, or none; their notification ids in order (None for an empty
        sequence, as the library). Like the library it waits ``POSTGRES_LOCK_TIMEOUT``
        seconds for the table's lock (0: no limit) and tries 10 times, 0.2 s apart, on an
        ``OperationalError`` or ``InterfaceError``. Raises ``IntegrityError`` when an
        (originator_id, originator_version) is stored already or repeated, and the
        library's other ``PersistenceError`` subclasses as its datastore maps psycopg's
        errors. ``kwargs`` are ignored (the library's process recorders' ``tracking``
        has no use here)."""
        return self._copy_insert(stored_events, None)

    def insert_within(self, stored_events: Sequence[StoredEvent],
                      deadline: float) -> Sequence[int] | None:
        """See ``EconomiesRecorder.insert_within``: ``insert_events`` tried once, the
        table's lock waiting only the time left until ``deadline`` (``SET LOCAL
        lock_timeout``; ADR-0053). Raises ``OperationalError`` when the lock was not had
        in time, ``IntegrityError`` as ``insert_events``."""
        return self._copy_insert(stored_events, deadline)

    def _copy_insert(self, stored_events: Sequence[StoredEvent],
                     deadline: float | None) -> list[int] | None:
        if not stored_events:
            return None
        # psycopg's errors raised inside are mapped by _connection (the datastore's
        # get_connection's mapping) to the library's (IntegrityError for a unique
        # violation, OperationalError for a lock timeout...), and conn.transaction()
        # rolls the insert back whole.
        with self._connection() as conn:
            # The rows, encoded now: the other writers wait on the lock only for the
            # server's work, not for this process's Python (ADR-0113).
            data = copy_data(stored_events, conn.info.encoding)
            wait = (int(self.datastore.lock_timeout * 1000) if deadline is None
                    else self.milliseconds_left(deadline))
            lock = SQL("SET LOCAL lock_timeout = {0}").format(Literal(f"{wait}ms"))
            with conn.transaction(), conn.cursor(row_factory=tuple_row) as cursor:
                cursor.execute(Composed([lock, self._lock_and_notify]))
                with cursor.copy(self._copy_statement) as copy:
                    copy.write(data)
                row = cursor.execute(self._last_id_statement).fetchone()
        # COPY returns no ids. The table's EXCLUSIVE lock keeps every other insert,
        # the library's or a plain INSERT (ROW EXCLUSIVE), from drawing on the sequence
        # until this commits, and bigserial's sequence caches 1 value: the COPY drew
        # the last len(stored_events) values, in row order, ending at currval.
        assert row is not None
        last = int(row[0])
        return list(range(last - len(stored_events) + 1, last + 1))

    def max_notification_id(self) -> int | None:
        """The library's, tried once: its retries (10, each waiting for a connection up to
        the pool's timeout) held ``/healthz`` for 92 s while the database was away. A
        read fails within the lock timeout and its caller asks again (ADR-0152). Raises
        ``PersistenceError``."""
        read = inspect.unwrap(PostgresApplicationRecorder.max_notification_id)
        return read(self)  # type: ignore[no-any-return]

    @contextmanager
    def waiting_until(self, deadline: float | None) -> Iterator[None]:
        """See ``EconomiesRecorder.waiting_until``: this thread's connections are had by
        ``deadline`` or not at all (``OperationalError``)."""
        previous = getattr(self._until, "deadline", None)
        self._until.deadline = deadline
        try:
            yield
        finally:
            self._until.deadline = previous

    def _connection(self) -> AbstractContextManager[Any]:
        return bounded_connection(self.datastore, getattr(self._until, "deadline", None))

    def _query(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        with self._connection() as conn, conn.cursor(row_factory=tuple_row) as cursor:
            cursor.execute(sql, params)
            rows: list[tuple[Any, ...]] = cursor.fetchall()
            return rows

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
