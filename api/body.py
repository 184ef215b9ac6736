"""Reading a request body under a byte cap, and decoding it as strict JSON.

Order of checks (SPEC, "Wire contract"): size (413) then JSON (400); the schema (422) is
``domain.validation``'s job.
"""

from __future__ import annotations

import json
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


def parse_json(body: bytes) -> Any:
    """Decode ``body`` as strict JSON: UTF-8 without BOM, no NaN/Infinity, no repeated key.

    Raises ``MalformedBody`` with a message fit for the 400 body. Deep nesting and
    integer literals past Python's digit limit are malformed too, never a crash.
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedBody(f"the body is not UTF-8: {exc.reason} at byte {exc.start}") from None
    try:
        return json.loads(text, parse_constant=_refuse_constant,
                          object_pairs_hook=_refuse_repeated_keys)
    except json.JSONDecodeError as exc:
        raise MalformedBody(f"the body is not JSON: {exc}") from None
    except RecursionError:
        raise MalformedBody("the body is nested too deeply") from None
    except ValueError as exc:  # e.g. an integer literal past sys.get_int_max_str_digits()
        raise MalformedBody(f"the body is not acceptable JSON: {exc}") from None
