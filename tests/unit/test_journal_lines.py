"""Unit tests of ``projections.journal.parse_line``: one line of MIAM's ``delegations.jsonl``
(issue 3, "MIAM journal join"). A malformed line gives None and is counted, never fatal."""

from __future__ import annotations

import json

import pytest

from miam_economies.projections.journal import parse_line
from miam_economies.projections.view import JournalLine


def test_a_line_keeps_its_scalar_fields_as_text_and_drops_the_rest() -> None:
    raw = json.dumps({
        "demande_id": "dem-1",
        "preset": "résumé",
        "n": 3,
        "ok": True,
        "x": None,
        "nested": {"a": 1},
        "tags": ["a", "b"],
    }).encode("utf-8")
    line = parse_line(raw)
    assert line == JournalLine("dem-1", {"preset": "résumé", "n": "3", "ok": "true"})
    assert line is not None
    assert set(line.valeurs) == {"preset", "n", "ok"}


@pytest.mark.parametrize(
    ("value", "text"),
    [("3", "3"), ("", ""), (False, "false"), (0, "0"), (-12, "-12"), (2**64, str(2**64)),
     (1.5, "1.5")],
)
def test_a_scalar_value_becomes_its_json_text_and_a_string_stays_as_is(
    value: object, text: str
) -> None:
    line = parse_line(json.dumps({"demande_id": "d", "champ": value}).encode("utf-8"))
    assert line == JournalLine("d", {"champ": text})


def test_a_string_that_looks_like_a_number_stays_apart_from_the_number() -> None:
    as_string = parse_line(b'{"demande_id": "d", "n": "3"}')
    as_number = parse_line(b'{"demande_id": "d", "n": 3}')
    assert as_string == as_number == JournalLine("d", {"n": "3"})
    assert parse_line(b'{"demande_id": "d", "ok": "true"}') == JournalLine("d", {"ok": "true"})


def test_a_line_with_only_a_demande_id_has_no_valeurs() -> None:
    assert parse_line(b'{"demande_id": "dem-9c8a4d0189"}') == JournalLine("dem-9c8a4d0189", {})


@pytest.mark.parametrize(
    "raw",
    [
        b'{"preset": "p", "format": "f"}',
        b'{"demande_id": null, "preset": "p"}',
        b'{"demande_id": 12, "preset": "p"}',
        b'{"demande_id": true, "preset": "p"}',
        b'{"demande_id": ["dem-1"], "preset": "p"}',
        b'{"demande_id": {"id": "dem-1"}, "preset": "p"}',
        b'{"demande_id": "", "preset": "p"}',
        b"{}",
    ],
    ids=["missing", "null", "number", "boolean", "list", "object", "empty", "empty-object"],
)
def test_a_line_without_a_string_demande_id_gives_an_empty_journal_line(raw: bytes) -> None:
    assert parse_line(raw) == JournalLine("", {})


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"   ",
        b"not json",
        b'{"demande_id": "d", "preset": "p"',
        b'{"demande_id": "d",}',
        b"{'demande_id': 'd'}",
        b'{"demande_id": "d"} trailing',
        b'[{"demande_id": "d"}]',
        b"[]",
        b'"dem-1"',
        b"42",
        b"null",
        b"true",
        b'{"demande_id": "d\xff", "preset": "p"}',
        b"\xff\xfe\xfd",
        b'{"demande_id": "d", "preset": "\xc3"}',
        b'{"demande_id": "d", "preset": "\xed\xa0\x80"}',
        b'{"demande_id": "\xed\xa0\x80"}',
        b"\xff\xfe" + '{"demande_id": "d", "preset": "p"}'.encode("utf-16-le"),
        '{"demande_id": "d", "preset": "p"}'.encode("utf-16-le"),
        b"[" * 100000,
        b'{"a":' * 100000,
    ],
    ids=["empty", "blank", "text", "truncated", "trailing-comma", "single-quotes",
         "trailing-text", "array-of-object", "empty-array", "string", "number", "null",
         "boolean", "invalid-utf8-in-id", "invalid-utf8-bytes", "truncated-utf8-sequence",
         "utf8-encoded-surrogate-in-value", "utf8-encoded-surrogate-in-id",
         "utf16-with-bom", "utf16-without-bom", "deeply-nested-array",
         "deeply-nested-object"],
)
def test_a_malformed_line_gives_none_and_never_raises(raw: bytes) -> None:
    assert parse_line(raw) is None


def test_a_lone_surrogate_escape_is_refused_never_stored() -> None:
    # What the view stores must encode as UTF-8: a lone surrogate would fail the insert on
    # every retry and stall the journal join. The line is counted as malformed instead.
    assert parse_line(b'{"demande_id": "d", "preset": "\\ud800", "ok": "\\u00e9"}') is None


def test_escaped_text_is_kept_as_text_that_encodes_as_utf8() -> None:
    line = parse_line(b'{"demande_id": "d\\u00e9", "preset": "\\u00e9t\\u00e9", "n": 3}')
    assert line == JournalLine("d\u00e9", {"preset": "\u00e9t\u00e9", "n": "3"})
    for text in (line.demande_id, *line.valeurs, *line.valeurs.values()):
        text.encode("utf-8")


def test_values_no_backend_can_keep_are_left_out_and_counted() -> None:
    # Any length and content is MIAM's to write (ADR-0135): a NUL, a long error text, a
    # name past the rule are left out of the join, counted; the rest of the line joins.
    wide = "\u65e5" * 65
    raw = json.dumps({"demande_id": "d", "preset": "rapide", "erreur": "x" * 513,
                      "note": "a\u0000b", wide: "v", "court": wide[:64]}).encode()
    line = parse_line(raw)
    assert line == JournalLine("d", {"preset": "rapide", "court": wide[:64]}, ecartees=3)


def test_a_demande_id_no_event_can_carry_joins_nothing() -> None:
    for demande_id in ("d\u0000", "d" * 513, "\u00e9" * 65):
        line = parse_line(json.dumps({"demande_id": demande_id, "preset": "p"}).encode())
        assert line == JournalLine("", {}, ecartees=1)
