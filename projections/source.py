"""Where a projection reads the history from: the ``EventSource`` protocol (ADR-0062).

The event store (``api.store.application.EventStore``) is one: its ``read`` decodes a page
of stored states straight to the typed values the projection folds, with no notification
or domain event object per event. The projections layer only knows this protocol, never
the store (the layers contract of ADR-0045).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from miam_economies.domain.events import Stored


class EventSource(Protocol):
    """A store's events in notification-id order, a page at a time."""

    def read(self, start: int, limit: int) -> Sequence[tuple[int, Stored]]:
        """At most ``limit`` events from notification id ``start`` (inclusive), in id
        order, as ``(notification id, value)``: a ``Delegation``, ``Pilotage`` or
        ``Correction``, or a ``Conflit`` (a differing re-sent version). Empty past the
        last one. Raises the store's ``PersistenceError``."""
        ...

    def identity(self, notification_id: int) -> str | None:
        """The identity of the event at ``notification_id`` (None when there is none): a
        projection records it with its position, and a store replaced by another one,
        however long, gives another identity there (ADR-0105). Raises the store's
        ``PersistenceError``."""
        ...
