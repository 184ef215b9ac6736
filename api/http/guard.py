"""The explicit auth decision ``economies_routes(auth=...)`` takes (SPEC, "Installed as a
library", "Fail closed"; ADR-0091): a token, the host's own per-route middleware, or
``"host"``. There is no default: a route list built without a decision would be public
under any host whose auth only labels requests (the MCP SDK's).
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.middleware import Middleware

from miam_economies.api.http.auth import BearerAuth

HOST = "host"
"""``auth=HOST``: the host's app-wide middleware guards the routes (it must refuse a request
without MIAM's token before routing; ``open_economies`` checks that it does)."""

Auth = str | Sequence[Middleware]
"""What ``economies_routes(auth=...)`` takes: a token (str), Starlette ``Middleware``
entries (outermost first), or ``HOST``."""

HOW_TO_CHOOSE = (
    "economies_routes() needs an explicit auth decision (SPEC, \"Fail closed\"): "
    "auth=MIAM_TOKEN puts miam_economies.BearerAuth on each route; "
    "auth=[Middleware(...)] puts the host's own per-route auth on each route (with the MCP "
    "SDK: Middleware(RequireAuthMiddleware, required_scopes=[])); auth=\"host\" says the "
    "host app's own middleware refuses a request without the token before routing "
    "(checked by open_economies(settings, app))")


def route_middleware(auth: Auth | None) -> list[Middleware]:
    """The middleware to wrap each route in, for the decision ``auth``: ``[BearerAuth]``
    for a token (no public path: embedded, even ``/healthz`` needs it), the entries as
    given for a ``Middleware`` list, none for ``"host"``.

    Raises ``TypeError`` (saying how to choose) when ``auth`` is None or of another type,
    or a list holds something else than ``Middleware``; ``ValueError`` for an empty or
    blank token and for an empty list (it would guard nothing). ``"host"`` is never a
    token.
    """
    if auth is None:  # most often a token read from an unset variable: say so
        raise TypeError("economies_routes() got no auth, or auth=None (a token read from "
                        "an unset environment variable?); " + HOW_TO_CHOOSE)
    if isinstance(auth, str):
        if auth == HOST:
            return []
        if not auth.strip():
            raise ValueError("economies_routes(auth=...) got an empty token, which "
                             "'Authorization: Bearer ' would match; " + HOW_TO_CHOOSE)
        return [Middleware(BearerAuth, token=auth, public_paths=())]
    if isinstance(auth, Sequence):
        if not auth:
            raise ValueError("economies_routes(auth=[]) guards nothing; " + HOW_TO_CHOOSE)
        entries: list[Middleware] = []
        for entry in auth:  # typed Middleware, but a host's list may hold anything
            if not isinstance(entry, Middleware):
                raise TypeError(f"economies_routes(auth=[...]) takes Starlette Middleware "
                                f"entries, not {type(entry).__name__}; " + HOW_TO_CHOOSE)
            entries.append(entry)
        return entries
    raise TypeError(f"economies_routes(auth=...) got a {type(auth).__name__}; "
                    + HOW_TO_CHOOSE)
