"""The declaration of ``domain.schema`` is the one source (ADR-0046): the validator and the
OpenAPI document generated from it accept exactly the same events, the instant's pattern
accepts exactly the dates the step-by-step check accepts, and the typed values hold the
declared fields.

The document is read as schemathesis reads it (``tests.oas30``).
"""

from __future__ import annotations

import copy
import dataclasses
import re
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from miam_economies.api.http.openapi import EVENT_SCHEMAS, batch_schema, event_schema
from miam_economies.domain.events import Correction, Delegation, Evenement, Pilotage
from miam_economies.domain.schema import (
    COMMON,
    EVENTS,
    INSTANT_PATTERN,
    MAX_BATCH,
    MAX_NON_ASCII,
    MAX_SAFE_INTEGER,
    MAX_STRING,
    Field,
    Record,
)
from miam_economies.domain.validation import (
    SchemaError,
    _instant_fault,
    validate_batch,
    validate_event,
)
from tests.conftest import EXAMPLE_BATCH, EXAMPLE_CORRECTION
from tests.oas30 import validator

VALID = {"delegation": EXAMPLE_BATCH["evenements"][0],
         "pilotage": EXAMPLE_BATCH["evenements"][1], "correction": EXAMPLE_CORRECTION}


COMPONENTS = {name: event_schema(kind) for kind, name in EVENT_SCHEMAS.items()}
DOCUMENT = {kind: validator(event_schema(kind), COMPONENTS) for kind in EVENTS}
BATCH = validator(batch_schema(), COMPONENTS)


