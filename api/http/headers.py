"""A request's headers at most ``MAX_HEADERS`` bytes (ADR-0010): h11 caps only headers that
arrive over several reads, so ``HeaderCap`` checks the parsed ones and answers 431."""

from __future__ import annotations

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

MAX_HEADERS = 64 * 1024
"""Bytes of request line, path and headers at most (431 beyond)."""


class HeaderCap:
    """Answers 431 (JSON) when the request line and headers pass ``limit`` bytes."""

    def __init__(self, app: ASGIApp, limit: int = MAX_HEADERS):
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry: pass the request on, or refuse it before any other work."""
        if scope["type"] == "http":
            size = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"")
            size += sum(len(k) + len(v) + 4 for k, v in scope["headers"])
            if size > self.limit:
                response = JSONResponse(
                    {"ok": False, "erreur": f"request headers over {self.limit} bytes"},
                    status_code=431, headers={"Connection": "close"})
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
