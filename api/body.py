"""Reading a request body under a byte cap, and decoding it as strict JSON.

Order of checks (SPEC, "Wire contract"): size (413) then JSON (400); the schema (422) is
``domain.validation``'s job.
"""

from __future__ import annotations

import json
import math
from typing import Any

from starlette.requests import Request


class BodyTooLarge(Exception):
    """The body exceeds the limit (``limit``, bytes). Mapped to 413."""

    def __init__(self, limit: int):
        super().__init__(f"the body exceeds {limit} bytes")
        self.limit = limit


class MalformedBody(Exception):
    """The body is not strict JSON in UTF-8. Mapped to 400."""


async def read_capped(request: Request, limit: int) -> bytes:
    """The whole body, refusing (``BodyTooLarge``) as soon as it would pass ``limit`` bytes.

    A declared Content-Length over the limit is refused before reading anything; without
    one (chunked), the stream is cut at the first chunk that crosses the limit, so at most
    ``limit`` bytes plus one chunk are ever held. A Content-Length that is not a number is
    a ``MalformedBody``.
    """
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise MalformedBody("Content-Length is not a number")
        if int(declared) > limit:
            raise BodyTooLarge(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _refuse_constant(name: str) -> Any:
    raise MalformedBody(f"{name} is not JSON")


def _refuse_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise MalformedBody(f"repeated key {key!r} in one JSON object")
        obj[key] = value
    return obj


def _refuse_non_finite(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):  # 1e400 overflows to inf: Infinity in disguise
        raise MalformedBody(f"number {literal[:40]} is out of range")
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
                raise MalformedBody("a string holds a lone UTF-16 surrogate escape") from None


def parse_json(body: bytes) -> Any:
    """Decode ``body`` as strict JSON: UTF-8 without BOM, no NaN/Infinity (nor a number
    that overflows to it), no repeated key, no lone surrogate escape (``\\ud800``).

    Raises ``MalformedBody`` with a message fit for the 400 body. Deep nesting and
    integer literals past Python's digit limit are malformed too, never a crash.
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedBody(f"the body is not UTF-8: {exc.reason} at byte {exc.start}") from None
    try:
        document = json.loads(text, parse_constant=_refuse_constant,
                              parse_float=_refuse_non_finite,
                              object_pairs_hook=_refuse_repeated_keys)
    except json.JSONDecodeError as exc:
        raise MalformedBody(f"the body is not JSON: {exc}") from None
    except RecursionError:
        raise MalformedBody("the body is nested too deeply") from None
    except ValueError as exc:  # e.g. an integer literal past sys.get_int_max_str_digits()
        raise MalformedBody(f"the body is not acceptable JSON: {exc}") from None
    if "\\u" in text:  # only escapes can produce a lone surrogate: skip the walk otherwise
        _refuse_lone_surrogates(document)
    return document
