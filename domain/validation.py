"""Strict validation of one POST /economies batch (pure: no I/O, no clock).

Rules come from the contract (``000_*.txt``, "À implémenter dans MIAM", point 2) as
restated in SPEC.md, "Events (schema 1)". Validation never stops at the first fault: the
422 body lists every ``(index, champ, message)``, capped at ``MAX_FAULTS``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from miam_economies.domain.events import (
    OUTILS,
    RETOURS,
    SCHEMA,
    TYPES,
    Received,
    from_payload,
)
from miam_economies.domain.instants import parse_instant

MAX_BATCH = 500
"""Events per batch at most (contract, "Transport": ATTENTE_MAX)."""

MAX_FAULTS = 100
"""Faults listed in one 422 body at most; the count of the rest is reported."""

MAX_STRING = 512
"""Characters at most in each string field the schema names (ids, client, modele...): the
contract's ids are about 100 characters; a 10,000-character id is refused, not stored.
Unknown fields are bounded only by the body limit."""

MAX_SAFE_INTEGER = 2**53 - 1
"""The plugin is JavaScript: integers beyond Number.MAX_SAFE_INTEGER are not exact there."""

# RFC 3339, the profile of ISO 8601 that toISOString() writes: seconds mandatory, fraction
# optional, offset mandatory (SPEC, "Events"). datetime.fromisoformat alone would also take
# compact and week forms, and dates without an offset.
_ISO_DATE = re.compile(
    r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})", re.ASCII
)


@dataclass(frozen=True)
class Fault:
    """One thing wrong with a batch.

    ``index``: position of the event in ``evenements`` (None for a batch-level fault);
    ``champ``: dotted path of the field (``usage.input_tokens``, ``demande_ids[2]``), or
    ``"evenements"`` for a batch-level fault; ``message``: English, for a developer.
    """

    index: int | None
    champ: str
    message: str

    def as_dict(self) -> dict[str, Any]:
        """The fault in the 422 body's shape: ``{"index", "champ", "message"}``."""
        return {"index": self.index, "champ": self.champ, "message": self.message}


class SchemaError(ValueError):
    """The batch breaks the schema; ``faults`` lists every fault found (up to MAX_FAULTS).

    ``omitted`` counts faults found beyond the cap. Mapped to 422 at the HTTP edge.
    """

    def __init__(self, faults: list[Fault], omitted: int = 0):
        super().__init__(f"{len(faults) + omitted} schema fault(s)")
        self.faults = faults
        self.omitted = omitted


class _Checker:
    """Collects the faults of one event; each ``need_*`` returns whether the field is good."""

    def __init__(self, index: int, event: Mapping[str, Any], faults: list[Fault]):
        self.index = index
        self.event = event
        self.faults = faults

    def fault(self, champ: str, message: str) -> None:
        self.faults.append(Fault(self.index, champ, message))

    def get(self, obj: Mapping[str, Any], key: str, champ: str) -> tuple[bool, Any]:
        if key not in obj:
            self.fault(champ, "required field is missing")
            return False, None
        return True, obj[key]

    def need(self, obj: Mapping[str, Any], key: str, prefix: str,
             check: Callable[[Any], str | None]) -> bool:
        champ = prefix + key
        present, value = self.get(obj, key, champ)
        if not present:
            return False
        problem = check(value)
        if problem:
            self.fault(champ, problem)
            return False
        return True


def _string(value: Any) -> str | None:
    if not isinstance(value, str):
        return "must be a string"
    return None if len(value) <= MAX_STRING else f"must be at most {MAX_STRING} characters"


def _non_empty_string(value: Any) -> str | None:
    if not isinstance(value, str):
        return "must be a string"
    return _string(value) if value else "must be a non-empty string"


def _nullable_string(value: Any) -> str | None:
    if value is None:
        return None
    return _string(value) if isinstance(value, str) else "must be a string or null"


def _boolean(value: Any) -> str | None:
    return None if isinstance(value, bool) else "must be a boolean (true or false)"


def _integer(value: Any, minimum: int) -> str | None:
    # bool is an int subclass and 3.0 is a float: the contract wants a JSON integer.
    if type(value) is not int:
        return "must be a JSON integer (not a boolean, a float or a string)"
    if value > MAX_SAFE_INTEGER or value < -MAX_SAFE_INTEGER:
        return f"must be at most 2^53 - 1 in magnitude ({MAX_SAFE_INTEGER})"
    if value < minimum:
        return f"must be >= {minimum}"
    return None


def _counter(value: Any) -> str | None:
    return _integer(value, 0)


def _signed(value: Any) -> str | None:
    return _integer(value, -MAX_SAFE_INTEGER)


def _one_of(allowed: tuple[str, ...]) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if isinstance(value, str) and value in allowed:
            return None
        return "must be one of " + ", ".join(f'"{a}"' for a in allowed)

    return check


def _schema_version(value: Any) -> str | None:
    return None if type(value) is int and value == SCHEMA else f"must be the number {SCHEMA}"


