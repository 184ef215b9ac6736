"""The event store: an ``eventsourcing`` application that appends each new received event.

One stream per received event, originator id ``uuid5`` of its stable id, version 1
(ADR-0002). The store's (originator_id, originator_version) uniqueness is the arbiter of
duplicates: a batch is filtered against what is stored, then inserted in one transaction;
if a concurrent writer stored one of its ids in between, the insert rolls back whole and
the batch is filtered again (NOTES-eventsourcing, "Appending one event per stream").

Appends go to the library's lower layer: stored events are built straight from the
validated payloads and handed to the recorder's ``insert_events``, encoded by
``OrjsonTranscoder``; ``Application.save`` would build a domain event object per event and
encode it with stdlib json, about 3x the cost for the same rows (ADR-0011).

The two backends differ in three places only, kept in ``_SQLiteStreams`` and
``_PostgresStreams``: how originator ids are passed and read back (SQLite keeps
``uuid.hex`` text, PostgreSQL a ``uuid`` column), the placeholders, and how events up to a
position are counted (ADR-0031).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import orjson
from eventsourcing.application import Application
from eventsourcing.persistence import (
    ConnectionPoolClosedError,
    IntegrityError,
    PersistenceError,
    StoredEvent,
    Transcoder,
)
from eventsourcing.postgres import PostgresApplicationRecorder
from eventsourcing.utils import Environment, EnvType
from psycopg.rows import tuple_row

from miam_economies.api.store.backends import SQLITE, Database
from miam_economies.api.store.transcoder import OrjsonTranscoder
from miam_economies.domain.events import (
    CONFLIT_TOPIC,
    TOPICS,
    Received,
    canonical,
    conflict_stream_id,
    stream_id,
)
from miam_economies.domain.instants import iso_utc

log = logging.getLogger(__name__)

SAVE_ATTEMPTS = 5
"""Times a batch is re-filtered and saved again after losing a race to another writer."""



class StoreUnavailable(Exception):
    """The event store could not durably store a batch (locked, disk full, I/O error...).

    Nothing of the batch is stored. Mapped to 503 at the HTTP edge: the plugin keeps the
    batch and retries (contract, "Réponses attendues").
    """


@dataclass(frozen=True)
class Appended:
    """Outcome of one append: ``recus`` newly stored, ``doublons`` ignored (ADR-0003).

    ``recus + doublons`` is the batch size; ``conflits``: doublons of this batch whose
    content differs from the version kept (ADR-0003, SPEC "Wire contract"). The bilan
    counts differing versions once each, however often they are re-sent.
    """

    recus: int
    doublons: int
    conflits: int = 0


def sqlite_env(path: Path, lock_timeout: int = 5) -> dict[str, str]:
    """The ``eventsourcing`` settings of an embedded SQLite store at ``path``
    (``api.backends.Database.store_env`` for either backend). ``lock_timeout`` in seconds.
    """
    return Database(SQLITE, path=path).store_env(lock_timeout)


class _SQLiteStreams:
    """Stream queries on SQLite: originator ids as ``uuid.hex`` text, ``?`` placeholders
    (NOTES-eventsourcing); notification ids are dense rowids (ADR-0008)."""

    def __init__(self, recorder: Any):
        self.recorder = recorder

    def select(self, columns: str, ids: list[UUID]) -> list[tuple[Any, ...]]:
        """``(originator_id, *columns)`` of the stored events of streams ``ids``."""
        marks = ",".join("?" * len(ids))
        with self.recorder.datastore.transaction(commit=False) as cursor:
            cursor.execute(
                f"SELECT originator_id, {columns} FROM {self.recorder.events_table_name} "
                f"WHERE originator_id IN ({marks})", [i.hex for i in ids])
            return [(UUID(row[0]), *tuple(row)[1:]) for row in cursor.fetchall()]

    def count_up_to(self, position: int, head: int) -> int:
        """Notification ids 1..head are dense rowids, assigned max + 1 under the write
        lock, never reused once committed, never deleted: no scan (ADR-0008)."""
        return min(position, head)


class _PostgresStreams:
    """Stream queries on PostgreSQL: a ``uuid`` column, ``%s`` placeholders. Notification
    ids come from a sequence: a rolled-back insert (a lost race) leaves a gap, so events
    are counted, incrementally (ADR-0031)."""

    def __init__(self, recorder: Any):
        self.recorder = recorder
        self.table = f'"{recorder.datastore.schema}"."{recorder.events_table_name}"'
        self._counted = (0, 0)  # (position, events with an id up to it)
        self._lock = threading.Lock()

    def _query(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        with self.recorder.datastore.get_connection() as conn, \
                conn.cursor(row_factory=tuple_row) as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()

    def select(self, columns: str, ids: list[UUID]) -> list[tuple[Any, ...]]:
        """``(originator_id, *columns)`` of the stored events of streams ``ids``."""
        return self._query(f"SELECT originator_id, {columns} FROM {self.table} "
                           "WHERE originator_id = ANY(%s)", [ids])

    def count_up_to(self, position: int, head: int) -> int:
        """Events with a notification id up to ``min(position, head)``. The library takes
        an exclusive lock on the table for each insert, so ids become visible in order
        and an id at or below the head is never filled in later (a gap stays a gap): the
        count up to a position never changes, and is kept and extended from the last one
        asked (one index range scan over the new ids only)."""
        position = min(position, head)
        with self._lock:
            done, count = self._counted
        if position < done:  # another projection, behind: count from the start
            done, count = 0, 0
        if position > done:
            count += self._query(f"SELECT count(*) FROM {self.table} WHERE "
                                 "notification_id > %s AND notification_id <= %s",
                                 [done, position])[0][0]
            with self._lock:
                if position > self._counted[0]:
                    self._counted = (position, count)
        return count


def payload_text(payload: Any) -> str:
    """The event as received, as compact JSON text (non-ASCII unescaped): what a stored
    event's ``payload`` holds. orjson, or stdlib json for an integer past 64 bits."""
    try:
        return orjson.dumps(payload).decode()
    except TypeError:  # orjson.JSONEncodeError: an integer it cannot hold
        return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


