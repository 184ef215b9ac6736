"""The check ``open_economies(settings, app)`` runs before it opens anything (SPEC,
"Installed as a library", "Fail closed"; ADR-0091): in the assembled host app, each of
our data routes must be the one a request reaches, and a request without credentials must
be refused before it gets there.

1. Reachability: the app's routes are walked as Starlette's router tries them (the first
   full match wins; a ``Mount`` or ``Host`` that matches is entered). A route of ours must
   come first: a ``Mount("/")`` listed before it, or a host route on the same path, takes
   the request (404 or the host's answer) and the plugin's batches stop.
2. Auth: one in-process request per data route, without ``Authorization``, through the
   whole app (its middleware included). It carries a scope key an HTTP client cannot set
   (``PROBE``); our endpoint answers such a request itself, before its observer, its
   handler or the store, so reaching it proves the route unguarded and stores nothing.
   Refused with 401 or 403 (any body: the host's own shape counts) is guarded; any other
   answer cannot prove a guard, so it fails too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
from starlette.routing import BaseRoute, Host, Match, Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from miam_economies.domain.errors import MiamEconomiesError

PROBE = "miam_economies.probe"
"""Scope key of the check's own requests: a list our endpoint appends its path to."""

DATA_ROUTES = (("POST", "/economies"), ("GET", "/economies/bilan"),
               ("GET", "/economies/demandes/sonde"), ("GET", "/economies/classement"),
               ("GET", "/economies/rapport"))
"""The requests the check makes: one per data route (``/healthz``, ``/metrics`` and
``/openapi.json`` follow the auth they were given; the standalone app serves two of them
publicly)."""

PROBE_TIMEOUT = 10.0
"""Seconds the host app may take to answer one check request."""


class EmbeddingRefused(MiamEconomiesError, RuntimeError):
    """The host app leaves our routes unguarded or unreachable: ``open_economies`` will
    not start (SPEC, "Fail closed"). The message says what is wrong and how to mend it."""


class ProbeStop:
    """Our endpoint's outermost layer: answers a check request (204, empty) and notes
    that it got here; passes every other request on to ``app``."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry."""
        reached = scope.get(PROBE)
        if scope["type"] == "http" and isinstance(reached, list):
            reached.append(scope["path"])
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await self.app(scope, receive, send)


def _ours(route: BaseRoute) -> bool:
    return isinstance(route, Route) and isinstance(route.endpoint, ProbeStop)


def _label(route: BaseRoute) -> str:
    if isinstance(route, Mount):
        return f'Mount("{route.path or "/"}")'
    if isinstance(route, Host):
        return f'Host("{route.host}")'
    if isinstance(route, Route):
        return f'Route("{route.path}")'
    return type(route).__name__


def _routes_of(app: Any) -> Sequence[BaseRoute] | None:
    # The app a lifespan receives is the Starlette app; an app handed in wrapped in pure
    # ASGI middleware keeps it under .app, by convention.
    for _ in range(32):
        routes = getattr(app, "routes", None)
        if isinstance(routes, list):
            return routes
        app = getattr(app, "app", None)
        if app is None:
            return None
    return None


def _scope(method: str, path: str, reached: list[str]) -> Scope:
    headers = [(b"host", b"localhost")]
    if method == "POST":  # an empty body: nothing to store, even past a lost marker
        headers += [(b"content-type", b"application/json"), (b"content-length", b"0")]
    return {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.4"},
            "http_version": "1.1", "method": method, "scheme": "http", "path": path,
            "raw_path": path.encode(), "query_string": b"", "root_path": "",
            "headers": headers, "client": ("127.0.0.1", 0), "server": ("localhost", 80),
            "state": {}, PROBE: reached}


def _first_full_match(routes: Sequence[BaseRoute], scope: Scope) -> BaseRoute | None:
    """Ours, or the route that takes ``scope`` before ours (None: no route matches)."""
    for route in routes:
        match, child = route.matches(scope)
        if match is not Match.FULL:
            continue
        if _ours(route):
            return route
        inner = route.routes if isinstance(route, Mount | Host) else []
        found = _first_full_match(inner, {**scope, **child}) if inner else None
        # A matching mount takes the request whatever it holds: ours inside, or nothing.
        return found if found is not None and _ours(found) else route
    return None


