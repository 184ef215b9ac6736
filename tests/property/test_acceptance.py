"""The compiled check (``domain.acceptance``) and the detailed validator
(``domain.validation``) give the same verdict on every body (ADR-0061).

Both read ``domain.schema``; this holds the compiled translation to the checks it stands
for. Bodies are the valid events of the contract with one field, at any depth, replaced
by an arbitrary JSON value, removed, or left alone, and hostile values near every bound
(2^53, 512 characters, 64 beyond ASCII, U+0000 and lone surrogates, instants with a final
newline, booleans and floats for integers).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miam_economies.domain.acceptance import accept_batch, compiled_check
from miam_economies.domain.schema import MAX_BATCH, MAX_NON_ASCII, MAX_SAFE_INTEGER, MAX_STRING
from miam_economies.domain.strict_json import dumps_text
from miam_economies.domain.validation import SchemaError, validate_batch
from tests.conftest import EXAMPLE_BATCH, EXAMPLE_CORRECTION

VALID = [*EXAMPLE_BATCH["evenements"], EXAMPLE_CORRECTION]

NEAR_BOUNDS = st.sampled_from([
    0, -1, 1, MAX_SAFE_INTEGER, MAX_SAFE_INTEGER + 1, -MAX_SAFE_INTEGER,
    -MAX_SAFE_INTEGER - 1, 2**64, True, False, 3.0, 0.5, None, "", "x" * MAX_STRING,
    "x" * (MAX_STRING + 1), "é" * MAX_STRING, "2026-10-30T09:12:04.512Z",
    "2026-10-30T09:12:04.512Z\n", "2026-02-29T00:00:00Z", "2024-02-29T00:00:00+23:59",
    "2026-10-30T09:12:04+24:00", "2026-10-30 09:12:04Z", "9999-01-01T00:00:00Z", [], [""],
    ["a", 1], {}, "delegation", "pilotage", "correction", "Read", "apercu", "complet", 1.0,
    "a\u0000b", "\u00e9" * MAX_NON_ASCII, "\u00e9" * (MAX_NON_ASCII + 1), "t\ud800",
])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False,
                                                          allow_infinity=False)
    | st.text(max_size=8) | NEAR_BOUNDS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                max_size=3),
    max_leaves=6,
)


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path inside ``value`` (dicts and lists), the root excluded."""
    found = []
    if isinstance(value, dict):
        items: list[tuple[Any, Any]] = list(value.items())
    elif isinstance(value, list):
        items = list(enumerate(value))
    else:
        return []
    for key, item in items:
        found.append((*prefix, key))
        found.extend(paths(item, (*prefix, key)))
    return found


@st.composite
def bodies(draw: st.DrawFn) -> Any:
    events = [copy.deepcopy(draw(st.sampled_from(VALID)))
              for _ in range(draw(st.integers(1, 3)))]
    for event in events:
        for _ in range(draw(st.integers(0, 2))):
            path = draw(st.sampled_from(paths(event)))
            *parents, last = path
            target = event
            for key in parents:
                target = target[key]
            if draw(st.booleans()) and isinstance(target, dict):
                del target[last]
            else:
                # A copy: sampled values ([], {}) are shared objects, and a later
                # mutation inside one must not reach another event, nor itself.
                target[last] = copy.deepcopy(draw(JSON))
    return draw(st.sampled_from([
        {"evenements": events}, {"evenements": events, "autre": 1}, events,
        {"evenements": events[0]}, {"evenements": []},
    ]))


def verdict(body: Any) -> bool:
    try:
        validate_batch(body)
    except SchemaError:
        return False
    return True


@settings(max_examples=1500, deadline=None)
@given(body=bodies())
def test_the_compiled_check_and_the_validator_agree(body: Any) -> None:
    assert compiled_check(body) is verdict(body)
    # Given the bytes, as the POST does: a plain body skips the walk of its strings.
    for raw in (dumps_text(body).encode(), json.dumps(body).encode()):
        assert compiled_check(body, raw) is verdict(body)


@given(body=bodies())
def test_accept_batch_refuses_with_every_fault_the_validator_lists(body: Any) -> None:
    try:
        validate_batch(body)
    except SchemaError as expected:
        with pytest.raises(SchemaError) as got:
            accept_batch(body)
        assert got.value.faults == expected.faults
    else:
        assert accept_batch(body) == body["evenements"]


def test_a_batch_past_the_limit_is_refused_by_both() -> None:
    body = {"evenements": [copy.deepcopy(VALID[0]) for _ in range(MAX_BATCH + 1)]}
    assert not compiled_check(body)
    assert not verdict(body)


def test_accepted_events_are_the_objects_received_unknown_fields_kept() -> None:
    event = {**copy.deepcopy(VALID[1]), "inconnu": {"n": 2**70}}
    (accepted,) = accept_batch({"evenements": [event]})
    assert accepted is event
