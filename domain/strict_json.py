"""Strict JSON decoding (pure): what the wire contract and MIAM's journal accept.

The contract (SPEC, "Wire contract") refuses a body that is not UTF-8, holds NaN or
Infinity, or repeats a key in one object. Python's ``json`` accepts all three, and also lone
surrogate escapes (``"\\ud800"``), which no UTF-8 text can hold, so an event holding one
could not be stored as received.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

from miam_economies.domain.errors import MiamEconomiesError

_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_INTEGER = b"0" * 19
"""19 digits in a row (once every digit reads 0): possibly an integer past 64 bits, which
orjson would turn into a float. A translate and a substring search: a regex costs 10x."""


class NotStrictJson(MiamEconomiesError, ValueError):
    """The bytes are not strict JSON; the message says why, fit for a 400 body."""


_SLOW = object()


def holds_unicode_escape(raw: bytes) -> bool:
    """Whether the JSON bytes ``raw`` hold a backslash followed by ``u``: every ``\\u``
    escape, and (conservatively) an escaped backslash before a ``u``. Most bodies hold no
    backslash at all, which one single-byte scan (``memchr``) tells; the two-byte search,
    about 50x slower on a 500-event body (0.18 ms of 190 KB), runs only when one does
    (ADR-0183)."""
    return b"\\" in raw and b"\\u" in raw


def _loads_fast(body: bytes) -> Any:
    """``body`` decoded by orjson when that gives exactly what the stdlib decoder would,
    else ``_SLOW``.

    orjson refuses invalid UTF-8, a BOM, NaN, Infinity, overflowing numbers and lone
    surrogate escapes, like the strict decoder, but keeps the last of repeated keys and
    turns integers past 64 bits into floats. So the decoded document is written again
    (orjson writes no spaces, escapes no colon, writes a float never as bare digits):

    * the same bytes as ``body`` (a compact body, as ``JSON.stringify`` and orjson write
      it: the plugin's): no key was dropped and no integer turned into a float, and the
      escapes orjson writes (``\\n``, ``\\"``, ``\\u001f``...) read the same in both
      decoders (a lone surrogate escape orjson refuses, to the stdlib), so the document is
      the stdlib decoder's (ADR-0183);
    * else, no ``\\u`` escape (an escaped colon), no run of 19 digits, and as many colons
      as ``body``: outside strings each colon ends a key, inside strings they are literal
      (no escape can write one here), and dropping a repeated key drops at least its
      colon, so the counts are equal exactly when no key repeats.
    """
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError:
        return _SLOW  # the strict decoder says why, in its own words
    try:
        encoded = orjson.dumps(document)
    except orjson.JSONEncodeError:
        return _SLOW  # nested deeper than orjson writes (254 levels; it reads 1024)
    if encoded == body:
        return document
    if holds_unicode_escape(body) or _LONG_INTEGER in body.translate(_DIGITS_AS_ZERO):
        return _SLOW
    if body.count(b":") != encoded.count(b":"):
        return _SLOW  # a repeated key
    return document


def _refuse_constant(name: str) -> Any:
    raise NotStrictJson(f"{name} is not JSON")


def _refuse_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise NotStrictJson(f"repeated key {key!r} in one JSON object")
        obj[key] = value
    return obj


def _refuse_non_finite(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):  # 1e400 overflows to inf: Infinity in disguise
        raise NotStrictJson(f"number {literal[:40]} is out of range")
    return value


def _refuse_lone_surrogates(document: Any) -> None:
    # A "\ud800" escape decodes to a lone surrogate, which no UTF-8 text can hold: the
    # event could not be stored as received. Iterative: nesting depth is not bounded here.
    stack = [document]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            strings = [item]
        elif isinstance(item, dict):
            strings = list(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
            continue
        else:
            continue
        for text in strings:
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                raise NotStrictJson("a string holds a lone UTF-16 surrogate escape") from None


def loads_strict(body: bytes, what: str = "text", lone_surrogates: bool = False) -> Any:
    """Decode ``body`` as strict JSON: UTF-8 without BOM, no NaN/Infinity (nor a number
    that overflows to it), no repeated key, and no lone surrogate escape (``\\ud800``)
    unless ``lone_surrogates``: the events of a batch may hold them where the contract
    reads nothing (JavaScript's ``JSON.stringify`` writes them; the schema refuses them
    where it reads: ADR-0135), a journal line may not.

    Raises ``NotStrictJson`` saying why, calling ``body`` ``what`` ("the body is not
    UTF-8", "the line is not JSON"...). Deep nesting and integer literals past Python's
    digit limit are refused too, never a crash. Most bodies take ``_loads_fast`` (orjson
    and one comparison, ADR-0183: about 0.55 ms against the stdlib decoder's 1.4–1.5 ms
    on one of the bench's 500-event bodies); the others, and every refusal, go through
    the stdlib decoder, which gives the same document or says why not (ADR-0011).
    """
    document = _loads_fast(body)
    if document is not _SLOW:
        return document
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotStrictJson(f"the {what} is not UTF-8: {exc.reason} at byte {exc.start}") from None
    try:
        document = json.loads(text, parse_constant=_refuse_constant,
                              parse_float=_refuse_non_finite,
                              object_pairs_hook=_refuse_repeated_keys)
    except NotStrictJson:
        raise
    except json.JSONDecodeError as exc:
        raise NotStrictJson(f"the {what} is not JSON: {exc}") from None
    except RecursionError:
        raise NotStrictJson(f"the {what} is nested too deeply") from None
    except ValueError as exc:  # e.g. an integer literal past sys.get_int_max_str_digits()
        raise NotStrictJson(f"the {what} is not acceptable JSON: {exc}") from None
    if not lone_surrogates and "\\u" in text:  # only escapes make one: else skip the walk
        _refuse_lone_surrogates(document)
    return document


_SURROGATE = re.compile("[\ud800-\udfff]")


def dumps_text(document: Any) -> str:
    """``document`` as compact JSON text (no spaces, non-ASCII characters as they are),
    which encodes as UTF-8 whatever it holds: a lone surrogate that ``loads_strict(...,
    lone_surrogates=True)`` let through is written as its ``\\u`` escape, the only form
    UTF-8 text can carry, and an integer past 64 bits in full (orjson's fast path holds
    neither). ``loads_strict`` reads the text back to an equal document."""
    try:
        return orjson.dumps(document).decode()
    except TypeError:  # orjson.JSONEncodeError: a lone surrogate, or a very long integer
        return escaped_surrogates(
            json.dumps(document, ensure_ascii=False, separators=(",", ":")))


def escaped_surrogates(text: str) -> str:
    """``text``, JSON written with non-ASCII characters as they are, with each lone
    surrogate written as its ``\\u`` escape instead: the same document, now encodable
    as UTF-8. A lone surrogate stands only inside a string literal, where its escape is
    one too."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
