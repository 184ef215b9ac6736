"""MIAM's two real shapes, built on the MCP Python SDK (``mcp`` 2.x, ``MCPServer``), as
``docs/embedding.md`` gives them (issue 20; SDK docs ``docs/run/asgi.md`` and
``docs/run/authorization.md``):

* ``sdk_app_with_our_routes``: our routes added to ``server.streamable_http_app()``, our
  lifespan entered first, the SDK's inside it;
* ``host_app_mounting_the_sdk``: MIAM's own Starlette app, our routes listed before
  ``Mount("/", sdk_app)``, ours and ``server.session_manager.run()`` in its lifespan.

MIAM's one bearer token is the SDK's ``TokenVerifier`` on ``/mcp``; the server has one
tool, ``bilan``, which reads ``read_bilan`` in a worker thread as MIAM's tool does.
``MiamGuard`` is MIAM's own app-wide bearer guard, in the right shape and in the lax ones
a host may have written (issue 33).
"""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.responses import JSONResponse
from starlette.routing import Mount
from starlette.types import ASGIApp, Receive, Scope, Send

from miam_economies import Settings, economies_routes, open_economies, read_bilan
from miam_economies.api.http.guard import Auth

TOKEN = "miam-token-of-the-host"
"""MIAM's one bearer token, for ``/mcp`` and for our routes."""

MIAM_REFUSAL = {"error": "unauthorized"}
"""``MiamGuard``'s 401 body."""

SDK_GUARD = [Middleware(RequireAuthMiddleware, required_scopes=[])]
"""The SDK's own refusal, per route: it reads the user its ``AuthenticationMiddleware``
(app-wide) set from the ``TokenVerifier``."""


class MiamVerifier(TokenVerifier):
    """MIAM's token as the SDK's ``TokenVerifier``: that token, or nobody."""

    async def verify_token(self, token: str) -> AccessToken | None:
        """An ``AccessToken`` for MIAM's token, None for any other."""
        if hmac.compare_digest(token.encode(), TOKEN.encode()):
            return AccessToken(token=token, client_id="miam", scopes=[])
        return None


def mcp_server(data: Path) -> MCPServer:
    """MIAM's MCP server: the verifier on ``/mcp`` and the ``bilan`` tool over ``data``."""
    server = MCPServer("miam", token_verifier=MiamVerifier(), auth=AuthSettings(
        issuer_url=AnyHttpUrl("http://127.0.0.1/"),
        resource_server_url=AnyHttpUrl("http://127.0.0.1/mcp"),
        validate_token_resource=False))  # the verifier knows its one token

    @server.tool()
    async def bilan() -> dict[str, Any]:
        """The bilan's figures per client, read off the event loop."""
        whole = await anyio.to_thread.run_sync(lambda: read_bilan(data))
        return {"economies": whole["economies"]}

    return server


def sdk_app_with_our_routes(data: Path, auth: Auth | None, *, token: str | None = None,
                            under: str = "") -> Starlette:
    """Shape 1: the SDK's app, our routes appended (``auth`` as given; under
    ``Mount(under)`` when given: the prefix trap), our lifespan entered first
    (``open_economies(..., token=token)``), the SDK's inside it."""
    server = mcp_server(data)
    app = server.streamable_http_app()
    ours = economies_routes(auth=auth, ops=False)
    app.router.routes.extend([Mount(under, routes=ours)] if under else ours)
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(host: Starlette) -> AsyncIterator[dict[str, Any]]:
        async with open_economies(Settings(data=data), host, token=token) as ours, \
                inner(host) as own:
            yield {**(own or {}), **ours}

    app.router.lifespan_context = lifespan
    return app


def host_app_mounting_the_sdk(data: Path, auth: Auth | None, *,
                              middleware: Sequence[Middleware] = (),
                              mount_first: bool = False, token: str | None = None,
                              under: str = "") -> Starlette:
    """Shape 2: MIAM's own app, our routes (``auth`` as given) before ``Mount("/")``
    (after it with ``mount_first``, or under ``Mount(under)``: the traps), the host's
    app-wide ``middleware``, and a lifespan that runs ours
    (``open_economies(..., token=token)``) and the SDK's session manager."""
    server = mcp_server(data)
    mount = Mount("/", app=server.streamable_http_app())
    ours: list[Any] = economies_routes(auth=auth, ops=False)
    if under:
        ours = [Mount(under, routes=ours)]

    @asynccontextmanager
    async def lifespan(host: Starlette) -> AsyncIterator[dict[str, Any]]:
        # Ours first: a refusal raised inside the session manager's task group would
        # reach uvicorn wrapped in an ExceptionGroup's traceback.
        async with open_economies(Settings(data=data), host, token=token) as state, \
                server.session_manager.run():
            yield state

    routes = [mount, *ours] if mount_first else [*ours, mount]
    return Starlette(routes=routes, middleware=list(middleware), lifespan=lifespan)


def sdk_labels() -> list[Middleware]:
    """The SDK's labelling, app-wide on MIAM's own app (the mounted SDK app's own runs
    only under the mount): ``RequireAuthMiddleware`` on our routes reads its user. (That
    refusal cannot go app-wide: it answers the lifespan scope too, and the app never
    starts.)"""
    return [Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(MiamVerifier()))]


Accepts = Callable[[str | None], bool]
"""What a host guard makes of the ``Authorization`` header (None: absent)."""

GUARDS: dict[str, Accepts] = {
    # The right one: MIAM's token, compared.
    "compares the token": lambda value: value is not None and hmac.compare_digest(
        value.encode(), f"Bearer {TOKEN}".encode()),
    # The lax ones a host may have written before the library (embedding review, turn 4).
    "presence only": lambda value: value is not None,
    "scheme only": lambda value: value is not None and value.startswith("Bearer "),
    "any non-empty token": lambda value: value is not None
    and value.partition(" ")[0].lower() == "bearer" and value.partition(" ")[2].strip() != "",
}
"""MIAM's own guards, by what they check."""


class MiamGuard:
    """MIAM's own app-wide bearer guard (pure ASGI): 401 unless ``accepts`` the request's
    ``Authorization`` header; other scopes (the lifespan) pass."""

    def __init__(self, app: ASGIApp, accepts: Accepts):
        self.app = app
        self.accepts = accepts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry."""
        if scope["type"] == "http":
            values = [v.decode("latin-1") for k, v in scope["headers"] if k == b"authorization"]
            if not self.accepts(values[0] if values else None):
                await JSONResponse(MIAM_REFUSAL, 401)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def miam_guard(check: str) -> list[Middleware]:
    """``MiamGuard`` app-wide, with the check ``GUARDS[check]``."""
    return [Middleware(MiamGuard, accepts=GUARDS[check])]
