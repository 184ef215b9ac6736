"""The routes as a host app mounts them, and the standalone app (ADR-0021).

``economies_routes(auth=...)`` is the list of routes a host Starlette app (MIAM) puts
beside its own, behind the auth it names (ADR-0091); each route carries the error policy
(``errors``) and the request observation with it. ``open_economies(settings, app)`` checks
the assembled host app, opens the store, starts the projection runner and yields the
lifespan state the routes read; the host enters it in its own lifespan. ``create_app`` is
the standalone service built from the same parts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.routing import BaseRoute, Route, request_response
from starlette.types import ASGIApp

from miam_economies.api.http.auth import BearerAuth
from miam_economies.api.http.errors import EXCEPTION_HANDLERS
from miam_economies.api.http.framing import FramingGuard
from miam_economies.api.http.guard import Auth, route_middleware
from miam_economies.api.http.headers import HeaderCap
from miam_economies.api.http.host_check import check_host
from miam_economies.api.http.host_probe import ProbeStop
from miam_economies.api.http.metrics import METRICS_STATE, Metrics
from miam_economies.api.http.observer import RequestObserver
from miam_economies.api.http.routes import (
    STATE,
    get_bilan,
    get_classement,
    get_demande,
    get_metrics,
    get_openapi,
    get_rapport,
    get_session,
    healthz,
    post_economies,
)
from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.settings import Settings

OWN_BODY_CAP = 2**62
"""The body cap a route declares to Starlette, bytes: beyond any body, so that a host
app's own ``max_body_size`` (innermost wins) never answers our POST with a plain-text
413, which the plugin would re-send for ever. Our cap is ``Settings.max_body``, enforced
by ``body.read_capped`` with the contract's JSON 413 (ecosystem review, §3 D)."""


def _route(path: str, handler: Any, method: str, middleware: Sequence[Middleware], *,
           max_body_size: int | None = None) -> Route:
    # The endpoint is an ASGI app carrying our error policy, observation and framing check
    # (api.http.framing), so the route behaves the same in a host app that knows none;
    # ProbeStop, outermost, answers the host check's own requests before anything of
    # ours runs, and keeps the route's middleware for the check to read (ADR-0091,
    # ADR-0140).
    endpoint = ProbeStop(RequestObserver(FramingGuard(
        ExceptionMiddleware(request_response(handler), handlers=EXCEPTION_HANDLERS)), path),
        middleware)
    return Route(path, endpoint, methods=[method], middleware=middleware,
                 max_body_size=max_body_size)


def economies_routes(*, auth: Auth | None = None, ops: bool = True) -> list[BaseRoute]:
    """The service's routes, as a plain list a host Starlette app puts beside its own
    (ADR-0021): ``POST /economies``, ``GET /economies/bilan``,
    ``GET /economies/demandes/{demande_id}``, ``GET /economies/sessions/{session_id}``,
    ``GET /economies/classement``,
    ``GET /economies/rapport``, and with ``ops``
    ``GET /healthz``, ``GET /metrics``, ``GET /openapi.json`` (leave them out when the
    host has its own). They read the lifespan state that ``open_economies`` yields.

    ``auth`` is required, an explicit decision (SPEC, "Fail closed"; ADR-0091):
    ``auth=MIAM_TOKEN`` (str) wraps each route in ``BearerAuth`` with that token;
    ``auth=[Middleware(...), ...]`` (outermost first) wraps each route in the host's own
    per-route auth (the MCP SDK's ``RequireAuthMiddleware``); ``auth="host"``: the
    host's app-wide middleware guards them. ``open_economies(settings, app)`` then checks
    the assembled app. Raises ``TypeError`` without ``auth`` (or with another type) and
    ``ValueError`` for an empty token or list, each saying how to choose.
    """
    middleware = route_middleware(auth)
    return [
        _route("/economies", post_economies, "POST", middleware,
               max_body_size=OWN_BODY_CAP),
        _route("/economies/bilan", get_bilan, "GET", middleware),
        _route("/economies/demandes/{demande_id:path}", get_demande, "GET", middleware),
        _route("/economies/sessions/{session_id:path}", get_session, "GET", middleware),
        _route("/economies/classement", get_classement, "GET", middleware),
        _route("/economies/rapport", get_rapport, "GET", middleware),
        *(() if not ops else (
            _route("/healthz", healthz, "GET", middleware),
            _route("/metrics", get_metrics, "GET", middleware),
            _route("/openapi.json", get_openapi, "GET", middleware))),
    ]


