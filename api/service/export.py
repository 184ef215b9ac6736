"""The contract's file from the store: ``economies.jsonl``, one line per stored event.

The contract's MIAM kept ``logs/mcp/economies.jsonl``: one line per new event, the event as
received plus ``recu_le`` (contract, "À implémenter dans MIAM", point 3). ``export_lines``
writes that file from the event store, in store order, a page at a time (ADR-0022);
``stored_events`` is the store read in order, which replay and compare fold too.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import cast

from miam_economies.api.store.application import EventStore
from miam_economies.domain.events import ConflitRecu, EvenementRecu
from miam_economies.domain.strict_json import escaped_surrogates

RECU_LE = "recu_le"
"""The key an exported line adds to the event as received (contract, point 3)."""

PAGE = 500
"""Notifications read from the store per query while exporting."""

Progress = Callable[[int], None]
"""Called with the events read since the last call."""


def stored_events(store: EventStore, *, up_to: int | None = None
                  ) -> Iterator[EvenementRecu]:
    """The store's events in store (notification) order, ``PAGE`` at a time, up to
    notification id ``up_to`` (default: the head when called, so appends made while
    exporting are left for the next export). Raises ``PersistenceError``."""
    head = store.head() if up_to is None else up_to
    position = 0
    while position < head:
        page = store.recorder.select_notifications(
            position + 1, min(PAGE, head - position), inclusive_of_start=True)
        if not page:
            return
        for notification in page:
            if notification.id > head:
                return
            yield cast(EvenementRecu, store.mapper.to_domain_event(notification))
        position = page[-1].id


def export_line(stored: EvenementRecu) -> str:
    """One line of ``economies.jsonl`` (without its newline): the event as received, keys
    in the order received, plus ``recu_le`` last (ADR-0022). A payload that already held a
    ``recu_le`` key has it replaced by the time of storage."""
    event = json.loads(stored.payload)
    event.pop(RECU_LE, None)
    event[RECU_LE] = stored.recu_le
    # A lone surrogate of an unknown field as its escape: the line must encode as UTF-8.
    return escaped_surrogates(json.dumps(event, ensure_ascii=False, separators=(",", ":")))


def export_lines(store: EventStore, *, conflits: bool = False,
                 progress: Progress | None = None) -> Iterator[str]:
    """Every received event of ``store`` as a line of ``economies.jsonl`` (newline
    included), in store order, streamed. ``conflits``: also the differing re-sent
    versions kept as evidence (``ConflitRecu``), each as the line it was received as, in
    store order after the version kept; an import records them as conflicts again
    (ADR-0022). Without it the file is the contract's: one line per id. ``progress(n)``
    is called with the events read since its last call (conflicts left out included).
    Raises ``PersistenceError``."""
    pending = 0
    for stored in stored_events(store):
        pending += 1
        if conflits or not isinstance(stored, ConflitRecu):
            yield export_line(stored) + "\n"
        if progress is not None and pending == PAGE:
            progress(pending)
            pending = 0
    if progress is not None and pending:
        progress(pending)
