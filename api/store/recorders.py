"""What the event store asks of its recorder beyond the library's ``ApplicationRecorder``:
the contract every backend's recorder keeps (ADR-0043), in the shape of the library's own
examples (``examples/searchabletimestamps``: an abstract recorder, one subclass a backend,
named to the factory by ``APPLICATION_RECORDER_TOPIC``)."""

from __future__ import annotations

import hashlib
import threading
import time
from abc import abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from uuid import UUID

from eventsourcing.persistence import ApplicationRecorder, StoredEvent

Row = tuple[str, str, bytes]
"""A new event's row as the append builds it: its stream id as hex text, its topic and its
stored state (version 1 of its stream, ADR-0002)."""


class EconomiesRecorder(ApplicationRecorder):
    """An application recorder that can also say which streams exist, read their first
    events back, read the log as raw rows, count the events up to a position, and wake a
    reader on each insert.

    Every received event is version 1 of its own stream (ADR-0002), so a stream id names
    one stored event.
    """

    insert_leaves_no_trace = False
    """Whether an insert refused for a stream already stored leaves the store as it was,
    notification ids included: then the append may insert a batch it guesses all new
    without asking first, and ask only if refused (ADR-0117). False here: a sequence may
    draw ids that a rolled-back insert leaves as a gap (PostgreSQL's bigserial)."""

    @abstractmethod
    def insert_within(self, stored_events: Sequence[StoredEvent],
                      deadline: float) -> Sequence[int] | None:
        """``insert_events`` in one transaction, waiting for the store's write lock until
        ``deadline`` at the latest (a ``time.monotonic()`` instant) and never trying again:
        an answer's time stays bounded whatever holds the lock (issue 13.3; ADR-0053).
        Raises ``OperationalError`` (a ``PersistenceError``) when the lock was not had in
        time, ``IntegrityError`` for a stream already stored."""

    @contextmanager
    def waiting_until(self, deadline: float | None) -> Iterator[None]:
        """Within the block, what this thread asks of the recorder waits for a connection
        until ``deadline`` at most (a ``time.monotonic()`` instant; None: the backend's
        own bound), then fails (``OperationalError``): an append's queries stay within
        its answer's bound while the database is away (ADR-0053, ADR-0152). This default
        has no connection to wait for (SQLite)."""
        yield

    @abstractmethod
    def stored_streams(self, ids: Sequence[UUID]) -> set[UUID]:
        """Those of ``ids`` that have a stored event: one query (a batch's existence
        check). Raises ``PersistenceError``."""

    @abstractmethod
    def stored_states(self, ids: Sequence[UUID]) -> dict[UUID, bytes]:
        """The stored state (``StoredEvent.state``) of the version-1 event of each of
        ``ids`` that exists, by stream id: one query, which says both which streams exist
        and what they hold (the append's existence and conflict check, ADR-0061). Raises
        ``PersistenceError``."""

    def stored_states_hex(self, ids: Sequence[str]) -> dict[str, bytes]:
        """``stored_states`` keyed by stream ids as hex text (``domain.events.stream_hex``),
        the append's own keys: a backend that stores hex answers without a ``UUID`` per id
        (ADR-0116). Raises ``PersistenceError``."""
        return {sid.hex: state for sid, state
                in self.stored_states([UUID(hex=i) for i in ids]).items()}

    def insert_rows(self, rows: Sequence[Row], deadline: float | None) -> None:
        """Insert ``rows`` (``(stream id hex, topic, state)``, each version 1 of its
        stream) in one transaction: ``insert_within(..., deadline)``, or ``insert_events``
        without a deadline. This default builds the ``StoredEvent`` objects; a backend
        may write the rows as they are (ADR-0116). Raises as those do."""
        events = [StoredEvent(UUID(hex=sid), 1, topic, state) for sid, topic, state in rows]
        if deadline is None:
            self.insert_events(events)
        else:
            self.insert_within(events, deadline)

    @abstractmethod
    def select_states(self, start: int, limit: int) -> list[tuple[int, str, bytes]]:
        """``(notification_id, topic, stored state)`` of at most ``limit`` events from
        notification id ``start`` (inclusive), in id order: the notification log as raw
        rows, without a ``Notification`` or ``StoredEvent`` object per event (a replay
        reads every event: ADR-0062). Raises ``PersistenceError``."""

    @abstractmethod
    def identity_at(self, notification_id: int) -> str | None:
        """The identity of the event stored at ``notification_id`` (``identity``), or None
        when there is none: one point query. Raises ``PersistenceError``."""

    @staticmethod
    def identity(originator_id: UUID, state: bytes) -> str:
        """A stored event's identity: its stream id and a digest of its stored state
        (the payload, when it was stored, ``recu_le``), hex. Two stores holding the same
        events, stored apart, differ in it; a copy of a store's file does not (ADR-0105)."""
        digest = hashlib.blake2b(state, digest_size=8).hexdigest()
        return f"{originator_id.hex}:{digest}"

    @abstractmethod
    def count_up_to(self, position: int, head: int) -> int:
        """Events with a notification id up to ``min(position, head)``, ``head`` being the
        last notification id (``max_notification_id``), read by the caller. Raises
        ``PersistenceError``."""

    @staticmethod
    def milliseconds_left(deadline: float) -> int:
        """Whole milliseconds until ``deadline`` (``time.monotonic()`` seconds), at least 1:
        what a lock wait may take (0 means no limit to both backends)."""
        return max(1, int((deadline - time.monotonic()) * 1000))

    def listen(self, wake: Callable[[], None], stop: threading.Event) -> None:
        """Call ``wake()`` whenever another process inserts events (and once at the
        start), until ``stop`` is set; return at once when the backend cannot tell (then
        readers poll). Never raises: a lost connection is logged and opened again."""
        return None
