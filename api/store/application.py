"""The event store: an ``eventsourcing`` application that appends each new received event.

One stream per received event, originator id ``uuid5`` of its stable id, version 1
(ADR-0002). The store's (originator_id, originator_version) uniqueness is the arbiter of
duplicates: a batch is filtered against what is stored, then inserted in one transaction;
if a concurrent writer stored one of its ids in between, the insert rolls back whole and
the batch is filtered again (NOTES-eventsourcing, "Appending one event per stream").

The application is built on the library's seams (ADR-0043): its mapper is
``EconomiesMapper`` (the stored format, in one place), its transcoder ``OrjsonTranscoder``,
and its recorder an ``EconomiesRecorder`` of the database's backend, named by the
settings (``backends.Database.store_env``). Appends hand the mapper's stored events to the
recorder's ``insert_events`` in one transaction: ``Application.save`` would collect domain
event objects first, twice the cost of a batch (ADR-0011).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import cast
from uuid import UUID

from eventsourcing.application import Application
from eventsourcing.persistence import (
    ConnectionPoolClosedError,
    IntegrityError,
    Mapper,
    PersistenceError,
    Transcoder,
)
from eventsourcing.utils import Environment, EnvType

from miam_economies.api.store.doublons import Conflicts, differing, keyed, new_rows
from miam_economies.api.store.mapper import EconomiesMapper, payload_text
from miam_economies.api.store.recorders import EconomiesRecorder, Row
from miam_economies.api.store.transcoder import OrjsonTranscoder
from miam_economies.domain.acceptance import Payload
from miam_economies.domain.errors import MiamEconomiesError
from miam_economies.domain.events import CONFLIT_TOPIC, TOPICS, EvenementRecu, Stored
from miam_economies.domain.instants import iso_utc
from miam_economies.domain.releves_events import RELEVE_TOPIC

log = logging.getLogger(__name__)

SAVE_ATTEMPTS = 5
"""Times a batch is re-filtered and saved again after losing a race to another writer."""


class StoreUnavailable(MiamEconomiesError):
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


class EventStore(Application[UUID]):
    """The service's event store (``eventsourcing`` application named ``Economies``).

    ``env``: the library's persistence settings (``Database.store_env``: SQLite or
    PostgreSQL, with the backend's ``EconomiesRecorder``); ``clock`` gives the ``recu_le``
    of appended events (UTC datetimes). Listeners added with ``on_append`` are called,
    without arguments, after each append that stored something, to wake a projection
    runner.
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
        self._last_all_new = False  # whether the last append stored every event it had

    def construct_transcoder(self) -> Transcoder:
        """``OrjsonTranscoder``: the library's stored format, about 3x faster (ADR-0011)."""
        return OrjsonTranscoder()

    def construct_mapper(self) -> Mapper[UUID]:
        """``EconomiesMapper``: the stored format, with the application's transcoder and
        any compressor or cipher its settings name (ADR-0043)."""
        return self.factory.mapper(transcoder=self.construct_transcoder(),
                                   mapper_class=EconomiesMapper)

    def construct_env(self, name: str, env: EnvType | None = None) -> Environment:
        """Only the settings given, never ``os.environ``: the library lets a prefixed
        variable (``ECONOMIES_SQLITE_DBNAME``) override them, which could silently move the
        store to memory and acknowledge events that are not durable."""
        return Environment(name, dict(env or {}))

    @property
    def economies_recorder(self) -> EconomiesRecorder:
        """The recorder, as the contract this application relies on (ADR-0043)."""
        return cast(EconomiesRecorder, self.recorder)

    @property
    def economies_mapper(self) -> EconomiesMapper:
        """The mapper, as the stored format's one place (ADR-0043)."""
        return cast(EconomiesMapper, self.mapper)

    def on_append(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` after every append that stored at least one event."""
        with self._listeners_lock:
            self._listeners.append(listener)

    def append(self, evenements: Sequence[Payload], *,
               recus_le: Sequence[str] | None = None,
               deadline: float | None = None) -> Appended:
        """Store the batch's new events in one transaction; count the rest as doublons.

        ``evenements``: the events as received (dicts, unknown fields included), which
        must have passed ``domain.acceptance.accept_batch``. A repeated id (already
        stored, or earlier in the same batch) is a doublon; the first stored version wins.
        ``recus_le``: one ISO 8601 UTC string per event of ``evenements``
        (``2026-10-30T09:12:04.512Z``), kept as that event's ``recu_le`` instead of the
        clock's time: an import keeps the time the events were first received (ADR-0022).
        ``deadline``: a ``time.monotonic()`` instant by which the batch is stored or
        refused, however many appends queue in front of it and whatever holds the store's
        write lock (a POST's answer stays within ``--lock-timeout``: ADR-0053); None waits
        the store's lock timeout per attempt.

        Raises ``StoreUnavailable`` when the store cannot take the batch (in time); then
        nothing of it is stored; ``ValueError`` when ``recus_le`` is not one per event.
        """
        first_seen, stamps, repeats = keyed(evenements, recus_le)
        wait = -1 if deadline is None else max(0.0, deadline - time.monotonic())
        if not self._append_lock.acquire(timeout=wait):
            raise StoreUnavailable("the appends queued in front of this batch did not "
                                   "finish in time")
        try:
            # Its connections too are had by the deadline, or not at all (ADR-0152).
            with self.economies_recorder.waiting_until(deadline):
                return self._append(evenements, first_seen, stamps, repeats, deadline)
        finally:
            self._append_lock.release()

    def append_now(self, evenements: Sequence[Payload], within: float) -> Appended | None:
        """``append(evenements)`` if it can start at once: no other append of this process
        under way, and the store's write lock had within ``within`` seconds; else None,
        with nothing stored. For a small batch appended on the event loop (ADR-0118),
        which must never wait there on another append; the caller then appends it in a
        thread, as any other. None too when the store fails (``StoreUnavailable``): the
        caller's ``append`` says so again, under its own deadline."""
        first_seen, stamps, repeats = keyed(evenements, None)
        if not self._append_lock.acquire(blocking=False):
            return None
        try:
            return self._append(evenements, first_seen, stamps, repeats,
                                time.monotonic() + within, tentative=True)
        except StoreUnavailable:
            return None
        finally:
            self._append_lock.release()

    def _append(self, evenements: Sequence[Payload], first_seen: dict[str, Payload],
                stamps: dict[int, str], repeats: list[tuple[str, Payload]],
                deadline: float | None, *, tentative: bool = False) -> Appended:
        # tentative: append_now's attempt, whose failure the caller's append retries (and
        # logs, if it fails too).
        recorder = self.economies_recorder
        # ADR-0117: after a batch that was all new, the next is guessed all new too and
        # inserted without asking which ids are stored: a stored one makes the insert fail
        # whole, and the next attempt asks. A batch repeating an id within itself asks.
        guess = self._last_all_new and not repeats and recorder.insert_leaves_no_trace
        try:
            for _ in range(SAVE_ATTEMPTS + guess):
                if deadline is not None and time.monotonic() >= deadline:
                    raise StoreUnavailable("the store's write lock was not had in time")
                # One query says which ids are stored and what they hold.
                stored = {} if guess else recorder.stored_states_hex(list(first_seen))
                new = [(sid, ev) for sid, ev in first_seen.items() if sid not in stored]
                conflicts = differing(first_seen, stored, repeats,
                                      self.economies_mapper.stored_payload)
                unseen = set(conflicts) - self.stored(list(conflicts))
                try:
                    if new or unseen:
                        self.economies_recorder.insert_rows(
                            [*self._new_rows(new, stamps),
                             *self._conflict_rows(conflicts, unseen, stamps)], deadline)
                except IntegrityError:
                    # An id guessed new was stored, or another writer stored one since
                    # the check: the whole insert rolled back; filter again against what
                    # is now stored.
                    guess = self._last_all_new = False
                    continue
                if new or unseen:
                    self._notify_listeners()
                self._last_all_new = len(new) == len(evenements)
                conflits = sum(len(versions) for versions in conflicts.values())
                return Appended(len(new), len(evenements) - len(new), conflits)
        except (PersistenceError, ConnectionPoolClosedError) as exc:
            if not tentative:
                log.warning("event store unavailable: %s", exc)
            raise StoreUnavailable(str(exc)) from None
        raise StoreUnavailable(f"lost the race to other writers {SAVE_ATTEMPTS} times")

    def append_releves(self, releves: Sequence[tuple[str, str, str | None]]) -> Appended:
        """Store the new relevés of ``releves`` in one transaction, counting the rest as
        doublons (ADR-0172). Each is ``(stream id hex, payload text, recu_le or None: the
        clock's)``, as ``domain.releves_events`` and ``mapper.payload_text`` make them;
        an id is of its whole content, so a doublon never differs. The store's uniqueness
        arbitrates between writers (``doublons.new_rows``). Raises ``StoreUnavailable``:
        then nothing of ``releves`` is stored."""
        now = self._clock()
        encode, recu_le = self.economies_mapper.state_encoder(now), iso_utc(now)
        rows: dict[str, Row] = {}
        for sid, payload, at in releves:  # in order; the first of an id kept
            rows.setdefault(sid, (sid, RELEVE_TOPIC, encode(payload, at or recu_le, None)))
        with self._append_lock:
            try:
                stored = new_rows(self.economies_recorder, list(rows.values()), SAVE_ATTEMPTS)
            except (PersistenceError, ConnectionPoolClosedError) as exc:
                log.warning("event store unavailable: %s", exc)
                raise StoreUnavailable(str(exc)) from None
        if stored:
            self._notify_listeners()
        return Appended(stored, len(releves) - stored)

    def _new_rows(self, evenements: Sequence[tuple[str, Payload]],
                  stamps: dict[int, str]) -> list[Row]:
        """The stored row of each new event: its state as ``EconomiesMapper.received``
        writes it, byte for byte (``state_encoder``; ADR-0116). ``stamps``: an import's
        own ``recu_le`` by event identity; the clock's otherwise."""
        now = self._clock()
        recu_le = iso_utc(now)
        encode = self.economies_mapper.state_encoder(now)
        return [(sid, TOPICS[ev["type"]],
                 encode(payload_text(ev), stamps.get(id(ev), recu_le), None))
                for sid, ev in evenements]

    def _conflict_rows(self, conflicts: Conflicts,
                       unseen: set[UUID], stamps: dict[int, str]) -> list[Row]:
        # A ConflitRecu per differing version not yet recorded: the version as received,
        # under the kept version's client. Its stream id is of its canonical text, so
        # re-sending the same differing version, in any key order, is recorded once.
        if not unseen:
            return []
        now = self._clock()
        encode = self.economies_mapper.state_encoder(now)
        return [(sid.hex, CONFLIT_TOPIC,
                 encode(payload_text(ev), stamps.get(id(ev)) or iso_utc(now), client))
                for sid, [(ev, client), *_] in conflicts.items() if sid in unseen]

    def read(self, start: int, limit: int) -> list[tuple[int, Stored]]:
        """At most ``limit`` stored events from notification id ``start`` (inclusive), in
        store order, as ``(notification id, typed value)``: a ``Delegation``, ``Pilotage``
        or ``Correction``, or a ``Conflit`` for a differing re-sent version. One query,
        and no domain event object per event (the projections' ``EventSource``;
        ADR-0062). Raises ``PersistenceError``, and as ``EconomiesMapper.values``."""
        rows = self.economies_recorder.select_states(start, limit)
        values = self.economies_mapper.values(rows)
        return [(row[0], value) for row, value in zip(rows, values, strict=True)]

    def head(self) -> int:
        """The store's last notification id (0 when empty). Raises ``PersistenceError``."""
        return self.recorder.max_notification_id() or 0

    def identity(self, notification_id: int) -> str | None:
        """The identity of the event stored at ``notification_id`` (its stream id and a
        digest of its stored state), None when there is none: what a projection records
        with its position to tell this store from another (``EventSource``; ADR-0105).
        Raises ``PersistenceError``."""
        return self.economies_recorder.identity_at(notification_id)

    def stored_after(self, position: int) -> datetime | None:
        """When the first event after notification id ``position`` was stored (its
        ``recu_le``, or the time an import kept), None when there is none: how long the
        oldest event not yet folded has waited (ADR-0136). One row read; raises
        ``PersistenceError``."""
        found = self.recorder.select_notifications(position + 1, 1, inclusive_of_start=True)
        if not found:
            return None
        stored = cast(EvenementRecu, self.mapper.to_domain_event(found[0]))
        return datetime.fromisoformat(stored.recu_le)

    def count_up_to(self, position: int, head: int) -> int:
        """Events stored with a notification id up to ``position``, counted by the store
        whose last notification id is ``head`` (``EconomiesRecorder.count_up_to``).
        Raises ``PersistenceError``."""
        return self.economies_recorder.count_up_to(position, head)

    def stored(self, ids: Sequence[UUID]) -> set[UUID]:
        """Those of ``ids`` that have a stream in the store: one query (a batch's
        existence check; ``migrate`` copies the others). Raises ``PersistenceError``."""
        return self.economies_recorder.stored_streams(ids)

    def _notify_listeners(self) -> None:
        with self._listeners_lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener()