def paths(fields: tuple[Field, ...], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every declared field's path, records' fields included."""
    found = []
    for field in fields:
        found.append((*prefix, field.name))
        if isinstance(field.kind, Record):
            found.extend(paths(field.kind.fields, (*prefix, field.name)))
    return found


PROBES = [None, True, False, 0, 1, -1, 1.5, 3.0, MAX_SAFE_INTEGER, MAX_SAFE_INTEGER + 1,
          -MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER - 1, "", "x", "x" * MAX_STRING,
          "x" * (MAX_STRING + 1), "\U0001f600" * MAX_STRING, "٢", [], ["a"], ["a", 1], ["a"] * 3,
          ["x" * (MAX_STRING + 1)], {}, {"a": 1}, "2026-10-30T09:12:04.512Z",
          "2026-10-30T09:12:04.512", "0001-01-01T00:00:00Z", "complet", "apercu", "Read",
          "Bash", "delegation", "pilotage", "correction", "a\u0000b", "\u0000",
          "\u00e9" * MAX_NON_ASCII, "\u00e9" * (MAX_NON_ASCII + 1),
          "x" * 400 + "\U0001f600" * MAX_NON_ASCII, ["a", "b\u0000"]]
"""Values each declared field is set to in turn: every kind's edges."""

CASES = [(kind, path) for kind, fields in EVENTS.items() for path in paths(COMMON + fields)]


def with_value(kind: str, path: tuple[str, ...], value: Any = ...) -> dict[str, Any]:
    """The valid event of ``kind`` with the field at ``path`` set (or removed: ``...``)."""
    event = copy.deepcopy(VALID[kind])
    target = event
    for key in path[:-1]:
        target = target[key]
    if value is ...:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return event


def accepted(event: Any) -> bool:
    return validate_event(0, event) == []


def test_the_valid_events_are_valid_for_both() -> None:
    for kind, event in VALID.items():
        assert accepted(event)
        assert DOCUMENT[kind].is_valid(event)


@pytest.mark.parametrize(("kind", "path"), CASES)
def test_every_declared_field_is_judged_alike_by_the_document_and_the_validator(
        kind: str, path: tuple[str, ...]) -> None:
    for value in [..., *PROBES]:
        event = with_value(kind, path, value)
        assert DOCUMENT[kind].is_valid(event) == accepted(event), (path, value)


@pytest.mark.parametrize("kind", list(EVENTS))
def test_unknown_fields_are_allowed_by_both(kind: str) -> None:
    event = copy.deepcopy(VALID[kind])
    event["nouveau"] = None
    for record in ("estimation", "usage"):
        if record in event:
            event[record]["nouveau"] = [1.5]

    assert accepted(event) and DOCUMENT[kind].is_valid(event)


@pytest.mark.parametrize("size", [0, 1, MAX_BATCH, MAX_BATCH + 1])
def test_the_batch_size_is_judged_alike(size: int) -> None:
    body = {"evenements": [VALID["correction"]] * size}

    try:
        validate_batch(body)
        valid = True
    except SchemaError:
        valid = False

    assert BATCH.is_valid(body) == valid == (1 <= size <= MAX_BATCH)


def test_the_typed_values_hold_exactly_the_declared_fields() -> None:
    common = {f.name for f in dataclasses.fields(Evenement)} - {"payload"}
    for cls, kind in ((Delegation, "delegation"), (Pilotage, "pilotage"),
                      (Correction, "correction")):
        declared = {f.name for f in COMMON + EVENTS[kind]} - {"schema"}
        assert {f.name for f in dataclasses.fields(cls)} - {"payload"} == declared | common


# --- The instant ------------------------------------------------------------------------


def judged_alike(date: str) -> bool:
    """Whether the pattern (as Python and as the document's ECMA reading) accepts ``date``
    exactly when the step-by-step check does."""
    by_steps = _instant_fault(date) is None
    by_pattern = re.fullmatch(INSTANT_PATTERN, date) is not None
    return by_pattern == by_steps == DATE_SCHEMA.is_valid(date)


DATE_SCHEMA = validator(event_schema("correction")["properties"]["date"], COMPONENTS)
YEARS = ["0000", "0001", "0002", "0004", "0100", "0400", "1600", "1700", "1900", "2000",
         "2024", "2026", "2100", "9996", "9998", "9999"]


def test_every_day_of_the_calendar_is_judged_alike() -> None:
    dates = [f"{year}-{month:02d}-{day:02d}T09:12:04.512Z"
             for year in YEARS for month in range(14) for day in range(33)]

    assert [d for d in dates if not judged_alike(d)] == []
    assert judged_alike("1600-02-29T00:00:00Z") and _instant_fault("1600-02-29T00:00:00Z") is None


def test_every_time_and_offset_is_judged_alike() -> None:
    times = [f"2026-10-30T{h:02d}:{m:02d}:{s:02d}Z"
             for h in range(26) for m in range(62) for s in (0, 59, 60, 61)]
    offsets = [f"2026-10-30T09:12:04{sign}{h:02d}:{m:02d}"
               for sign in "+-" for h in range(30) for m in range(100)]
    fractions = [f"2026-10-30T09:12:04{dot}{'1234567890'[:n]}Z"
                 for dot in ".," for n in range(11)]

    assert [d for d in times + offsets + fractions if not judged_alike(d)] == []


def two(low: int, high: int) -> st.SearchStrategy[str]:
    return st.integers(low, high).map("{:02d}".format)


OFFSETS = st.sampled_from(["Z", "z", "", "+00:00", "-00:00", "+23:59", "+23:60", "-23:60",
                           "+24:00", "+00:99", "+5:00", "+05:00:00", "+0500", "Z\n"])
FRACTIONS = st.sampled_from(["", ".", ".512", ".123456789", ".1234567890", ",5"])
DATE_LIKE = st.builds("{}-{}-{}T{}:{}:{}{}{}".format, st.sampled_from(YEARS) | st.from_regex(
    r"[0-9]{4}", fullmatch=True), two(0, 13), two(0, 32), two(0, 25), two(0, 61), two(0, 61),
    FRACTIONS, OFFSETS)


@settings(max_examples=500)
@given(date=DATE_LIKE | st.text(max_size=30) | DATE_LIKE.flatmap(
    lambda d: st.builds(lambda i, c: d[:i] + c + d[i + 1:], st.integers(0, len(d)),
                        st.characters(blacklist_categories=("Cs",)))))
@example("2026-10-30T09:12:04.512Z\n")
@example("٢٠٢٦-10-30T09:12:04Z")
def test_any_string_is_judged_alike_by_the_instant_pattern_and_the_step_by_step_check(
        date: str) -> None:
    assert judged_alike(date)
