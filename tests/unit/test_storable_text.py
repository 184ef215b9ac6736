"""The storable text rule (``domain.storable_text``, ADR-0135), the text the store writes
back (``strict_json.dumps_text``), and which errors set an event aside
(``projections.set_aside.poisoned``)."""

from __future__ import annotations

import json
import re

import psycopg
import pytest
from eventsourcing.persistence import DataError, IntegrityError, OperationalError
from hypothesis import example, given
from hypothesis import strategies as st

from miam_economies.api.http.openapi import TEXT_PATTERN
from miam_economies.api.store.mapper import EconomiesMapper
from miam_economies.api.store.transcoder import OrjsonTranscoder
from miam_economies.domain.events import CONFLIT_TOPIC, Conflit, Ecarte, from_payload
from miam_economies.domain.schema import MAX_NON_ASCII, MAX_STRING
from miam_economies.domain.storable_text import plain_json, stored_fault, text_fault
from miam_economies.domain.strict_json import dumps_text, loads_strict
from miam_economies.projections.set_aside import poisoned
from tests.conftest import EXAMPLE_BATCH

PATTERN = re.compile(TEXT_PATTERN)


@pytest.mark.parametrize(("value", "fault"), [
    ("", None), ("claude-code", None), ("x" * MAX_STRING, None),
    ("x" * (MAX_STRING + 1), "at most 512 characters"),
    ("\u00e9" * MAX_NON_ASCII + "x" * (MAX_STRING - MAX_NON_ASCII), None),
    ("\U0001f600" * MAX_NON_ASCII, None),
    ("\U0001f600" * (MAX_NON_ASCII + 1), "at most 64 characters beyond ASCII (65 here)"),
    ("a\u0000b", "U+0000"), ("\u0000", "U+0000"), ("\u00e9\u0000", "U+0000"),
    ("t\ud800", "lone UTF-16 surrogate"), ("\udfff", "lone UTF-16 surrogate"),
])
def test_the_rule(value: str, fault: str | None) -> None:
    found = text_fault(value)
    assert (found is None) if fault is None else (found is not None and fault in found)


@given(st.text(max_size=MAX_STRING + 8))
@example("\u00e9" * MAX_NON_ASCII + "x" * (MAX_STRING - MAX_NON_ASCII))
@example("\u00e9" * (MAX_NON_ASCII + 1))
@example("x" * 300 + "\U0001f600" * MAX_NON_ASCII)
@example("x" * 300 + "\U0001f600" * (MAX_NON_ASCII + 1))
@example("a\u0000")
def test_the_openapi_pattern_says_the_rule_but_for_lone_surrogates(value: str) -> None:
    # hypothesis's text has no surrogates: the pattern and the rule on everything else.
    fits = len(value) <= MAX_STRING and PATTERN.search(value) is not None
    assert fits == (text_fault(value) is None)


def test_a_lone_surrogate_passes_the_pattern_and_not_the_rule() -> None:
    # What the document's description says: the one case a pattern cannot state.
    assert PATTERN.search("t\ud800") is not None and text_fault("t\ud800") is not None


@given(st.text(max_size=MAX_STRING), st.booleans())
def test_a_plain_body_needs_no_walk(value: str, ascii_only: bool) -> None:
    # What plain_json lets skip the walk: strings the rule has nothing against.
    raw = json.dumps({"a": value}, ensure_ascii=ascii_only).encode()
    if plain_json(raw):
        assert text_fault(value) is None
    if not value.isascii() or "\x00" in value:
        assert not plain_json(raw)


def test_a_stored_event_breaking_the_rule_names_its_field() -> None:
    delegation, pilotage = (from_payload(e) for e in EXAMPLE_BATCH["evenements"])
    assert stored_fault(delegation) is None and stored_fault(pilotage) is None
    bad = from_payload({**EXAMPLE_BATCH["evenements"][1], "demande_ids": ["d", "e\u0000"]})
    assert (stored_fault(bad) or "").startswith("demande_ids[1] must not hold")


def test_the_store_reads_a_bad_payload_as_set_aside_never_raising() -> None:
    mapper = EconomiesMapper(transcoder=OrjsonTranscoder())
    good = json.dumps(EXAMPLE_BATCH["evenements"][0])
    nul = json.dumps({**EXAMPLE_BATCH["evenements"][0], "client": "a\u0000"})
    rows = [(n, "miam_economies.domain.events:DelegationRecue",
             json.dumps({"timestamp": 0, "payload": text, "recu_le": ""}).encode())
            for n, text in ((1, good), (2, nul), (3, '{"type": "delegation"}'),
                            (4, "not json"))]
    conflicts = [(n, CONFLIT_TOPIC, json.dumps({"timestamp": 0, "payload": good,
                                                "recu_le": "", "client": client}).encode())
                 for n, client in ((5, "claude-code"), (6, "a\u0000"))]
    values = mapper.values(rows + conflicts)
    assert values[0] == from_payload(EXAMPLE_BATCH["evenements"][0])
    assert [type(v) for v in values[1:]] == [Ecarte, Ecarte, Ecarte, Conflit, Ecarte]
    assert [v.position for v in values if isinstance(v, Ecarte)] == [2, 3, 4, 6]


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=4), inner, max_size=3)))
def test_dumps_text_encodes_as_utf8_and_reads_back_equal(document: object) -> None:
    text = dumps_text(document)
    assert loads_strict(text.encode("utf-8"), lone_surrogates=True) == document


def test_a_lone_surrogate_is_written_as_its_escape() -> None:
    text = dumps_text({"titre": "a\ud800b\u00e9", "n": 2**80})
    assert text == '{"titre":"a\\ud800b\u00e9","n":' + str(2**80) + "}"


def test_only_errors_of_the_data_set_an_event_aside() -> None:
    def caused(cause: BaseException, outer: type[Exception]) -> Exception:
        try:
            raise outer(str(cause)) from cause
        except outer as exc:
            return exc

    assert poisoned(DataError("PostgreSQL text fields cannot contain NUL (0x00) bytes"))
    assert poisoned(caused(psycopg.errors.ProgramLimitExceeded("index row size"),
                           OperationalError))
    assert poisoned(caused(psycopg.errors.UntranslatableCharacter("LATIN1"),
                           OperationalError))
    assert poisoned(caused(psycopg.errors.CharacterNotInRepertoire("0x00"), DataError))
    assert not poisoned(caused(psycopg.errors.DivisionByZero("a bug of ours"), DataError))
    assert not poisoned(caused(psycopg.errors.InvalidTextRepresentation("bad cast"),
                               DataError))
    assert not poisoned(OperationalError("database is locked"))
    assert not poisoned(caused(psycopg.errors.LockNotAvailable("lock timeout"),
                               OperationalError))
    assert not poisoned(caused(psycopg.OperationalError("connection refused"),
                               OperationalError))
    assert not poisoned(IntegrityError("position moved"))
