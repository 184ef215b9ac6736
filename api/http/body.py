"""Reading a request body under a byte cap, and decoding it as strict JSON.

Order of checks (SPEC, "Wire contract"): Content-Length (400 if not a number, 413 if over
the limit), the body as it streams (413 past the limit, 408 if it stalls), then JSON
(400); the schema (422) is ``domain.validation``'s job.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request

from miam_economies.domain.errors import MiamEconomiesError
from miam_economies.domain.strict_json import NotStrictJson, loads_strict


class BodyTooLarge(MiamEconomiesError):
    """The body exceeds the limit (``limit``, bytes). Mapped to 413."""

    def __init__(self, limit: int):
        super().__init__(f"the body exceeds {limit} bytes")
        self.limit = limit


class SlowBody(MiamEconomiesError):
    """The body did not arrive within ``timeout`` seconds. Mapped to 408: a client that
    stalls mid-body frees its connection (ADR-0010)."""

    def __init__(self, timeout: float):
        super().__init__(f"the body did not arrive within {timeout:g} s")
        self.timeout = timeout


class MalformedBody(MiamEconomiesError):
    """The body is not strict JSON in UTF-8. Mapped to 400."""


async def read_capped(request: Request, limit: int, timeout: float) -> bytes:
    """The whole body, refusing (``BodyTooLarge``) as soon as it would pass ``limit`` bytes,
    and (``SlowBody``) when it has not fully arrived within ``timeout`` seconds.

    A declared Content-Length over the limit is refused before reading anything; without
    one (chunked), the stream is cut at the first chunk that crosses the limit, so at most
    ``limit`` bytes plus one chunk are ever held. A Content-Length that is not a number is
    a ``MalformedBody``.
    """
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isascii() or not declared.isdigit():
            raise MalformedBody("Content-Length is not a number")
        digits = declared.lstrip("0") or "0"
        # Compare lengths first: int() of thousands of digits raises (and costs).
        if len(digits) > len(str(limit)) or int(digits) > limit:
            raise BodyTooLarge(limit)
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(timeout):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise BodyTooLarge(limit)
                chunks.append(chunk)
    except TimeoutError:
        raise SlowBody(timeout) from None
    return b"".join(chunks)


def parse_json(body: bytes) -> Any:
    """Decode a request body as strict JSON (``domain.strict_json.loads_strict``), lone
    surrogate escapes let through: the schema refuses them where the contract reads, and
    an unknown field keeps them (ADR-0135).

    Raises ``MalformedBody`` with a message fit for the 400 body.
    """
    try:
        return loads_strict(body, "body", lone_surrogates=True)
    except NotStrictJson as exc:
        raise MalformedBody(str(exc)) from None
