"""Which representation a read route answers in: JSON, as always, or CSV (issue 24,
point 5; ADR-0134). ``?format=csv`` asks for CSV and ``?format=json`` for JSON, whatever
the ``Accept`` header says; without ``format``, an ``Accept`` header that prefers
``text/csv`` to ``application/json`` gets CSV (RFC 9110, section 12.5.1). Refusals stay
JSON: a route checks its parameters first, and ``format`` is checked last, here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from miam_economies.api.http.errors import error_response

CSV = "text/csv"
JSON = "application/json"
FORMATS = ("json", "csv")
"""The values ``?format=`` takes (the OpenAPI document's enum)."""

T = TypeVar("T")

_QVALUE = re.compile(r"(0(\.[0-9]{0,3})?|1(\.0{0,3})?)\Z")


def _ranges(accept: str) -> list[tuple[str, float]]:
    # Each media range of an Accept header with its weight, lowercased; a range whose q
    # is not a qvalue (RFC 9110, section 12.4.2) is left out rather than guessed.
    out = []
    for item in accept.split(","):
        media, *params = (part.strip() for part in item.split(";"))
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                q = float(value) if _QVALUE.match(value.strip()) else -1.0
                break
        if media and q >= 0:
            out.append((media.lower(), q))
    return out


def _weight(ranges: list[tuple[str, float]], media: str) -> tuple[float, int]:
    # (q, specificity) of the most specific range that matches ``media``: the exact type
    # (2) over ``type/*`` (1) over ``*/*`` (0); (0, -1) when none does.
    best = (0.0, -1)
    for candidate, q in ranges:
        specificity = (2 if candidate == media else 1 if candidate == media.split("/")[0] + "/*"
                       else 0 if candidate == "*/*" else -1)
        if specificity > best[1]:
            best = (q, specificity)
    return best


def prefers_csv(accept: str) -> bool:
    """Whether an ``Accept`` header prefers ``text/csv`` to ``application/json``: a higher
    weight, or at equal weight a more specific range (``text/csv, */*`` is CSV; ``text/csv,
    application/json`` stays JSON, the default). ``q=0`` is "not acceptable"."""
    ranges = _ranges(accept)
    csv, json = _weight(ranges, CSV), _weight(ranges, JSON)
    return csv[0] > 0 and csv > json


def represented(request: Request, lu: T, to_json: Callable[[T], Mapping[str, Any]],
                to_csv: Callable[[T], str], name: str) -> Response:
    """The typed result ``lu`` (``results``, ADR-0163) as the request asks:
    ``to_csv(lu)`` as ``text/csv; charset=utf-8`` with ``Content-Disposition: inline;
    filename="<name>.csv"``, or ``to_json(lu)`` (the wire dict) as JSON; both shapes are
    made from the one value, only the one asked. Both carry ``Vary: Accept`` (the header
    may choose). Any ``format`` other than ``FORMATS`` is a 400 naming ``format``, in the
    JSON shape of every refusal (``errors``)."""
    fmt = request.query_params.get("format")
    if fmt is not None and fmt not in FORMATS:
        return error_response(400, f"format must be {' or '.join(FORMATS)}, "
                                   f"not {fmt[:20]!r}")
    vary = {"Vary": "Accept"}
    if fmt == "csv" or (fmt is None and prefers_csv(
            ", ".join(request.headers.getlist("accept")))):
        return Response(to_csv(lu), media_type=CSV, headers={
            "Content-Disposition": f'inline; filename="{name}.csv"', **vary})
    return JSONResponse(to_json(lu), headers=vary)