async def _answer(app: ASGIApp, scope: Scope) -> int | str:
    """The status the app answers ``scope`` with (a str: why there is none)."""
    status: int | None = None
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": b"", "more_body": False}
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = int(message["status"])

    try:
        with anyio.fail_after(PROBE_TIMEOUT):
            await app(scope, receive, send)
    except TimeoutError:
        return f"no answer within {PROBE_TIMEOUT:g} s"
    except Exception as exc:  # the host's own failure, reported in the refusal
        return f"{type(exc).__name__}: {exc}" if status is None else status
    return status if status is not None else "no answer"


async def check_host(app: ASGIApp) -> None:
    """Check ``app`` (the assembled host app, as its lifespan receives it) as the module
    says; stores nothing and returns None when every data route is ours and guarded.

    Raises ``EmbeddingRefused`` with one message naming each fault and its mend.
    """
    routes = _routes_of(app)
    if routes is None:
        raise EmbeddingRefused(
            f"miam-economies will not start: open_economies(settings, app) needs the "
            f"Starlette app the lifespan receives (it got a {type(app).__name__} without "
            f"routes), to check that our routes are reachable and guarded")
    missing: list[str] = []
    shadowed: dict[str, list[str]] = {}
    unguarded: list[str] = []
    unsure: dict[str, int | str] = {}
    for method, path in DATA_ROUTES:
        reached: list[str] = []
        taker = _first_full_match(routes, _scope(method, path, reached))
        if taker is None:
            missing.append(f"{method} {path}")
            continue
        if not _ours(taker):
            shadowed.setdefault(_label(taker), []).append(f"{method} {path}")
            continue
        answer = await _answer(app, _scope(method, path, reached))
        if reached:
            unguarded.append(f"{method} {path}")
        elif answer not in (401, 403):
            unsure[f"{method} {path}"] = answer
    faults = [*_missing(missing), *_shadowed(shadowed), *_unguarded(unguarded),
              *_unsure(unsure)]
    if faults:
        raise EmbeddingRefused("miam-economies will not start (SPEC, \"Fail closed\"):\n- "
                               + "\n- ".join(faults))


def _missing(requests: list[str]) -> list[str]:
    return [f"no route of the app matches {', '.join(requests)}: put "
            f"economies_routes(auth=...) in the routes of the app given to "
            f"open_economies(settings, app)"] if requests else []


def _shadowed(takers: dict[str, list[str]]) -> list[str]:
    return [f"{taker}, listed before our routes, takes {', '.join(requests)}: they would "
            f"answer 404 and the plugin would keep its batches, then drop the oldest. "
            f"Mend: list economies_routes(...) before {taker} in the app's routes"
            for taker, requests in takers.items()]


def _unguarded(requests: list[str]) -> list[str]:
    return [f"{', '.join(requests)} without credentials reached our routes: anyone could "
            f"post and read. Mend: economies_routes(auth=MIAM_TOKEN) (our BearerAuth on "
            f"each route), or auth=[Middleware(...)] with the host's per-route auth (the "
            f"MCP SDK's: Middleware(RequireAuthMiddleware, required_scopes=[])); "
            f"auth=\"host\" holds only when the host app has a middleware that refuses "
            f"such a request (401/403) before routing, and the SDK's "
            f"AuthenticationMiddleware refuses nothing"] if requests else []


def _unsure(answers: dict[str, int | str]) -> list[str]:
    said = ", ".join(f"{request} ({answer})" for request, answer in answers.items())
    return [f"without credentials, {said}: neither our route nor a 401/403 refusal, so "
            f"nothing shows that the routes are guarded. Mend: let the host's auth answer "
            f"401 or 403 to a request without the token (the check's requests come from "
            f"127.0.0.1 with Host: localhost)"] if answers else []