class EventStore(Application[UUID]):
    """The service's event store (``eventsourcing`` application named ``Economies``).

    ``env``: the library's persistence settings (``Database.store_env``: SQLite or
    PostgreSQL); ``clock`` gives the
    ``recu_le`` of appended events (UTC datetimes). Listeners added with ``on_append`` are
    called, without arguments, after each append that stored something, to wake a
    projection runner.
    """

    name = "Economies"

    def __init__(self, env: dict[str, str],
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)):
        super().__init__(env=env)
        self._clock = clock
        self._listeners: list[Callable[[], None]] = []
        self._listeners_lock = threading.Lock()
        # One appender at a time in this process: concurrent writers would meet on
        # SQLite's write lock and back off in its busy handler's sleeps (1, 2, 5, 10 ms...),
        # which cost more than waiting here (ADR-0011). Other processes still race; the
        # store's uniqueness and the retry below arbitrate them.
        self._append_lock = threading.Lock()
        streams = (_PostgresStreams if isinstance(self.recorder, PostgresApplicationRecorder)
                   else _SQLiteStreams)
        self._streams: _SQLiteStreams | _PostgresStreams = streams(self.recorder)

    def construct_transcoder(self) -> Transcoder:
        """``OrjsonTranscoder``: the library's stored format, about 3x faster (ADR-0011)."""
        return OrjsonTranscoder()

    def construct_env(self, name: str, env: EnvType | None = None) -> Environment:
        """Only the settings given, never ``os.environ``: the library lets a prefixed
        variable (``ECONOMIES_SQLITE_DBNAME``) override them, which could silently move the
        store to memory and acknowledge events that are not durable."""
        return Environment(name, dict(env or {}))

    def on_append(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` after every append that stored at least one event."""
        with self._listeners_lock:
            self._listeners.append(listener)

    def append(self, evenements: Sequence[Received], *,
               recus_le: Sequence[str] | None = None) -> Appended:
        """Store the batch's new events in one transaction; count the rest as doublons.

        ``evenements`` must have passed ``domain.validation``. A repeated id (already
        stored, or earlier in the same batch) is a doublon; the first stored version wins.
        ``recus_le``: one ISO 8601 UTC string per event of ``evenements``
        (``2026-10-30T09:12:04.512Z``), kept as that event's ``recu_le`` instead of the
        clock's time: an import keeps the time the events were first received (ADR-0022).

        Raises ``StoreUnavailable`` when the store cannot take the batch; then nothing of
        it is stored; ``ValueError`` when ``recus_le`` is not one per event.
        """
        if recus_le is not None and len(recus_le) != len(evenements):
            raise ValueError(f"{len(recus_le)} recu_le for {len(evenements)} events")
        # By identity: two equal events of one batch may carry different times.
        stamps = {id(ev): at for ev, at in zip(evenements, recus_le or (), strict=False)}
        first_seen: dict[UUID, Received] = {}
        repeats: list[tuple[UUID, Received]] = []
        for ev in evenements:
            sid = stream_id(ev.id)
            if first_seen.setdefault(sid, ev) is not ev:
                repeats.append((sid, ev))
        with self._append_lock:
            return self._append(evenements, first_seen, stamps, repeats)

    def _append(self, evenements: Sequence[Received], first_seen: dict[UUID, Received],
                stamps: dict[int, str], repeats: list[tuple[UUID, Received]]
                ) -> Appended:
        try:
            for _ in range(SAVE_ATTEMPTS):
                stored = self.stored(list(first_seen))
                new = [(sid, ev) for sid, ev in first_seen.items() if sid not in stored]
                conflicts = self._conflicts(first_seen, stored, repeats)
                unseen = set(conflicts) - self.stored(list(conflicts))
                try:
                    if new or unseen:
                        self.recorder.insert_events(
                            [*self._new_events(new, stamps),
                             *self._conflict_events(conflicts, unseen, stamps)])
                except IntegrityError:
                    # Another writer stored one of these ids since the check: the whole
                    # insert rolled back; filter again against what is now stored.
                    continue
                if new or unseen:
                    self._notify_listeners()
                differing = sum(len(versions) for versions in conflicts.values())
                return Appended(len(new), len(evenements) - len(new), differing)
        except (PersistenceError, ConnectionPoolClosedError) as exc:
            log.warning("event store unavailable: %s", exc)
            raise StoreUnavailable(str(exc)) from None
        raise StoreUnavailable(f"lost the race to other writers {SAVE_ATTEMPTS} times")

    def _conflicts(self, first_seen: dict[UUID, Received], stored: set[UUID],
                   repeats: list[tuple[UUID, Received]]
                   ) -> dict[UUID, list[tuple[Received, str]]]:
        """The doublons whose content differs from the version kept (the stored one, or
        the batch's first occurrence), by conflict stream: ``[(event, kept version's
        client), ...]`` (one entry per differing doublon of the batch).
        Only doublons are canonicalised and compared (one read of the stored payloads of
        those already stored), so a batch of new events costs nothing here."""
        candidates = [(sid, ev) for sid, ev in first_seen.items() if sid in stored]
        candidates += repeats
        if not candidates:
            return {}
        kept = self._stored_payloads([sid for sid, _ in candidates if sid in stored])
        conflicts: dict[UUID, list[tuple[Received, str]]] = {}
        for sid, ev in candidates:
            if sid not in kept:  # repeated in the batch, first occurrence new
                first = first_seen[sid]
                kept[sid] = (canonical(first.payload), first.client)
            text, client = canonical(ev.payload), kept[sid][1]
            if text != kept[sid][0]:
                conflicts.setdefault(conflict_stream_id(ev.id, text), []).append((ev, client))
        return conflicts

    def _stored_payloads(self, ids: list[UUID]) -> dict[UUID, tuple[str, str]]:
        """The canonical payload and the client of each stored stream of ``ids``: one
        query."""
        if not ids:
            return {}
        rows = self._streams.select("originator_version, topic, state", ids)
        payloads = {}
        for originator_id, version, topic, state in rows:
            event = self.mapper.to_domain_event(
                StoredEvent(originator_id, version, topic, bytes(state)))
            payload = json.loads(event.payload)
            payloads[event.originator_id] = (canonical(payload), payload["client"])
        return payloads

    def _conflict_events(self, conflicts: dict[UUID, list[tuple[Received, str]]],
                         unseen: set[UUID], stamps: dict[int, str]) -> list[StoredEvent]:
        # The state ConflitRecu's fields give, as the library's mapper would store it: the
        # version as received (its stream id is of its canonical text, so re-sending the
        # same differing version, in any key order, is recorded once).
        now = self._clock()
        encode = self.mapper.transcoder.encode
        return [StoredEvent(sid, 1, CONFLIT_TOPIC,
                            encode({"timestamp": now, "payload": payload_text(ev.payload),
                                    "recu_le": stamps.get(id(ev)) or iso_utc(now),
                                    "client": client}))
                for sid, [(ev, client), *_] in conflicts.items() if sid in unseen]

    def head(self) -> int:
        """The store's last notification id (0 when empty). Raises ``PersistenceError``."""
        return self.recorder.max_notification_id() or 0

    def count_up_to(self, position: int, head: int) -> int:
        """Events stored with a notification id up to ``position``, counted by the store
        whose last notification id is ``head``: ``min(position, head)`` on SQLite, whose
        ids are dense (ADR-0008); a count on PostgreSQL, whose ids may have gaps
        (ADR-0031). Raises ``PersistenceError``."""
        return self._streams.count_up_to(position, head)

    def stored(self, ids: Sequence[UUID]) -> set[UUID]:
        """Those of ``ids`` that have a stream in the store: one query (a batch's
        existence check; ``migrate`` copies the others). Raises ``PersistenceError``."""
        if not ids:
            return set()
        return {row[0] for row in self._streams.select("originator_version", list(ids))}

    def _new_events(self, evenements: Sequence[tuple[UUID, Received]],
                    stamps: dict[int, str]) -> list[StoredEvent]:
        """The stored form of each new event: what the mapper would make of its
        ``EvenementRecu`` (state: timestamp, payload, recu_le), without building one.
        ``stamps``: an import's own ``recu_le`` by event identity; the clock's otherwise."""
        now = self._clock()
        recu_le = iso_utc(now)
        encode = self.mapper.transcoder.encode
        return [
            StoredEvent(sid, 1, TOPICS[ev.type],
                        encode({"timestamp": now, "payload": payload_text(ev.payload),
                                "recu_le": stamps.get(id(ev), recu_le)}))
            for sid, ev in evenements
        ]

    def _notify_listeners(self) -> None:
        with self._listeners_lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener()
