"""The orjson fast path of ``loads_strict`` gives exactly the stdlib decoder's document, or
steps aside (ADR-0011): never a different document, never a repeated key let through."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from miam_economies.domain.strict_json import _SLOW, _loads_fast, holds_unicode_escape

SCALARS = (st.none() | st.booleans()
           | st.integers(min_value=-(2**70), max_value=2**70)
           | st.floats(allow_nan=False, allow_infinity=False)
           | st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20))
DOCUMENTS = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(
        st.text(max_size=8, alphabet=st.characters(blacklist_categories=("Cs",))), inner,
        max_size=5),
    max_leaves=30,
)


def stdlib(body: bytes) -> Any:
    return json.loads(body.decode("utf-8"))


@given(document=DOCUMENTS, ascii_only=st.booleans(), spaced=st.booleans())
def test_the_fast_path_gives_the_stdlib_document_or_steps_aside(
        document: Any, ascii_only: bool, spaced: bool) -> None:
    separators = (", ", ": ") if spaced else (",", ":")
    body = json.dumps(document, ensure_ascii=ascii_only, separators=separators).encode()
    fast = _loads_fast(body)
    if fast is not _SLOW:
        assert fast == stdlib(body)
        assert json.dumps(fast) == json.dumps(stdlib(body))  # same types, same key order


@given(document=st.dictionaries(st.text(max_size=8), SCALARS, min_size=1, max_size=5),
       value=SCALARS, compact=st.booleans(), data=st.data())
def test_a_repeated_key_never_takes_the_fast_path(document: dict[str, Any], value: Any,
                                                   compact: bool, data: st.DataObject) -> None:
    # Compact (orjson's own writing, as JSON.stringify's): the re-encoded document is one
    # key shorter, never the same bytes (ADR-0183); spaced: the colons' count tells.
    key = data.draw(st.sampled_from(sorted(document)))
    comma, colon = (",", ":") if compact else (", ", ": ")
    text = json.dumps(document, ensure_ascii=False, separators=(comma, colon))
    repeated = text[:-1] + comma + json.dumps(key, ensure_ascii=False) + colon \
        + json.dumps(value, separators=(comma, colon)) + "}"
    assert _loads_fast(repeated.encode()) is _SLOW


@given(document=DOCUMENTS)
@example(document={"n": 10**18, "m": 2**64 - 1, "s": "\x00\x1f\n\"\\", "f": -0.0})
@example(document=["\u2028", "\U0001f600", 1e-7, -(2**63)])
def test_a_body_as_orjson_writes_it_takes_the_fast_path(document: Any) -> None:
    # The plugin's bodies are compact (JSON.stringify): when the document written again is
    # the very body, it is the stdlib's, whatever the scans would have said.
    try:
        body = orjson.dumps(document)
    except orjson.JSONEncodeError:  # an integer past 64 bits: orjson writes none
        return
    assert _loads_fast(body) == stdlib(body)
    assert json.dumps(_loads_fast(body)) == json.dumps(stdlib(body))  # same types, order


@pytest.mark.parametrize(("raw", "escaped"), [
    (b'{"a":"b"}', False), (b'{"a":"b\\nc"}', False), (b'{"a":"\\u00e9"}', True),
    (b'{"a\\"":1,"b":"\\u0000"}', True), (b'{"a":"\\\\u"}', True), (b"", False),
])
def test_a_unicode_escape_is_found_behind_any_backslash(raw: bytes, escaped: bool) -> None:
    # A backslash then u, whatever precedes (conservative: an escaped backslash before
    # a u counts too, as it did before the one-byte scan; ADR-0183).
    assert holds_unicode_escape(raw) is escaped


def test_integers_past_64_bits_and_escapes_step_aside() -> None:
    # orjson refuses a lone surrogate escape: what lets an identical re-encoding through.
    assert _loads_fast(b'["\\ud800"]') is _SLOW
    assert _loads_fast(b'{"a":1,"a":1}') is _SLOW
    assert _loads_fast(b'{"n": 123456789012345678901234567890}') is _SLOW
    assert _loads_fast(b'{"s": "\\u00e9"}') is _SLOW
    assert _loads_fast(b'{"n": 1, "s": "caf\xc3\xa9: ok"}') == {"n": 1, "s": "café: ok"}


def test_nesting_orjson_reads_but_cannot_write_steps_aside() -> None:
    # orjson reads 1,024 levels but writes 254: the re-encoding must not raise (a 500).
    from miam_economies.domain.strict_json import loads_strict

    body = b'{"evenements": ' + b"[" * 300 + b"]" * 300 + b"}"
    assert _loads_fast(body) is _SLOW
    assert loads_strict(body) == stdlib(body)
