"""MIAM's two real shapes, built on the MCP Python SDK (``mcp`` 2.x, ``MCPServer``), as
``docs/embedding.md`` gives them (issue 20; SDK docs ``docs/run/asgi.md`` and
``docs/run/authorization.md``):

* ``sdk_app_with_our_routes``: our routes added to ``server.streamable_http_app()``, our
  lifespan entered inside the SDK's;
* ``host_app_mounting_the_sdk``: MIAM's own Starlette app, our routes listed before
  ``Mount("/", sdk_app)``, ours and ``server.session_manager.run()`` in its lifespan.

MIAM's one bearer token is the SDK's ``TokenVerifier`` on ``/mcp``; the server has one
tool, ``bilan``, which reads ``read_bilan`` in a worker thread as MIAM's tool does.
"""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator, Sequence
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
from starlette.routing import Mount

from miam_economies import Settings, economies_routes, open_economies, read_bilan
from miam_economies.api.http.guard import Auth

TOKEN = "miam-token-of-the-host"
"""MIAM's one bearer token, for ``/mcp`` and for our routes."""

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


def sdk_app_with_our_routes(data: Path, auth: Auth | None) -> Starlette:
    """Shape 1: the SDK's app, our routes appended (``auth`` as given), our lifespan
    inside the SDK's."""
    server = mcp_server(data)
    app = server.streamable_http_app()
    app.router.routes.extend(economies_routes(auth=auth, ops=False))
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(host: Starlette) -> AsyncIterator[dict[str, Any]]:
        async with inner(host) as own, open_economies(Settings(data=data), host) as ours:
            yield {**(own or {}), **ours}

    app.router.lifespan_context = lifespan
    return app


def host_app_mounting_the_sdk(data: Path, auth: Auth | None, *,
                              middleware: Sequence[Middleware] = (),
                              mount_first: bool = False) -> Starlette:
    """Shape 2: MIAM's own app, our routes (``auth`` as given) before ``Mount("/")``
    (after it with ``mount_first``: the trap), the host's app-wide ``middleware``, and a
    lifespan that runs the SDK's session manager and ours."""
    server = mcp_server(data)
    mount = Mount("/", app=server.streamable_http_app())
    ours = economies_routes(auth=auth, ops=False)

    @asynccontextmanager
    async def lifespan(host: Starlette) -> AsyncIterator[dict[str, Any]]:
        # Ours first: a refusal raised inside the session manager's task group would
        # reach uvicorn wrapped in an ExceptionGroup's traceback.
        async with open_economies(Settings(data=data), host) as state, \
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