def _iso_date(value: Any) -> str | None:
    if not isinstance(value, str):
        return "must be an ISO 8601 string"
    if not _ISO_DATE.fullmatch(value):
        return ("must be ISO 8601 with date, time and offset, "
                "as toISOString() writes it (2026-10-30T09:12:04.512Z)")
    try:
        moment = parse_instant(value)
    except ValueError as exc:
        return f"is not a valid date-time: {exc}"
    if not 1 < moment.year < 9999:
        # Days are cut in any zone: years 1 and 9999 could leave datetime's range there.
        return "year must be between 0002 and 9998"
    return None


def _object(value: Any) -> str | None:
    return None if isinstance(value, dict) else "must be a JSON object"


def _check_common(c: _Checker) -> str | None:
    """Check the fields every type shares; return the type when it is a known one."""
    ev = c.event
    c.need(ev, "schema", "", _schema_version)
    c.need(ev, "id", "", _non_empty_string)
    c.need(ev, "date", "", _iso_date)
    c.need(ev, "client", "", _non_empty_string)
    c.need(ev, "session_id", "", _string)
    if c.need(ev, "type", "", _one_of(TYPES)):
        return str(ev["type"])
    return None


def _check_delegation(c: _Checker) -> None:
    ev = c.event
    c.need(ev, "demande_id", "", _string)
    c.need(ev, "agent_id", "", _nullable_string)
    c.need(ev, "par_subagent", "", _boolean)
    c.need(ev, "retour", "", _one_of(RETOURS))
    c.need(ev, "tokens_entree", "", _counter)
    c.need(ev, "tokens_sortie", "", _counter)
    if c.need(ev, "estimation", "", _object):
        est = ev["estimation"]
        for key in ("lus", "ecrits", "consigne", "rendus"):
            c.need(est, key, "estimation.", _counter)
        c.need(est, "evites", "estimation.", _signed)
        c.need(est, "methode", "estimation.", _string)


def _check_pilotage(c: _Checker) -> None:
    ev = c.event
    c.need(ev, "agent_id", "", _string)
    c.need(ev, "turn_id", "", _string)
    c.need(ev, "modele", "", _string)
    c.need(ev, "cout", "", _counter)
    present, ids = c.get(ev, "demande_ids", "demande_ids")
    if present:
        if not isinstance(ids, list):
            c.fault("demande_ids", "must be a list of strings")
        elif not ids:
            c.fault("demande_ids", "must hold at least one demande_id")
        else:
            for i, demande_id in enumerate(ids):
                problem = _string(demande_id)
                if problem:
                    c.fault(f"demande_ids[{i}]", problem)
    if c.need(ev, "usage", "", _object):
        usage = ev["usage"]
        for key in ("input_tokens", "output_tokens",
                    "cache_read_input_tokens", "cache_creation_input_tokens"):
            c.need(usage, key, "usage.", _counter)


def _check_correction(c: _Checker) -> None:
    ev = c.event
    c.need(ev, "demande_id", "", _string)
    c.need(ev, "outil", "", _one_of(OUTILS))
    c.need(ev, "tool_use_id", "", _string)
    for key in ("tokens_lus", "tokens_ecrits", "cout"):
        c.need(ev, key, "", _counter)


_BY_TYPE = {
    "delegation": _check_delegation,
    "pilotage": _check_pilotage,
    "correction": _check_correction,
}


def validate_event(index: int, event: Any) -> list[Fault]:
    """Every fault of one event at position ``index`` of the batch (empty when valid).

    Unknown fields are ignored (contract: "champs inconnus ignorés"); ``null`` is accepted
    only for a delegation's ``agent_id``.
    """
    faults: list[Fault] = []
    if not isinstance(event, dict):
        faults.append(Fault(index, "evenement", "each event must be a JSON object"))
        return faults
    checker = _Checker(index, event, faults)
    kind = _check_common(checker)
    if kind is not None:
        _BY_TYPE[kind](checker)
    return faults


def validate_batch(body: Any) -> list[Received]:
    """Check a decoded request body and return its events as typed values, in batch order.

    ``body`` is the decoded JSON: an object whose ``evenements`` is a list of 1 to
    ``MAX_BATCH`` events; other top-level keys are ignored. The batch is accepted or
    refused whole (contract, "Réponses attendues").

    Raises ``SchemaError`` listing every fault when anything is wrong.
    """
    faults: list[Fault] = []
    if not isinstance(body, dict):
        raise SchemaError([Fault(None, "evenements",
                                 'the body must be a JSON object with an "evenements" list')])
    if "evenements" not in body:
        raise SchemaError([Fault(None, "evenements", "required field is missing")])
    events = body["evenements"]
    if not isinstance(events, list):
        raise SchemaError([Fault(None, "evenements", "must be a list of events")])
    if not events:
        faults.append(Fault(None, "evenements", "must hold at least one event"))
    elif len(events) > MAX_BATCH:
        faults.append(Fault(None, "evenements",
                            f"holds {len(events)} events; at most {MAX_BATCH} per batch"))
    for index, event in enumerate(events):
        faults.extend(validate_event(index, event))
    if faults:
        raise SchemaError(faults[:MAX_FAULTS], omitted=max(0, len(faults) - MAX_FAULTS))
    return [from_payload(event) for event in events]
