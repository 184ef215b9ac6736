"""Accepting a POST /economies batch fast: the schema compiled into ``msgspec`` types.

``accept_batch`` is what the HTTP edge and ``import`` call. It converts the decoded body
into typed, constrained ``msgspec`` structs built from ``domain.schema``, the one
declaration of the event schema (ADR-0046): a compiled check, about five times faster
than walking the schema in Python (ADR-0061). ``msgspec`` stops at the first fault, and
the contract wants them all: whenever it refuses, ``domain.validation.validate_batch``
checks the batch again and lists every fault (contract, "Réponses attendues"). Both read
the same table; a property test holds them to the same verdict on every body.

Pure: no I/O, no clock.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias, Union

import msgspec
from msgspec import Meta

from miam_economies.domain.schema import (
    COMMON,
    EVENTS,
    INSTANT_PATTERN,
    MAX_BATCH,
    MAX_SAFE_INTEGER,
    MAX_STRING,
    TYPE,
    Boolean,
    Exactly,
    Field,
    Instant,
    Integer,
    Kind,
    OneOf,
    Record,
    Text,
    TextList,
)
from miam_economies.domain.storable_text import plain_json, text_fault
from miam_economies.domain.validation import validate_batch

Payload: TypeAlias = dict[str, Any]
"""One event as received: the decoded JSON object, unknown fields included."""

_TEXT = Annotated[str, Meta(max_length=MAX_STRING)]


def _type_of(kind: Kind, name: str) -> Any:
    """The ``msgspec`` type that accepts exactly the values ``kind`` accepts (the checks
    of ``domain.validation``, one for one; strict conversion refuses a boolean or a float
    where an integer is declared, as ``validation._integer`` does)."""
    match kind:
        case Integer(minimum=minimum):
            return Annotated[int, Meta(ge=max(minimum, -MAX_SAFE_INTEGER),
                                       le=MAX_SAFE_INTEGER)]
        case Exactly(value=value):
            return Literal[value]
        case Text(non_empty=non_empty, nullable=nullable):
            text = Annotated[str, Meta(min_length=1 if non_empty else 0,
                                       max_length=MAX_STRING)]
            return Union[text, None] if nullable else text  # noqa: UP007 (a runtime type)
        case Boolean():
            return bool
        case OneOf(values=values):
            return Literal[values]
        case Instant():
            # msgspec searches: anchor both ends (\Z, not $, which allows a final newline).
            return Annotated[str, Meta(pattern=f"^(?:{INSTANT_PATTERN})\\Z")]
        case TextList():
            return Annotated[list[_TEXT], Meta(min_length=1)]
        case Record(fields=fields):
            return _struct(name, fields)
    raise TypeError(f"no msgspec type for {kind!r}")  # declared in domain.schema only


def _struct(name: str, fields: tuple[Field, ...], **options: Any) -> type[msgspec.Struct]:
    # gc=False: these structs hold no cycles, and a batch of 500 would otherwise wake the
    # cyclic collector for nothing.
    return msgspec.defstruct(name, [(f.name, _type_of(f.kind, f.name)) for f in fields],
                             gc=False, **options)


_COMMON = tuple(field for field in COMMON if field.name != TYPE)  # the tag says the type
_EVENT_TYPES = tuple(
    _struct(kind.capitalize(), (*_COMMON, *fields), tag_field=TYPE, tag=kind)
    for kind, fields in EVENTS.items()
)
_Batch = msgspec.defstruct("Batch", [(
    "evenements",
    Annotated[list[Union[_EVENT_TYPES]], Meta(min_length=1, max_length=MAX_BATCH)],  # type: ignore[valid-type]  # noqa: UP007
)], gc=False)


def _text_paths(fields: tuple[Field, ...], prefix: tuple[str, ...] = ()
                ) -> list[tuple[str, ...]]:
    """The key paths of the strings (``Text``, ``TextList``) among ``fields``."""
    paths: list[tuple[str, ...]] = []
    for f in fields:
        if isinstance(f.kind, Text | TextList):
            paths.append((*prefix, f.name))
        elif isinstance(f.kind, Record):
            paths += _text_paths(f.kind.fields, (*prefix, f.name))
    return paths


_TEXTS = {kind: tuple(_text_paths((*_COMMON, *fields))) for kind, fields in EVENTS.items()}
"""Per event type, where its strings are: the storable text rule's walk (ADR-0135)."""


def _texts_storable(events: list[Payload]) -> bool:
    """Whether every string of ``events`` (a batch the compiled types accepted) keeps the
    storable text rule (``domain.storable_text``), which ``msgspec`` cannot state."""
    for event in events:
        for path in _TEXTS[event[TYPE]]:
            value: Any = event
            for key in path:
                value = value[key]
            if value is None:
                continue
            for text in value if isinstance(value, list) else (value,):
                if text_fault(text) is not None:
                    return False
    return True


def compiled_check(body: Any, raw: bytes | None = None) -> bool:
    """Whether the compiled types accept ``body`` (the decoded JSON of a batch): exactly
    when ``validation.validate_batch`` finds no fault (a property test holds them to it).
    ``raw``: the bytes ``body`` was decoded from, when known: a plain one
    (``storable_text.plain_json``) needs no walk of its strings. Never raises."""
    try:
        msgspec.convert(body, _Batch, strict=True)
    except (msgspec.ValidationError, UnicodeEncodeError):  # msgspec's, for a lone surrogate
        return False
    return (raw is not None and plain_json(raw)) or _texts_storable(body["evenements"])


def accept_batch(body: Any, raw: bytes | None = None) -> list[Payload]:
    """The events of an accepted batch, as received (dicts, unknown fields included), in
    batch order.

    ``body`` is the decoded JSON (``domain.strict_json.loads_strict``): an object whose
    ``evenements`` is a list of 1 to ``MAX_BATCH`` events; other top-level keys are
    ignored; ``raw``, the bytes it was decoded from when known (the check of its strings
    is then skipped when they are all plain ASCII: ``compiled_check``). The batch is
    accepted or refused whole, by the rules of ``domain.schema`` (SPEC, "Events (schema
    1)") and of ``domain.storable_text`` (ADR-0135).

    Raises ``validation.SchemaError`` listing every fault when anything is wrong.
    """
    if not compiled_check(body, raw):
        # The slow path says why, every fault of it. It would accept what the compiled
        # check refused only if the two disagreed, which the property test forbids.
        validate_batch(body)
    return list(body["evenements"])
