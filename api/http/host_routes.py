"""Where our routes sit in an assembled host app, and what wraps them: the start-up
check's reading of the app (ADR-0091, ADR-0140).

The app's routes are walked as Starlette's router tries them: the first full match wins,
and a ``Mount`` or ``Host`` that matches is entered and takes the request whatever it
holds. Our routes are those whose endpoint is ``ProbeStop``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.routing import BaseRoute, Host, Match, Mount, Route
from starlette.types import ASGIApp, Scope

from miam_economies.api.http.auth import BearerAuth
from miam_economies.api.http.host_probe import ProbeStop

DEPTH = 32
"""How many ASGI wrappers (``.app``, by convention) the walk goes through at most."""


def stop_of(route: BaseRoute) -> ProbeStop | None:
    """Our endpoint's outermost layer when ``route`` is one of ours, else None."""
    if isinstance(route, Route) and isinstance(route.endpoint, ProbeStop):
        return route.endpoint
    return None


def label(route: BaseRoute) -> str:
    """``route`` as a host's code writes it: ``Mount("/")``, ``Route("/economies")``."""
    if isinstance(route, Mount):
        return f'Mount("{route.path or "/"}")'
    if isinstance(route, Host):
        return f'Host("{route.host}")'
    if isinstance(route, Route):
        return f'Route("{route.path}")'
    return type(route).__name__


def _chain(app: Any) -> Iterator[Any]:
    # The app a lifespan receives is the Starlette app; an app wrapped in pure ASGI
    # middleware keeps it under .app, by convention. Ends at the first app with routes.
    for _ in range(DEPTH):
        if app is None:
            return
        yield app
        if isinstance(getattr(app, "routes", None), list):
            return
        app = getattr(app, "app", None)


def routes_of(app: ASGIApp) -> Sequence[BaseRoute] | None:
    """The routes of ``app`` or of the app it wraps; None when there are none."""
    for layer in _chain(app):
        routes = getattr(layer, "routes", None)
        if isinstance(routes, list):
            return routes
    return None


@dataclass(frozen=True)
class Taker:
    """The route a request reaches first (``route``: ours, or the host's that takes it),
    and the ``Mount``/``Host`` routes entered on the way (``within``, outermost first)."""

    route: BaseRoute
    within: tuple[BaseRoute, ...] = ()


def first_taker(routes: Sequence[BaseRoute], scope: Scope) -> Taker | None:
    """Ours, or the route that takes ``scope`` before ours (None: no route matches)."""
    for route in routes:
        match, child = route.matches(scope)
        if match is not Match.FULL:
            continue
        if stop_of(route) is not None:
            return Taker(route)
        inner = route.routes if isinstance(route, Mount | Host) else []
        found = first_taker(inner, {**scope, **child}) if inner else None
        # A matching mount takes the request whatever it holds: ours inside, or nothing.
        if found is not None and stop_of(found.route) is not None:
            return Taker(found.route, (route, *found.within))
        return Taker(route)
    return None


def prefixes_of_ours(routes: Sequence[BaseRoute], prefix: str = "") -> list[str]:
    """The paths of the ``Mount`` routes our routes sit under, in order (``""``: at the
    root, where the plugin posts)."""
    found: list[str] = []
    for route in routes:
        if isinstance(route, Mount | Host):
            under = prefix + route.path if isinstance(route, Mount) else prefix
            found += [p for p in prefixes_of_ours(route.routes, under) if p not in found]
        elif stop_of(route) is not None and prefix not in found:
            found.append(prefix)
    return found


def _classes(app: Any) -> Iterator[object]:
    """The classes that wrap and make ``app``: its ASGI wrappers and, for a Starlette
    app, its ``middleware=`` entries."""
    for layer in _chain(app):
        yield type(layer)
        if isinstance(layer, Starlette):
            yield from (entry.cls for entry in layer.user_middleware)


def _sdk_refusal(cls: object) -> bool:
    # By name: the package never imports the MCP SDK (docs/embedding.md).
    return (getattr(cls, "__name__", "") == "RequireAuthMiddleware"
            and str(getattr(cls, "__module__", "")).split(".")[0] == "mcp")


def _labels(cls: object) -> bool:
    return isinstance(cls, type) and issubclass(cls, AuthenticationMiddleware)


def token_of(stop: ProbeStop) -> str | None:
    """MIAM's token as our route knows it: that of its own ``BearerAuth``
    (``economies_routes(auth=TOKEN)``, or the entry given in a list); None otherwise."""
    for entry in stop.middleware:
        cls: object = entry.cls
        token = entry.kwargs.get("token")
        if cls is BearerAuth and isinstance(token, str):
            return token
    return None


def unlabelled_sdk_guard(app: ASGIApp, taker: Taker) -> bool:
    """True when our route ``taker`` is guarded by the MCP SDK's ``RequireAuthMiddleware``
    and no ``AuthenticationMiddleware`` runs before it (in the app, in a mount on the way,
    or earlier in the route's own list): it then reads no user and answers 401 to every
    request, MIAM's token included (embedding review, turn 4, §6)."""
    stop = stop_of(taker.route)
    if stop is None:
        return False
    entries: list[object] = [entry.cls for entry in stop.middleware]
    guard = next((i for i, cls in enumerate(entries) if _sdk_refusal(cls)), None)
    if guard is None:
        return False
    above = [*_classes(app), *(cls for mount in taker.within
                               for cls in _classes(getattr(mount, "app", None))),
             *entries[:guard]]
    return not any(_labels(cls) for cls in above)