NEEDS_THE_APP = (
    "open_economies(settings, app) needs the host app, as its lifespan receives it "
    "(`async def lifespan(app): async with open_economies(settings, app) as state: ...`): "
    "it checks there that our routes are reachable and refuse a request without the "
    "token before it opens anything (SPEC, \"Fail closed\")")


def open_economies(settings: Settings, app: ASGIApp, *, token: str | None = None
                   ) -> AbstractAsyncContextManager[dict[str, Any]]:
    """An async context manager for the host's lifespan: it checks the assembled host
    ``app`` (``host_check.check_host``: our data routes reachable, a request without
    MIAM's token or with a wrong one refused, MIAM's token let through), then opens the
    event store and the projections under ``settings.data``, starts the projection
    runner, and yields the lifespan state the routes read (``{"economies": Services,
    "economies_metrics": Metrics}``); on exit, it stops the runner and closes the
    databases.

    A host app enters it first in its own lifespan (a refusal then reaches uvicorn as one
    message, not inside another context's ``ExceptionGroup``) and merges the state into
    its own (keys ``economies`` and ``economies_metrics``: the host's own must not
    overwrite them)::

        async def lifespan(app):
            async with open_economies(Settings(data="logs/mcp"), app,
                                      token=MIAM_TOKEN) as state, host_context():
                yield {**host_state, **state}

    ``token``: MIAM's bearer token, as the plugin sends it, for the check to prove that it
    reaches our routes (ADR-0140); not needed with ``economies_routes(auth=TOKEN)``,
    whose token is known. Without it under ``auth="host"`` or ``auth=[Middleware(...)]``
    the check logs one warning saying what it could not prove. ``settings.token`` is not
    used by the routes (``economies_routes(auth=...)`` decides).

    Raises at once ``TypeError`` when ``app`` is None (ADR-0091) and ``ValueError`` for
    an empty or blank ``token``; on entering, ``EmbeddingRefused`` (nothing opened,
    nothing stored) when the check fails, then as
    ``api.service.bootstrap.open_services`` (``DataDirectoryError`` for a data directory
    it cannot write, ``ZoneInfoNotFoundError``, ``ProjectionMismatch``,
    ``DatabaseNotUtf8``, ``PersistenceError``).
    """
    if app is None:  # typed as required; an untyped caller still gets the reason
        raise TypeError(NEEDS_THE_APP)
    if token is not None and not token.strip():
        raise ValueError("open_economies(..., token=) got an empty token, which no "
                         "request could prove: give MIAM's bearer token, or None")
    return _opened(settings, app, token)


@asynccontextmanager
async def _opened(settings: Settings, app: ASGIApp,
                  token: str | None) -> AsyncIterator[dict[str, Any]]:
    await check_host(app, token)  # before the store: a refused start creates nothing
    with open_services(settings) as services:
        yield {STATE: services, METRICS_STATE: Metrics(services)}


STANDALONE_HINT = (
    "send the header 'Authorization: Bearer <token>', the token being the server's "
    "MIAM_ECONOMIES_TOKEN or the content of the file token in its data directory "
    "(serve prints that file's path as it starts)")
"""What the standalone app's 401 says: where its token lives, never the path itself (a
client may not be on the server's machine)."""


def create_app(settings: Settings) -> Starlette:
    """The standalone app: ``routes`` behind ``BearerAuth`` (``/healthz`` and
    ``/openapi.json`` public, ``/metrics`` too with ``settings.metrics_public``), services
    opened in lifespan, every request observed (refusals before routing included).
    Raises ``ValueError`` when ``settings.token`` is empty or None: the standalone app
    never serves without its own auth."""
    token = settings.token
    if not token or not token.strip():
        raise ValueError("the standalone app needs a bearer token (Settings.token)")

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
        async with open_economies(settings, app, token=token) as state:
            yield state

    public = ("/healthz", "/openapi.json", *(("/metrics",) if settings.metrics_public
                                               else ()))
    return Starlette(
        routes=economies_routes(auth="host"),  # the BearerAuth below, app-wide
        middleware=[Middleware(RequestObserver),
                    Middleware(HeaderCap),
                    Middleware(BearerAuth, token=token, public_paths=public,
                               hint=STANDALONE_HINT)],
        exception_handlers=EXCEPTION_HANDLERS,
        lifespan=lifespan,
    )
