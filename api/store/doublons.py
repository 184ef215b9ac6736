"""A batch as the append sees it: keyed by stream id, its repeats apart, and the doublons
whose content differs from the version kept (ADR-0003, ADR-0061, ADR-0116). Pure: the
stored states come in as arguments, read by ``EventStore`` in one query."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from uuid import UUID

from eventsourcing.persistence import IntegrityError

from miam_economies.api.store.mapper import payload_text
from miam_economies.api.store.recorders import EconomiesRecorder, Row
from miam_economies.domain.acceptance import Payload
from miam_economies.domain.events import canonical, conflict_stream_id, stream_hex

Keyed = tuple[dict[str, Payload], dict[int, str], list[tuple[str, Payload]]]
"""``(first_seen, stamps, repeats)``: see ``keyed``."""

Conflicts = dict[UUID, list[tuple[Payload, str]]]
"""Differing doublons by conflict stream: ``[(event, kept version's client), ...]``."""


def keyed(evenements: Sequence[Payload], recus_le: Sequence[str] | None) -> Keyed:
    """The batch keyed for the append: the first occurrence of each stream id (hex text,
    ``domain.events.stream_hex``: no ``UUID`` per event), the ``recu_le`` given per event
    (by identity: two equal events of one batch may carry different times), and the later
    repeats of an id, in order. Raises ``ValueError`` when ``recus_le`` is not one per
    event."""
    if recus_le is not None and len(recus_le) != len(evenements):
        raise ValueError(f"{len(recus_le)} recu_le for {len(evenements)} events")
    stamps = {id(ev): at for ev, at in zip(evenements, recus_le or (), strict=False)}
    first_seen: dict[str, Payload] = {}
    repeats: list[tuple[str, Payload]] = []
    for ev in evenements:
        sid = stream_hex(ev["id"])
        if sid in first_seen:
            repeats.append((sid, ev))
        else:
            first_seen[sid] = ev
    return first_seen, stamps, repeats


def differing(first_seen: dict[str, Payload], stored: dict[str, bytes],
              repeats: list[tuple[str, Payload]],
              payload_of: Callable[[bytes], str]) -> Conflicts:
    """The doublons whose content differs from the version kept (the stored one, of
    ``stored`` states by stream id, whose payload text ``payload_of`` reads; or the batch's
    first occurrence), by conflict stream (one entry per differing doublon of the batch).

    A re-sent event is nearly always the same bytes: the text it would be stored as is
    compared with the stored text, and only where they differ are both decoded and compared
    as canonical JSON (key order and spacing aside). A batch of new events costs nothing
    here (ADR-0061)."""
    candidates = [(sid, ev) for sid, ev in first_seen.items() if sid in stored]
    candidates += repeats
    if not candidates:
        return {}
    kept: dict[str, tuple[str, str]] = {}  # canonical text and client, when needed
    conflicts: Conflicts = {}
    for sid, ev in candidates:
        state = stored.get(sid)
        # None: repeated in the batch, its first occurrence new.
        kept_text = payload_text(first_seen[sid]) if state is None else payload_of(state)
        if payload_text(ev) == kept_text:
            continue
        if sid not in kept:
            kept_payload = json.loads(kept_text)  # exact past 64 bits, unlike orjson
            kept[sid] = (canonical(kept_payload), kept_payload["client"])
        text, client = canonical(ev), kept[sid][1]
        if text != kept[sid][0]:
            conflicts.setdefault(conflict_stream_id(ev["id"], text), []).append((ev, client))
    return conflicts


def new_rows(recorder: EconomiesRecorder, rows: Sequence[Row], attempts: int) -> int:
    """Insert those of ``rows`` (each version 1 of its stream, ids distinct) whose stream
    is not stored yet, in one transaction; return how many. When another writer stores
    one of them between the check and the insert, the insert rolls back whole and the
    rows are checked again, ``attempts`` times at most. The append of relevés
    (``EventStore.append_releves``), whose doublons never differ. Raises the recorder's
    ``PersistenceError`` (its ``IntegrityError`` after the last attempt)."""
    for attempt in range(attempts):
        stored = recorder.stored_streams([UUID(hex=sid) for sid, _, _ in rows])
        new = [row for row in rows if UUID(hex=row[0]) not in stored]
        if not new:
            return 0
        try:
            recorder.insert_rows(new, None)
        except IntegrityError:
            if attempt == attempts - 1:
                raise
            continue
        return len(new)
    return 0
