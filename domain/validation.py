"""Strict validation of one POST /economies batch (pure: no I/O, no clock).

The rules are declared once, in ``domain.schema`` (ADR-0046): this module compiles that
table into plans of checks and walks them; it states no field of its own. Rules come from
the contract (``000_*.txt``, "À implémenter dans MIAM", point 2) as restated in SPEC.md,
"Events (schema 1)". Validation never stops at the first fault: the 422 body lists every
``(index, champ, message)``, capped at ``MAX_FAULTS``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

from miam_economies.domain.errors import MiamEconomiesError
from miam_economies.domain.events import Received, from_payload
from miam_economies.domain.instants import parse_instant
from miam_economies.domain.schema import (
    COMMON,
    EVENTS,
    INSTANT_PATTERN,
    MAX_BATCH,
    MAX_SAFE_INTEGER,
    TYPE,
    Boolean,
    Exactly,
    Field,
    Instant,
    Integer,
    OneOf,
    Record,
    Text,
    TextList,
)
from miam_economies.domain.storable_text import text_fault

MAX_FAULTS = 100
"""Faults listed in one 422 body at most; the count of the rest is reported."""

_INSTANT = re.compile(INSTANT_PATTERN)

# RFC 3339, the profile of ISO 8601 that toISOString() writes: seconds mandatory, fraction
# optional, offset mandatory (SPEC, "Events"). datetime.fromisoformat alone would also take
# compact and week forms, and dates without an offset. Only used to word a refusal.
_ISO_SHAPE = re.compile(
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


class SchemaError(MiamEconomiesError, ValueError):
    """The batch breaks the schema; ``faults`` lists every fault found (up to MAX_FAULTS).

    ``omitted`` counts faults found beyond the cap. Mapped to 422 at the HTTP edge.
    """

    def __init__(self, faults: list[Fault], omitted: int = 0):
        super().__init__(f"{len(faults) + omitted} schema fault(s)")
        self.faults = faults
        self.omitted = omitted


Check: TypeAlias = Callable[[Any], str | None]
"""A field's check: None when the value is good, else the fault's message."""

Inside: TypeAlias = Callable[[Any, int, list[Fault]], None]
"""Checks the insides of a value its own check passed: a record's fields, a list's items."""

Step: TypeAlias = tuple[str, str, Check, Inside | None]
"""One field of a plan: ``(key, champ, check, inside)``, champ being the dotted path."""

_MISSING = "required field is missing"
_ABSENT = object()


def _string(value: Any) -> str | None:
    # A string every backend keeps: the storable text rule (characters, U+0000, lone
    # surrogates; ADR-0135).
    return text_fault(value) if isinstance(value, str) else "must be a string"


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


def _integer(minimum: int) -> Check:
    def check(value: Any) -> str | None:
        # bool is an int subclass and 3.0 is a float: the contract wants a JSON integer.
        if type(value) is not int:
            return "must be a JSON integer (not a boolean, a float or a string)"
        if value > MAX_SAFE_INTEGER or value < -MAX_SAFE_INTEGER:
            return f"must be at most 2^53 - 1 in magnitude ({MAX_SAFE_INTEGER})"
        if value < minimum:
            return f"must be >= {minimum}"
        return None

    return check


def _exactly(number: int) -> Check:
    def check(value: Any) -> str | None:
        return None if type(value) is int and value == number else f"must be the number {number}"

    return check


def _one_of(allowed: tuple[str, ...]) -> Check:
    message = "must be one of " + ", ".join(f'"{a}"' for a in allowed)

    def check(value: Any) -> str | None:
        return None if isinstance(value, str) and value in allowed else message

    return check


def instant_fault(value: Any) -> str | None:
    """Why ``value`` is not a date-time the schema accepts (the events' ``date`` rule:
    ISO 8601 with date, time and offset, as ``toISOString()`` writes it), or None. An
    import's ``recu_le`` follows it too."""
    if isinstance(value, str) and _INSTANT.fullmatch(value):
        return None  # the common case, in one match
    return _instant_fault(value)


def _instant_fault(value: Any) -> str | None:
    # Step by step, to say what is wrong. INSTANT_PATTERN accepts exactly the strings this
    # accepts (tests/unit/test_schema.py): the pattern is a faster way to the same answer.
    if not isinstance(value, str):
        return "must be an ISO 8601 string"
    if not _ISO_SHAPE.fullmatch(value):
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


def _list(item: str) -> Check:
    def check(value: Any) -> str | None:
        if not isinstance(value, list):
            return "must be a list of strings"
        return None if value else f"must hold at least one {item}"

    return check


