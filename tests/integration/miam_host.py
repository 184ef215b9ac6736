"""A small host app in MIAM's shape: its own ``/mcp`` route behind its own bearer
middleware, with our routes mounted beside it and our services in its lifespan.

Run by the embedding test as ``uvicorn --factory tests.integration.miam_host:from_env``
with ``MIAM_HOST_DATA`` (the data directory) and ``MIAM_HOST_TOKEN`` (the host's token).
It imports nothing of this repository but ``miam_economies``, so a test can copy it into a
host tree of its own.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.authentication import (
    AuthCredentials,
    AuthenticationBackend,
    AuthenticationError,
    SimpleUser,
)
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import BaseRoute, Route

from miam_economies import Settings, economies_routes, open_economies

HOST_REFUSAL = "host: bearer token required"


class HostBearer(AuthenticationBackend):
    """The host's own auth: every request needs ``Authorization: Bearer <token>``."""

    def __init__(self, token: str):
        self.token = token.encode()

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, SimpleUser]:
        """Accept the host's token, refuse anything else."""
        scheme, _, given = conn.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.encode(), self.token):
            raise AuthenticationError(HOST_REFUSAL)
        return AuthCredentials(["authenticated"]), SimpleUser("miam")


def _refused(conn: HTTPConnection, exc: Exception) -> JSONResponse:
    return JSONResponse({"host_error": str(exc)}, status_code=401)


async def mcp(request: Request) -> PlainTextResponse:
    """The host's own route; it reads the host's own lifespan state."""
    return PlainTextResponse(f"mcp of {request.state.host_name}")


def create_host_app(data: Path, token: str, routes: Sequence[BaseRoute] = (), *,
                    max_body_size: int | None = None, open_ours: bool = True,
                    auth_per_route: bool = False) -> Starlette:
    """The host: ``/mcp`` and its other ``routes`` plus ``economies_routes(auth="host")``,
    all behind ``HostBearer``; our services opened in its lifespan and merged into its
    state (unless ``open_ours`` is false: a host that forgot); ``max_body_size``: the
    host's own app-wide body cap (Starlette's), bytes. With ``auth_per_route`` the host's
    auth is no app-wide middleware: it wraps ``/mcp`` and each of our routes
    (``auth=[Middleware(...)]``, the MCP SDK's way)."""
    settings = Settings(data=data)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
        if not open_ours:
            yield {"host_name": "miam"}
            return
        async with open_economies(settings, app) as economies:
            yield {"host_name": "miam", **economies}

    auth = [Middleware(AuthenticationMiddleware, backend=HostBearer(token),
                       on_error=_refused)]
    if auth_per_route:
        return Starlette(
            routes=[Route("/mcp", mcp, methods=["GET", "POST"], middleware=auth), *routes,
                    *economies_routes(auth=auth)],
            lifespan=lifespan, max_body_size=max_body_size)
    return Starlette(
        routes=[Route("/mcp", mcp, methods=["GET", "POST"]), *routes,
                *economies_routes(auth="host")],
        middleware=auth, lifespan=lifespan, max_body_size=max_body_size)


def from_env() -> Starlette:
    """``create_host_app`` from ``MIAM_HOST_DATA`` and ``MIAM_HOST_TOKEN``."""
    return create_host_app(Path(os.environ["MIAM_HOST_DATA"]), os.environ["MIAM_HOST_TOKEN"])


def capped_from_env() -> Starlette:
    """The host with its own app-wide body cap of 64 KiB (ecosystem review, §3 D)."""
    return create_host_app(Path(os.environ["MIAM_HOST_DATA"]), os.environ["MIAM_HOST_TOKEN"],
                           max_body_size=64 * 1024)


def per_route_from_env() -> Starlette:
    """The host whose auth wraps each route, ours through ``economies_routes``."""
    return create_host_app(Path(os.environ["MIAM_HOST_DATA"]), os.environ["MIAM_HOST_TOKEN"],
                           auth_per_route=True)


def forgetful_from_env() -> Starlette:
    """The host that mounts our routes but never enters ``open_economies`` (§3 C)."""
    return create_host_app(Path(os.environ["MIAM_HOST_DATA"]), os.environ["MIAM_HOST_TOKEN"],
                           open_ours=False)
