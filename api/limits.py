"""Connection and header limits uvicorn does not set by itself (ADR-0010).

* ``guarded_h11(header_timeout)``: uvicorn's h11 protocol, closing a connection that has
  not completed a request's line and headers within ``header_timeout`` seconds of opening
  (or of its last response). uvicorn times idle keep-alive connections only after a
  response, so silent or trickling connections could otherwise fill the connection limit.
* ``HeaderCap``: a pure ASGI middleware answering 431 when a request's headers pass a byte
  budget (h11 caps only headers that arrive over several reads).
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

MAX_HEADERS = 64 * 1024
"""Bytes of request line, path and headers at most (431 beyond)."""


def guarded_h11(header_timeout: float) -> type[H11Protocol]:
    """An ``H11Protocol`` subclass closing connections whose request does not arrive
    (line and headers complete) within ``header_timeout`` seconds."""

    class GuardedH11Protocol(H11Protocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()

        def _arm(self) -> None:
            self.loop.call_later(header_timeout, self._close_if_stalled, self.cycle)

        def _close_if_stalled(self, cycle: Any) -> None:
            # The same cycle as when armed: no new request's headers completed since.
            if self.cycle is cycle and not self.transport.is_closing():
                self.transport.close()

    return GuardedH11Protocol


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
