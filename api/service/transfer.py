"""The contract's file, both ways: export the store as ``economies.jsonl``, import such files.

The contract's MIAM kept ``logs/mcp/economies.jsonl``: one line per new event, the event as
received plus ``recu_le`` (contract, "À implémenter dans MIAM", point 3). ``export_lines``
writes that file from the event store, in store order, a page at a time; ``import_files``
reads such files (or plain JSON lines of events) through the same strict JSON, the same
validation and the same dedup as ``POST /economies``, in batches of ``MAX_BATCH``, keeping
each line's ``recu_le`` (ADR-0022).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from miam_economies.api.service.settings import DEFAULT_MAX_BODY
from miam_economies.api.store.application import EventStore
from miam_economies.domain.events import (
    ConflitRecu,
    EvenementRecu,
    Received,
    from_payload,
)
from miam_economies.domain.instants import iso_utc, parse_instant
from miam_economies.domain.schema import MAX_BATCH
from miam_economies.domain.strict_json import NotStrictJson, loads_strict
from miam_economies.domain.validation import validate_event

RECU_LE = "recu_le"
"""The key an exported line adds to the event as received (contract, point 3)."""

MAX_LINE = DEFAULT_MAX_BODY
"""Bytes a line may hold: an event that could not be posted (1 MiB body) is not imported."""

PAGE = 500
"""Notifications read from the store per query while exporting."""

Progress = Callable[[int], None]
"""Called with an amount done since the last call (events exported, bytes imported)."""


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
    return json.dumps(event, ensure_ascii=False, separators=(",", ":"))


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


@dataclass(frozen=True)
class RefusedLine:
    """A line that was not imported: ``fichier`` (as given), ``ligne`` (1-based line
    number) and ``erreurs`` (why: strict JSON or the schema's faults, as
    ``champ: message``)."""

    fichier: str
    ligne: int
    erreurs: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.fichier}:{self.ligne}: {'; '.join(self.erreurs)}"


@dataclass
class ImportReport:
    """What an import did: ``recus`` newly stored, ``doublons`` already stored (or
    earlier in the files), ``conflits`` doublons whose content differs from the version
    kept (as ``POST /economies`` counts them), ``refusees`` the lines refused (all of
    them, in file order), ``lignes`` the non-blank lines read."""

    recus: int = 0
    doublons: int = 0
    conflits: int = 0
    lignes: int = 0
    refusees: list[RefusedLine] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (the ``import`` command's ``--json``)."""
        return {"recus": self.recus, "doublons": self.doublons, "conflits": self.conflits,
                "lignes": self.lignes,
                "refusees": [{"fichier": r.fichier, "ligne": r.ligne,
                              "erreurs": list(r.erreurs)} for r in self.refusees]}


def _check_recu_le(value: Any) -> str | None:
    """Why ``value`` is not a usable ``recu_le`` (the rule of the events' ``date``), or
    None. Uses a throw-away event to reach ``domain.validation``'s date rule."""
    probe = {"schema": 1, "type": "x", "id": "x", "date": value, "client": "x",
             "session_id": ""}
    for fault in validate_event(0, probe):
        if fault.champ == "date":
            return fault.message
    return None


def parse_line(raw: bytes) -> tuple[Received, str | None] | list[str]:
    """One line of an import file: ``(event, recu_le or None)``, or the list of reasons it
    is refused. The event goes through ``loads_strict`` and ``validate_event`` as one
    event of a ``POST /economies`` batch does; ``recu_le``, when present, must be an ISO
    8601 date-time with an offset (the ``date`` rule); it is taken out of the event and
    given back in ``toISOString()`` form (UTC, milliseconds), the form the store keeps."""
    if len(raw) > MAX_LINE:
        return [f"the line is over {MAX_LINE} bytes"]
    try:
        event = loads_strict(raw)
    except NotStrictJson as exc:
        return [str(exc).replace("the text is", "the line is")]
    if not isinstance(event, dict):
        return ["each line must be a JSON object: one event"]
    given = RECU_LE in event
    recu_le = event.pop(RECU_LE, None)
    problems = [f"{f.champ}: {f.message}" for f in validate_event(0, event)]
    if given:
        problem = _check_recu_le(recu_le)
        if problem is not None:
            problems.append(f"{RECU_LE}: {problem}")
    if problems:
        return problems
    # Kept in the store's one form (toISOString); an exported line's is already in it.
    return from_payload(event), None if not given else iso_utc(parse_instant(recu_le))


