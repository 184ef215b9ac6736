"""The schema-1 event schema, declared once (ADR-0046).

A table, not code: for each event type, its fields in the order their faults are reported,
each with its kind. ``domain.validation`` walks it to check a batch; ``api.http.openapi``
translates it into the OpenAPI schemas of ``POST /economies``. Neither restates a rule.
Rules: SPEC.md, "Wire contract: POST /economies" and "Events (schema 1)"; the contract,
``000_*.txt``, "Modèle de données". Pure data: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeAlias

from miam_economies.domain.events import OUTILS, RETOURS, SCHEMA, TYPES

MAX_BATCH = 500
"""Events per batch at most (contract, "Transport": ATTENTE_MAX)."""

MAX_STRING = 512
"""Characters (code points) at most in each string field the schema names (ids, client,
modele...): the contract's ids are about 100 characters; a 10,000-character id is refused,
not stored. Unknown fields are bounded only by the body limit."""

MAX_NON_ASCII = 64
"""Characters beyond ASCII at most in each such string, and no U+0000 in it
(``domain.storable_text``, ADR-0135): 448 ASCII characters and 64 of four bytes make
704 bytes, and the widest index row of the projections (a projection name and three such
strings) stays within PostgreSQL's 2,704."""

MAX_SAFE_INTEGER = 2**53 - 1
"""The plugin is JavaScript: integers beyond Number.MAX_SAFE_INTEGER are not exact there."""


@dataclass(frozen=True, slots=True)
class Integer:
    """A JSON integer (not a boolean, not a float, ``3.0`` included) from ``minimum`` to
    ``MAX_SAFE_INTEGER``, and at most ``MAX_SAFE_INTEGER`` in magnitude (SPEC, "Events")."""

    minimum: int


@dataclass(frozen=True, slots=True)
class Exactly:
    """The JSON integer ``value`` and nothing else (the schema version)."""

    value: int


@dataclass(frozen=True, slots=True)
class Text:
    """A JSON string of at most ``MAX_STRING`` characters, ``MAX_NON_ASCII`` of them beyond
    ASCII, without U+0000 or a lone surrogate (``domain.storable_text``); ``non_empty``:
    at least one;
    ``nullable``: ``null`` is allowed too (SPEC: "null is allowed only where the table
    says so")."""

    non_empty: bool = False
    nullable: bool = False


@dataclass(frozen=True, slots=True)
class Boolean:
    """A JSON boolean."""


@dataclass(frozen=True, slots=True)
class OneOf:
    """One of the strings ``values``, exactly (case matters)."""

    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Instant:
    """An instant as JavaScript's ``toISOString()`` writes it (SPEC, "Events"): ISO 8601
    extended form, date, time with seconds, an optional fraction of 1 to 9 digits and a
    mandatory offset (``Z`` or ``±hh:mm``), a real calendar day, years 0002 to 9998.

    ``INSTANT_PATTERN`` is the exact set of strings the validator accepts."""


@dataclass(frozen=True, slots=True)
class TextList:
    """A JSON list of at least one ``Text()``; ``item`` names one element in messages."""

    item: str


@dataclass(frozen=True, slots=True)
class Record:
    """A JSON object holding ``fields``; other keys are allowed and kept."""

    fields: tuple[Field, ...]


Kind: TypeAlias = Integer | Exactly | Text | Boolean | OneOf | Instant | TextList | Record


@dataclass(frozen=True, slots=True)
class Field:
    """A required field: ``name`` as the wire writes it, and its ``kind``."""

    name: str
    kind: Kind


COUNTER = Integer(0)
SIGNED = Integer(-MAX_SAFE_INTEGER)
TEXT = Text()
NON_EMPTY = Text(non_empty=True)

TYPE = "type"
"""The field whose value picks the event type's fields, in ``COMMON``."""

COMMON: tuple[Field, ...] = (
    Field("schema", Exactly(SCHEMA)),
    Field("id", NON_EMPTY),
    Field("date", Instant()),
    Field("client", NON_EMPTY),
    Field("session_id", TEXT),
    Field(TYPE, OneOf(TYPES)),
)
"""The fields every event has; ``type`` last, since its value picks the rest."""

EVENTS: Mapping[str, tuple[Field, ...]] = {
    "delegation": (
        Field("demande_id", TEXT),
        Field("agent_id", Text(nullable=True)),  # null: the main agent delegated
        Field("par_subagent", Boolean()),
        Field("retour", OneOf(RETOURS)),
        Field("tokens_entree", COUNTER),
        Field("tokens_sortie", COUNTER),
        Field("estimation", Record((
            Field("lus", COUNTER),
            Field("ecrits", COUNTER),
            Field("consigne", COUNTER),
            Field("rendus", COUNTER),
            Field("evites", SIGNED),  # never bounded below (contract, "Calcul")
            Field("methode", TEXT),
        ))),
    ),
    "pilotage": (
        Field("agent_id", TEXT),
        Field("turn_id", TEXT),
        Field("modele", TEXT),
        Field("cout", COUNTER),
        Field("demande_ids", TextList("demande_id")),
        Field("usage", Record(tuple(Field(name, COUNTER) for name in (
            "input_tokens", "output_tokens", "cache_read_input_tokens",
            "cache_creation_input_tokens")))),
    ),
    "correction": (
        Field("demande_id", TEXT),
        Field("outil", OneOf(OUTILS)),
        Field("tool_use_id", TEXT),
        Field("tokens_lus", COUNTER),
        Field("tokens_ecrits", COUNTER),
        Field("cout", COUNTER),
    ),
}
"""The fields of each event type beyond ``COMMON``, in the order faults are reported."""

# --- The instant, as one pattern ----------------------------------------------------------
# ECMA-262 and Python read it alike: [0-9], never \d (Unicode digits in Python), and no
# flags. It spells out what Python's datetime.fromisoformat accepts after the shape check:
# real calendar days (leap years included), hours 00-23, seconds 00-59, and offsets
# strictly inside 24 hours, whose minutes fromisoformat reads up to 99 (+00:99 is +01:39).

_YEAR = ("(?:000[2-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-8][0-9]{3}|9[0-8][0-9]{2}"
         "|99[0-8][0-9]|999[0-8])")
_MONTH_DAY = ("(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])"
              "|(?:0[13-9]|1[0-2])-(?:29|30)|(?:0[13578]|1[02])-31)")
_LEAP_YEAR = ("(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])"
              "|(?:0[48]|[2468][048]|[13579][26])00)")
_TIME = "(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]{1,9})?"
_OFFSET = "(?:Z|[+-](?:(?:[01][0-9]|2[0-2]):[0-9]{2}|23:[0-5][0-9]))"

INSTANT_PATTERN = f"(?:{_YEAR}-{_MONTH_DAY}|{_LEAP_YEAR}-02-29)T{_TIME}{_OFFSET}"
"""Exactly the strings an ``Instant`` field accepts (a property test holds the validator's
step-by-step check to it); unanchored: anchor it, or use ``fullmatch``."""
