"""The orjson fast path of ``loads_strict`` gives exactly the stdlib decoder's document, or
steps aside (ADR-0011): never a different document, never a repeated key let through."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from miam_economies.domain.strict_json import _SLOW, _loads_fast

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
       value=SCALARS, data=st.data())
def test_a_repeated_key_never_takes_the_fast_path(document: dict[str, Any], value: Any,
                                                   data: st.DataObject) -> None:
    key = data.draw(st.sampled_from(sorted(document)))
    text = json.dumps(document, ensure_ascii=False)
    repeated = text[:-1] + ", " + json.dumps(key, ensure_ascii=False) + ": " \
        + json.dumps(value) + "}"
    assert _loads_fast(repeated.encode()) is _SLOW


def test_integers_past_64_bits_and_escapes_step_aside() -> None:
    assert _loads_fast(b'{"n": 123456789012345678901234567890}') is _SLOW
    assert _loads_fast(b'{"s": "\\u00e9"}') is _SLOW
    assert _loads_fast(b'{"n": 1, "s": "caf\xc3\xa9: ok"}') == {"n": 1, "s": "café: ok"}


def test_nesting_orjson_reads_but_cannot_write_steps_aside() -> None:
    # orjson reads 1,024 levels but writes 254: the re-encoding must not raise (a 500).
    from miam_economies.domain.strict_json import loads_strict

    body = b'{"evenements": ' + b"[" * 300 + b"]" * 300 + b"}"
    assert _loads_fast(body) is _SLOW
    assert loads_strict(body) == stdlib(body)