def _lines(path: Path, progress: Progress | None) -> Iterator[tuple[int, bytes]]:
    """``(line number, line without its end)`` of each non-blank line of ``path``; a line
    over ``MAX_LINE`` bytes comes back cut just past the limit, never held whole."""
    with path.open("rb") as f:
        number = 0
        while True:
            raw = f.readline(MAX_LINE + 2)
            if not raw:
                return
            consumed = len(raw)
            if len(raw) == MAX_LINE + 2 and not raw.endswith(b"\n"):
                # Over-long: skip the rest of it a MiB at a time; parse_line refuses it.
                while (rest := f.readline(1 << 20)) and not rest.endswith(b"\n"):
                    consumed += len(rest)
                consumed += len(rest)
            number += 1
            if progress is not None:
                progress(consumed)
            line = raw.rstrip(b"\r\n")
            if line.strip():
                yield number, line


def check_files(paths: Sequence[Path], progress: Progress | None = None) -> ImportReport:
    """Read ``paths`` and report every refused line, importing nothing (``--strict``'s
    first pass). Raises ``OSError`` for a file that cannot be read."""
    report = ImportReport()
    for _ in _accepted(paths, report, progress):
        pass
    return report


def _accepted(paths: Sequence[Path], report: ImportReport, progress: Progress | None
              ) -> Iterator[tuple[Received, str | None]]:
    """The accepted lines of ``paths`` as (event, recu_le), in file order; every line is
    counted in ``report`` and every refused one listed there with its number."""
    for path in paths:
        for number, line in _lines(path, progress):
            report.lignes += 1
            parsed = parse_line(line)
            if isinstance(parsed, list):
                report.refusees.append(RefusedLine(str(path), number, tuple(parsed)))
                continue
            yield parsed


def import_files(store: EventStore, paths: Sequence[Path], *,
                 progress: Progress | None = None,
                 batch_size: int = MAX_BATCH) -> ImportReport:
    """Append the events of ``paths`` (files of JSON lines: ``economies.jsonl`` or plain
    events) to ``store``, in file order, ``batch_size`` events per ``store.append`` (one
    transaction each), each with its line's ``recu_le`` (else the store's clock).

    Refused lines are skipped and listed with their line number; the rest is stored with
    the dedup of ``POST /economies`` (ADR-0003), so importing the same files again stores
    nothing and counts every event as a doublon. ``progress(n)``: bytes read. Raises
    ``OSError`` for an unreadable file and ``StoreUnavailable`` when the store cannot take
    a batch (batches appended before it stay stored; running the import again completes
    it).
    """
    if not 1 <= batch_size <= MAX_BATCH:
        raise ValueError(f"batch_size must be 1 to {MAX_BATCH}")
    report = ImportReport()
    batch: list[Received] = []
    times: list[str | None] = []

    def flush() -> None:
        if not batch:
            return
        stamps = None
        if any(t is not None for t in times):  # else the store's clock stamps them all
            now = iso_utc(datetime.now(UTC))
            stamps = [t or now for t in times]
        appended = store.append(batch, recus_le=stamps)
        report.recus += appended.recus
        report.doublons += appended.doublons
        report.conflits += appended.conflits
        batch.clear()
        times.clear()

    for event, recu_le in _accepted(paths, report, progress):
        batch.append(event)
        times.append(recu_le)
        if len(batch) == batch_size:
            flush()
    flush()
    return report

