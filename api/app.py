"""HTTP: ``POST /economies``, ``GET /economies/bilan``, ``GET /economies/demandes/{id}``,
``GET /economies/rapport``, ``GET /healthz``, ``GET /metrics``, ``GET /openapi.json``
(SPEC, "Interfaces").

The ingestion handler validates, appends and acknowledges, nothing else: projection work
happens in the runner. The error policy is one mapping, ``EXCEPTION_HANDLERS``; an
exception it does not map is a 500, and a 500 is a bug.

Embedding (ADR-0021): ``economies_routes()`` is the list of routes a host Starlette app
(MIAM) puts beside its own, behind its own auth; each route carries the error policy and
the request observation with it. ``open_economies(settings)`` opens the store, starts the
projection runner and yields the lifespan state the routes read; the host enters it in
its own lifespan. ``create_app`` is the standalone service built from the same parts.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from eventsourcing.persistence import ConnectionPoolClosedError, PersistenceError
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route, request_response

from miam_economies.api.auth import BearerAuth
from miam_economies.api.body import BodyTooLarge, MalformedBody, SlowBody, parse_json, read_capped
from miam_economies.api.limits import HeaderCap
from miam_economies.api.observability import METRICS_STATE, OUTCOME, Metrics, RequestObserver
from miam_economies.api.openapi import openapi_document
from miam_economies.api.report import render_report
from miam_economies.api.services import Services, open_services
from miam_economies.api.settings import Settings
from miam_economies.api.store import Appended, StoreUnavailable
from miam_economies.domain.bilan import check_bounds
from miam_economies.domain.validation import SchemaError, validate_batch

log = logging.getLogger(__name__)

STATE = "economies"
"""Key of the ``Services`` in the lifespan state (``request.state.economies``)."""


def _services(request: Request) -> Services:
    return getattr(request.state, STATE)  # type: ignore[no-any-return]


async def post_economies(request: Request) -> JSONResponse:
    """Ingest one batch: 200 ``{"ok": true, "recus": n, "doublons": m}`` once durably stored,
    plus ``"conflits": k`` when k doublons differ from the version kept.

    413 / 408 / 400 / 422 / 503 come from ``EXCEPTION_HANDLERS``; a refused batch stores
    nothing.
    """
    services = _services(request)
    body = await read_capped(request, services.settings.max_body,
                             services.settings.body_timeout)

    def validate_and_append() -> Appended:
        # Decoding 500 events is CPU work: keep it off the event loop, with the append.
        return services.store.append(validate_batch(parse_json(body)))

    with services.runner.ingesting():  # the projection waits for a quiet moment
        appended = await run_in_threadpool(validate_and_append)
    request.scope[OUTCOME] = appended  # for the request's log line and the metrics
    answer = {"ok": True, "recus": appended.recus, "doublons": appended.doublons}
    if appended.conflits:  # re-sent ids with other content: a plugin bug made visible
        answer["conflits"] = appended.conflits
    return JSONResponse(answer)


async def get_bilan(request: Request) -> JSONResponse:
    """The bilan snapshot; ``?par=`` adds a breakdown (``client``, ``jour``, ``modele``,
    ``demande`` or a journal field), ``?depuis=``/``?jusqu_au=`` (``YYYY-MM-DD``,
    inclusive) bound its days. With ``?attendre=1``, first wait (at most ``attendre_max``
    s) until the projection has folded every event stored before this request."""
    services = _services(request)
    query = request.query_params
    par = query.get("par") or None
    bounds = {name: query[name] for name in ("depuis", "jusqu_au") if name in query}
    try:
        check_bounds(par, bounds.get("depuis"), bounds.get("jusqu_au"))
    except ValueError as exc:
        return _error(400, str(exc))
    waited = await _maybe_wait(request, services)
    bilan = await run_in_threadpool(services.bilan, par, **bounds)
    if waited is False:
        bilan["provenance"]["attente_expiree"] = True
    return JSONResponse(bilan)


async def _maybe_wait(request: Request, services: Services) -> bool | None:
    # ?attendre=1: read your own writes, bounded by attendre_max (SPEC, "Interfaces").
    # None: not asked; False: the wait expired before the projection caught up.
    if request.query_params.get("attendre") != "1":
        return None
    head = await run_in_threadpool(services.store.head)
    return await services.runner.wait_for(head, services.settings.attendre_max)


async def get_demande(request: Request) -> JSONResponse:
    """One demande's figures (SPEC, ``GET /economies/demandes/{id}``); 404 if never seen.
    ``?attendre=1`` as for the bilan."""
    services = _services(request)
    await _maybe_wait(request, services)
    demande_id = request.path_params["demande_id"]
    found = await run_in_threadpool(services.demande, demande_id)
    if found is None:
        return _error(404, f"no event for demande {demande_id!r}")
    return JSONResponse(found)


async def get_rapport(request: Request) -> Response:
    """The report (``api.report``): one self-contained HTML page; ``?depuis=`` and
    ``?jusqu_au=`` (``YYYY-MM-DD``, inclusive) bound its period (400 when unsound)."""
    services = _services(request)
    query = request.query_params
    bounds = {name: query[name] for name in ("depuis", "jusqu_au") if name in query}
    try:
        check_bounds("jour", bounds.get("depuis"), bounds.get("jusqu_au"))
    except ValueError as exc:
        return _error(400, str(exc))
    page = await run_in_threadpool(render_report, services, **bounds)
    return HTMLResponse(page)


async def healthz(request: Request) -> JSONResponse:
    """Health, without auth: 200 ``{"ok": true, "tete": head, "position": folded,
    "retard": head - folded}`` (notification ids; ``retard`` in events), or 503 with
    ``erreur`` while the projection runner's last page failed (details in the server's
    log only) or the store cannot be read."""
    services = _services(request)
    if services.runner.last_error is not None:
        return _error(503, "the projection runner is failing; see the server log")

    def read() -> tuple[int, int]:  # two SQLite reads: off the event loop
        return services.store.head(), services.projection.position()

    head, position = await run_in_threadpool(read)
    return JSONResponse({"ok": True, "tete": head, "position": position,
                         "retard": max(0, head - position)})


async def get_metrics(request: Request) -> Response:
    """The metrics in Prometheus text format (``api.observability.Metrics``); behind the
    bearer token unless ``Settings.metrics_public``."""
    metrics: Metrics = getattr(request.state, METRICS_STATE)
    body = await run_in_threadpool(metrics.exposition)
    return Response(body, media_type=CONTENT_TYPE_PLAIN_0_0_4)


async def get_openapi(request: Request) -> JSONResponse:
    """The OpenAPI 3.0 document of these routes (``api.openapi``), without auth."""
    return JSONResponse(openapi_document())


def _error(status: int, message: str, **headers: str) -> JSONResponse:
    return JSONResponse({"ok": False, "erreur": message}, status_code=status, headers=headers)


async def _http(request: Request, exc: Exception) -> JSONResponse:
    # Starlette's own 404/405 etc., in the same JSON shape as every other refusal.
    assert isinstance(exc, HTTPException)
    return _error(exc.status_code, str(exc.detail), **(exc.headers or {}))


async def _too_large(request: Request, exc: Exception) -> JSONResponse:
    # Close the connection: the rest of the oversized body is never read.
    return _error(413, str(exc), Connection="close")


async def _slow(request: Request, exc: Exception) -> JSONResponse:
    return _error(408, str(exc), Connection="close")


async def _malformed(request: Request, exc: Exception) -> JSONResponse:
    return _error(400, str(exc))


async def _schema(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, SchemaError)
    body: dict[str, Any] = {"ok": False, "erreurs": [f.as_dict() for f in exc.faults]}
    if exc.omitted:
        body["omis"] = exc.omitted
    return JSONResponse(body, status_code=422)


async def _unavailable(request: Request, exc: Exception) -> JSONResponse:
    # The cause (paths, SQL) goes to the log, not to the client.
    log.warning("%s %s: 503: %s", request.method, request.url.path, exc)
    return _error(503, "storage unavailable, retry later", **{"Retry-After": "1"})


async def _disconnected(request: Request, exc: Exception) -> JSONResponse:
    # Nobody will read this answer; mapping it keeps an abandoned upload out of the 500s.
    return _error(400, "the client disconnected before sending the whole body")


EXCEPTION_HANDLERS: dict[Any, Any] = {
    HTTPException: _http,
    BodyTooLarge: _too_large,
    MalformedBody: _malformed,
    SlowBody: _slow,
    SchemaError: _schema,
    StoreUnavailable: _unavailable,
    PersistenceError: _unavailable,  # reads: the bilan, the store's head
    ConnectionPoolClosedError: _unavailable,  # a request still running at shutdown
    ClientDisconnect: _disconnected,
}
"""The error policy (SPEC, "Wire contract"): exception class -> response."""

def _route(path: str, handler: Any, method: str) -> Route:
    # The endpoint is an ASGI app carrying our error policy and observation, so the route
    # behaves the same in a host app that knows neither.
    endpoint = RequestObserver(
        ExceptionMiddleware(request_response(handler), handlers=EXCEPTION_HANDLERS), path)
    return Route(path, endpoint, methods=[method])


ECONOMIES_ROUTES = [
    _route("/economies", post_economies, "POST"),
    _route("/economies/bilan", get_bilan, "GET"),
    _route("/economies/demandes/{demande_id:path}", get_demande, "GET"),
    _route("/economies/rapport", get_rapport, "GET"),
]
OPS_ROUTES = [
    _route("/healthz", healthz, "GET"),
    _route("/metrics", get_metrics, "GET"),
    _route("/openapi.json", get_openapi, "GET"),
]


def economies_routes(*, ops: bool = True) -> list[BaseRoute]:
    """The service's routes, as a plain list a host Starlette app puts beside its own
    (ADR-0021): ``POST /economies``, ``GET /economies/bilan``,
    ``GET /economies/demandes/{demande_id}``, ``GET /economies/rapport``, and with ``ops``
    ``GET /healthz``, ``GET /metrics``, ``GET /openapi.json`` (leave them out when the
    host has its own). They read the lifespan state that ``open_economies`` yields; the
    host's middleware (its auth) runs before them.
    """
    return [*ECONOMIES_ROUTES, *(OPS_ROUTES if ops else [])]


routes = economies_routes()
"""Every route (``economies_routes()``), as a plain list."""


@asynccontextmanager
async def open_economies(settings: Settings) -> AsyncIterator[dict[str, Any]]:
    """Open the event store and the projections under ``settings.data``, start the
    projection runner, and yield the lifespan state the routes read
    (``{"economies": Services, "economies_metrics": Metrics}``); on exit, stop the
    runner and close the databases.

    A host app enters it in its own lifespan and merges the state into its own::

        async with open_economies(Settings(data=Path("logs/mcp"), token="")) as state:
            yield {**state, **host_state}

    ``settings.token`` is not used by the routes (the host's auth guards them).
    Raises as ``api.services.open_services`` (``OSError``, ``ZoneInfoNotFoundError``,
    ``ProjectionMismatch``, ``PersistenceError``).
    """
    with open_services(settings) as services:
        yield {STATE: services, METRICS_STATE: Metrics(services)}


def create_app(settings: Settings) -> Starlette:
    """The standalone app: ``routes`` behind ``BearerAuth`` (``/healthz`` and
    ``/openapi.json`` public, ``/metrics`` too with ``settings.metrics_public``), services
    opened in lifespan, every request observed (refusals before routing included)."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
        async with open_economies(settings) as state:
            yield state

    public = ("/healthz", "/openapi.json", *(("/metrics",) if settings.metrics_public
                                               else ()))
    return Starlette(
        routes=routes,
        middleware=[Middleware(RequestObserver),
                    Middleware(HeaderCap),
                    Middleware(BearerAuth, token=settings.token, public_paths=public)],
        exception_handlers=EXCEPTION_HANDLERS,
        lifespan=lifespan,
    )
