"""The error policy of every route, in one mapping (SPEC, "Wire contract"): each refusal
is an exception raised where the rule lives, answered here in one JSON shape. An
exception this mapping does not know is a 500, and a 500 is a bug.

Our exceptions share one root (``domain.errors.MiamEconomiesError``, ADR-0123), which is
deliberately not mapped here: each class has its own status, and one of ours that no
entry names (a projection built otherwise, met by a read) stays a 500.
"""

from __future__ import annotations

import logging
from typing import Any

from eventsourcing.persistence import ConnectionPoolClosedError, PersistenceError
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse

from miam_economies.api.extras import MissingExtra
from miam_economies.api.http.body import BodyTooLarge, MalformedBody, SlowBody
from miam_economies.api.store.application import StoreUnavailable
from miam_economies.domain.breakdowns import BoundsError
from miam_economies.domain.classement import ClassementError
from miam_economies.domain.errors import MiamEconomiesError
from miam_economies.domain.known_names import NotUnderstood
from miam_economies.domain.validation import SchemaError

log = logging.getLogger(__name__)


class NotOpen(MiamEconomiesError):
    """The routes are mounted in an app whose lifespan never entered ``open_economies``
    (ADR-0021): no store to append to. Answered 503, so the plugin keeps its batch, and
    logged as the host's error with its fix."""


def error_response(status: int, message: str, **headers: str) -> JSONResponse:
    """A refusal: ``{"ok": false, "erreur": message}`` with ``status`` and ``headers``."""
    return JSONResponse({"ok": False, "erreur": message}, status_code=status, headers=headers)


async def _http(request: Request, exc: Exception) -> JSONResponse:
    # Starlette's own 404/405 etc., in the same JSON shape as every other refusal.
    assert isinstance(exc, HTTPException)
    return error_response(exc.status_code, str(exc.detail), **(exc.headers or {}))


async def _too_large(request: Request, exc: Exception) -> JSONResponse:
    # Close the connection: the rest of the oversized body is never read.
    return error_response(413, str(exc), Connection="close")


async def _slow(request: Request, exc: Exception) -> JSONResponse:
    return error_response(408, str(exc), Connection="close")


async def _bad_request(request: Request, exc: Exception) -> JSONResponse:
    # A malformed body, or a query parameter refused where its rule lives (day bounds,
    # the classement's): the message names what is wrong.
    return error_response(400, str(exc))


async def _schema(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, SchemaError)
    body: dict[str, Any] = {"ok": False, "erreurs": [f.as_dict() for f in exc.faults]}
    if exc.omitted:
        body["omis"] = exc.omitted
    return JSONResponse(body, status_code=422)


async def _unavailable(request: Request, exc: Exception) -> JSONResponse:
    # The cause (paths, SQL) goes to the log, not to the client.
    log.warning("%s %s: 503: %s", request.method, request.url.path, exc)
    return error_response(503, "storage unavailable, retry later", **{"Retry-After": "1"})


async def _not_installed(request: Request, exc: Exception) -> JSONResponse:
    # The host installed us without an extra (the report's pygal and Jinja2): say which.
    return error_response(501, str(exc))


async def _not_open(request: Request, exc: Exception) -> JSONResponse:
    log.error("%s %s: %s", request.method, request.url.path, exc)
    return error_response(503, str(exc), **{"Retry-After": "1"})


async def _disconnected(request: Request, exc: Exception) -> JSONResponse:
    # Nobody will read this answer; mapping it keeps an abandoned upload out of the 500s.
    return error_response(400, "the client disconnected before sending the whole body")


EXCEPTION_HANDLERS: dict[Any, Any] = {
    HTTPException: _http,
    BodyTooLarge: _too_large,
    MalformedBody: _bad_request,
    BoundsError: _bad_request,  # GET /economies/bilan, /economies/rapport
    ClassementError: _bad_request,  # GET /economies/classement
    NotUnderstood: _bad_request,  # a typo on a read: a dimension or a parameter (0164)
    SlowBody: _slow,
    SchemaError: _schema,
    StoreUnavailable: _unavailable,
    PersistenceError: _unavailable,  # reads: the bilan, the store's head
    ConnectionPoolClosedError: _unavailable,  # a request still running at shutdown
    ClientDisconnect: _disconnected,
    MissingExtra: _not_installed,  # GET /economies/rapport without the report extra
    NotOpen: _not_open,  # a host that mounted the routes but never opened them
}
"""The error policy (SPEC, "Wire contract"): exception class -> response."""