def _items(champ: str, check: Check) -> Inside:
    def inside(values: list[Any], index: int, faults: list[Fault]) -> None:
        for i, item in enumerate(values):
            problem = check(item)
            if problem:
                faults.append(Fault(index, f"{champ}[{i}]", problem))

    return inside


def _fields(plan: tuple[Step, ...]) -> Inside:
    def inside(obj: dict[str, Any], index: int, faults: list[Fault]) -> None:
        _walk(plan, obj, index, faults)

    return inside


def _step(field: Field, prefix: str) -> Step:
    """The plan step of a declared field: its check, and how to check inside it."""
    champ = prefix + field.name
    kind = field.kind
    match kind:
        case Integer(minimum=minimum):
            return field.name, champ, _integer(minimum), None
        case Exactly(value=number):
            return field.name, champ, _exactly(number), None
        case Text(non_empty=False, nullable=False):
            return field.name, champ, _string, None
        case Text(non_empty=True, nullable=False):
            return field.name, champ, _non_empty_string, None
        case Text(non_empty=False, nullable=True):
            return field.name, champ, _nullable_string, None
        case Boolean():
            return field.name, champ, _boolean, None
        case OneOf(values=values):
            return field.name, champ, _one_of(values), None
        case Instant():
            return field.name, champ, instant_fault, None
        case TextList(item=item):
            return field.name, champ, _list(item), _items(champ, _string)
        case Record(fields=fields):
            plan = tuple(_step(sub, champ + ".") for sub in fields)
            return field.name, champ, _object, _fields(plan)
    raise TypeError(f"no check for {kind!r}")  # declared in domain.schema, unknown here


def _plan(fields: tuple[Field, ...]) -> tuple[Step, ...]:
    return tuple(_step(field, "") for field in fields)


def _walk(plan: tuple[Step, ...], obj: dict[str, Any], index: int,
          faults: list[Fault]) -> None:
    """Append a fault for every step of ``plan`` that ``obj`` breaks, in plan order."""
    for key, champ, check, inside in plan:
        value = obj.get(key, _ABSENT)
        if value is _ABSENT:
            faults.append(Fault(index, champ, _MISSING))
            continue
        problem = check(value)
        if problem:
            faults.append(Fault(index, champ, problem))
        elif inside is not None:
            inside(value, index, faults)


# The declaration (domain.schema), compiled once into plans: tuples of steps.
_COMMON = _plan(COMMON)
_BY_TYPE = {kind: _plan(fields) for kind, fields in EVENTS.items()}


def _check_event(index: int, event: Any, faults: list[Fault]) -> None:
    if not isinstance(event, dict):
        faults.append(Fault(index, "evenement", "each event must be a JSON object"))
        return
    _walk(_COMMON, event, index, faults)
    kind = event.get(TYPE)
    if isinstance(kind, str) and kind in _BY_TYPE:  # a bad type is already a fault
        _walk(_BY_TYPE[kind], event, index, faults)


def validate_event(index: int, event: Any) -> list[Fault]:
    """Every fault of one event at position ``index`` of the batch (empty when valid),
    in the order of ``domain.schema``: the common fields, then the type's.

    Unknown fields are ignored (contract: "champs inconnus ignorés"); ``null`` is accepted
    only for a delegation's ``agent_id``.
    """
    faults: list[Fault] = []
    _check_event(index, event, faults)
    return faults


def _unwrapped(body: dict[str, Any]) -> str:
    # A body without "evenements": most likely one event sent alone, which has a "type".
    if "type" in body:
        return ('required field is missing: the body is {"evenements": [...]}, a list of '
                'events, and this object looks like one event (it has "type"): send '
                '{"evenements": [that event]}')
    return 'required field is missing: the body is {"evenements": [...]}, a list of events'


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
        raise SchemaError([Fault(None, "evenements", _unwrapped(body))])
    events = body["evenements"]
    if not isinstance(events, list):
        raise SchemaError([Fault(None, "evenements", "must be a list of events")])
    if not events:
        faults.append(Fault(None, "evenements", "must hold at least one event"))
    elif len(events) > MAX_BATCH:
        faults.append(Fault(None, "evenements",
                            f"holds {len(events)} events; at most {MAX_BATCH} per batch"))
    for index, event in enumerate(events):
        _check_event(index, event, faults)
    if faults:
        raise SchemaError(faults[:MAX_FAULTS], omitted=max(0, len(faults) - MAX_FAULTS))
    return [from_payload(event) for event in events]
