"""The contract's files into the store: ``economies.jsonl`` (an export of ours, or plain
JSON lines of events) and batch documents ``{"evenements": [...]}``, such as the
contract's example, pretty-printed or not (SPEC, "import").

Every event goes through the same strict JSON, the same validation and the same dedup as
``POST /economies`` (an exported relevé, which the POST refuses, through its own:
ADR-0172), in batches of ``MAX_BATCH``, keeping each event's ``recu_le`` when it
has one (ADR-0022). A refused event is reported by its line number, or by its index in a
document's ``evenements``, and skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from miam_economies.api.service.export import RECU_LE
from miam_economies.api.service.settings import DEFAULT_MAX_BODY
from miam_economies.api.store.application import EventStore
from miam_economies.api.store.mapper import payload_text
from miam_economies.domain.acceptance import Payload
from miam_economies.domain.instants import iso_utc, parse_instant
from miam_economies.domain.releves import Observation, ReleveError
from miam_economies.domain.releves_events import (
    RELEVE_TYPE,
    releve_of,
    releve_payload,
    releve_stream_hex,
)
from miam_economies.domain.schema import MAX_BATCH
from miam_economies.domain.strict_json import NotStrictJson, loads_strict
from miam_economies.domain.validation import instant_fault, validate_event

LINE_PER_BODY = 8
"""A line may hold this many times the body limit (``max_body``, bytes; the server's
``--max-body``): any line ``export`` writes of an event a server with that limit accepted.
The store keeps an event as JSON it writes itself, where a number may take 4.5 times its
bytes (``9e15`` is written ``9000000000000000.0``), and the line adds ``recu_le``
(ADR-0135)."""

MAX_LINE = LINE_PER_BODY * DEFAULT_MAX_BODY
"""Bytes a line may hold under the default body limit (1 MiB): 8 MiB."""

MAX_DOCUMENT = 64 * 1024 * 1024
"""Bytes a batch document may hold: it is read whole (an export, in JSON lines, streams)."""

Progress = Callable[[int], None]
"""Called with the bytes read since the last call."""

Accepted = tuple[Payload | Observation, str | None]
"""An accepted line: the event (or an exported relevé's observation), and its
``recu_le`` in the store's form, or None."""


@dataclass(frozen=True)
class RefusedLine:
    """An event that was not imported: ``fichier`` (as given), ``ligne`` (1-based line
    number in JSON lines; None in a document), ``index`` (its position in a document's
    ``evenements``; None in JSON lines, or for a whole document refused) and ``erreurs``
    (why: strict JSON or the schema's faults, as ``champ: message``)."""

    fichier: str
    ligne: int | None
    erreurs: tuple[str, ...]
    index: int | None = None

    def __str__(self) -> str:
        where = (f"{self.fichier}:{self.ligne}" if self.ligne is not None
                 else f"{self.fichier}: evenements[{self.index}]" if self.index is not None
                 else self.fichier)
        return f"{where}: {'; '.join(self.erreurs)}"


@dataclass
class ImportReport:
    """What an import did: ``recus`` newly stored, ``doublons`` already stored (or
    earlier in the files), ``conflits`` doublons whose content differs from the version
    kept (as ``POST /economies`` counts them), ``refusees`` the events refused (all of
    them, in file order), ``lignes`` the events read (non-blank lines, and the events of
    documents)."""

    recus: int = 0
    doublons: int = 0
    conflits: int = 0
    lignes: int = 0
    refusees: list[RefusedLine] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (the ``import`` command's ``--json``)."""
        return {"recus": self.recus, "doublons": self.doublons, "conflits": self.conflits,
                "lignes": self.lignes,
                "refusees": [{"fichier": r.fichier, "ligne": r.ligne, "index": r.index,
                              "erreurs": list(r.erreurs)} for r in self.refusees]}


def parse_line(raw: bytes, max_line: int = MAX_LINE) -> Accepted | list[str]:
    """One line of an import file: ``(event, recu_le or None)``, or the list of reasons it
    is refused (``checked_event``, after ``loads_strict``); past ``max_line`` bytes it is
    refused unread."""
    if len(raw) > max_line:
        return [f"the line is over {max_line} bytes"]
    try:
        event = loads_strict(raw, "line", lone_surrogates=True)
    except NotStrictJson as exc:
        return [str(exc)]
    if isinstance(event, list):  # a JSON array of events, the likeliest mistake
        return ["the line is a JSON array: a file holds one event (a JSON object) per "
                'line, or is one batch {"evenements": [...]}']
    if not isinstance(event, dict):
        return ["each line must be a JSON object: one event"]
    return checked_event(event)


def checked_event(event: dict[str, Any]) -> Accepted | list[str]:
    """One decoded event of an import: ``(event, recu_le or None)``, or the list of
    reasons it is refused. It goes through ``validate_event`` as one event of a
    ``POST /economies`` batch does, unless its ``type`` is ``releve``: an exported
    relevé, given back as its ``Observation`` (``releves_events.releve_of``, ADR-0172);
    the POST refuses that type. ``recu_le``, when present, must be an ISO 8601
    date-time with an offset (the ``date`` rule); it is taken out of the event and given
    back in ``toISOString()`` form (UTC, milliseconds), the form the store keeps."""
    given = RECU_LE in event
    recu_le = event.pop(RECU_LE, None)
    releve: Observation | None = None
    if event.get("type") == RELEVE_TYPE:
        try:
            releve, problems = releve_of(event), []
        except ReleveError as exc:
            problems = [str(exc)]
    else:
        problems = [f"{f.champ}: {f.message}" for f in validate_event(0, event)]
    if given:
        problem = instant_fault(recu_le)  # the events' date rule
        if problem is not None:
            problems.append(f"{RECU_LE}: {problem}")
    if problems:
        return problems
    # Kept in the store's one form (toISOString); an exported line's is already in it.
    return (event if releve is None else releve,
            None if not given else iso_utc(parse_instant(recu_le)))


def _document(path: Path, max_line: int) -> Any:
    """The decoded batch document ``{"evenements": [...]}`` that ``path`` holds, or None
    when it holds JSON lines: its first line is a whole JSON object other than a batch
    (an event), or the whole file is not one JSON object with an ``evenements`` key. A
    JSON lines file is never read whole for this: its first line tells. Raises
    ``OSError``."""
    with path.open("rb") as f:
        first = f.readline(max_line + 2)
    try:
        head: Any = loads_strict(first, lone_surrogates=True)
    except NotStrictJson:
        head = None  # a document's first line, or a refused line
    if head is not None and not (isinstance(head, dict) and "evenements" in head):
        return None
    if path.stat().st_size > MAX_DOCUMENT:
        return None
    try:
        whole = loads_strict(path.read_bytes(), lone_surrogates=True)
    except NotStrictJson:
        return None
    return whole if isinstance(whole, dict) and "evenements" in whole else None


def _document_events(path: Path, document: dict[str, Any], report: ImportReport,
                     progress: Progress | None
                     ) -> Iterator[Accepted]:
    """The accepted events of a batch ``document`` read from ``path``, in order; the
    refused ones listed in ``report`` by their index. Other top-level keys are ignored,
    as ``POST /economies`` ignores them."""
    if progress is not None:
        progress(path.stat().st_size)
    events = document["evenements"]
    if not isinstance(events, list):
        report.refusees.append(RefusedLine(str(path), None, (
            "evenements: must be a list of events",)))
        return
    for index, event in enumerate(events):
        report.lignes += 1
        checked = (checked_event(event) if isinstance(event, dict)
                   else ["each event must be a JSON object"])
        if isinstance(checked, list):
            report.refusees.append(RefusedLine(str(path), None, tuple(checked), index))
            continue
        yield checked


def _lines(path: Path, progress: Progress | None, max_line: int
           ) -> Iterator[tuple[int, bytes]]:
    """``(line number, line without its end)`` of each non-blank line of ``path``; a line
    over ``max_line`` bytes comes back cut just past the limit, never held whole."""
    with path.open("rb") as f:
        number = 0
        while True:
            raw = f.readline(max_line + 2)
            if not raw:
                return
            consumed = len(raw)
            if len(raw) == max_line + 2 and not raw.endswith(b"\n"):
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


def check_files(paths: Sequence[Path], progress: Progress | None = None, *,
                max_body: int = DEFAULT_MAX_BODY) -> ImportReport:
    """Read ``paths`` and report every refused line, importing nothing (``--strict``'s
    first pass); ``max_body`` as for ``import_files``. Raises ``OSError`` for a file that
    cannot be read."""
    report = ImportReport()
    for _ in _accepted(paths, report, progress, LINE_PER_BODY * max_body):
        pass
    return report


def _accepted(paths: Sequence[Path], report: ImportReport, progress: Progress | None,
              max_line: int) -> Iterator[Accepted]:
    """The accepted events of ``paths`` as (event, recu_le), in file order; every event
    is counted in ``report`` and every refused one listed there with its line number or
    its index in a document."""
    for path in paths:
        document = _document(path, max_line)
        if document is not None:
            yield from _document_events(path, document, report, progress)
            continue
        for number, line in _lines(path, progress, max_line):
            report.lignes += 1
            parsed = parse_line(line, max_line)
            if isinstance(parsed, list):
                report.refusees.append(RefusedLine(str(path), number, tuple(parsed)))
                continue
            yield parsed


def import_files(store: EventStore, paths: Sequence[Path], *,
                 progress: Progress | None = None,
                 batch_size: int = MAX_BATCH,
                 max_body: int = DEFAULT_MAX_BODY) -> ImportReport:
    """Append the events of ``paths`` (files of JSON lines: ``economies.jsonl`` or plain
    events; or batch documents ``{"evenements": [...]}``) to ``store``, in file order,
    ``batch_size`` events per ``store.append`` (one transaction each), each with its
    ``recu_le`` when it has one (else the store's clock).

    An exported relevé's line (``type`` ``releve``) is stored as a relevé, as
    ``EventStore.append_releves`` does (ADR-0172), and counted with the rest.
    Refused events are skipped and listed with their line number (or index); the rest is
    stored with the dedup of ``POST /economies`` (ADR-0003), so importing the same files
    again stores nothing and counts every event as a doublon. ``progress(n)``: bytes
    read. ``max_body``: the body limit of the server whose export this may be (bytes): a
    line may hold ``LINE_PER_BODY`` times it. Raises ``OSError`` for an unreadable file
    and ``StoreUnavailable`` when the store cannot take a batch (batches appended before
    it stay stored; running the import again completes it).
    """
    if not 1 <= batch_size <= MAX_BATCH:
        raise ValueError(f"batch_size must be 1 to {MAX_BATCH}")
    report = ImportReport()
    batch: list[Payload] = []
    times: list[str | None] = []
    releves: list[tuple[str, str, str | None]] = []

    def flush() -> None:
        stamps = None
        if any(t is not None for t in times):  # else the store's clock stamps them all
            now = iso_utc(datetime.now(UTC))
            stamps = [t or now for t in times]
        for appended in ([store.append(batch, recus_le=stamps)] if batch else []) + (
                [store.append_releves(releves)] if releves else []):
            report.recus += appended.recus
            report.doublons += appended.doublons
            report.conflits += appended.conflits
        batch.clear()
        times.clear()
        releves.clear()

    for event, recu_le in _accepted(paths, report, progress, LINE_PER_BODY * max_body):
        if isinstance(event, Observation):  # an exported relevé (ADR-0172)
            releves.append((releve_stream_hex(event), payload_text(releve_payload(event)),
                            recu_le))
        else:
            batch.append(event)
            times.append(recu_le)
        if len(batch) == batch_size or len(releves) == batch_size:
            flush()
    flush()
    return report

