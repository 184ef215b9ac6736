"""A request framed two ways is refused (RFC 9112 §6.1; issue 21.7).

A request with both ``Content-Length`` and ``Transfer-Encoding`` can be read two ways: a
front end that frames it by its length and a server that frames it by its chunks disagree
on where it ends, and the bytes past the chunked body run as a second request, which no
front end saw (request smuggling). h11 frames it by its chunks and kept the connection
open, so a batch hidden there was stored. The RFC lets a server refuse such a request and
requires it to close the connection after answering: ``FramingGuard`` answers 400 with
``Connection: close`` before the body is read, which makes uvicorn (h11 or httptools)
close the connection once the answer is written; ``serve``'s protocol also closes after
answering any such request, on any path (``api.cli.connections``).
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send


def framed_twice(headers: Iterable[tuple[bytes, bytes]]) -> bool:
    """Whether ASGI ``headers`` (lower-case names) hold both ``content-length`` and
    ``transfer-encoding``."""
    names = {name for name, _ in headers}
    return b"content-length" in names and b"transfer-encoding" in names


class FramingGuard:
    """Pure ASGI wrapper: answers 400 (``{"ok": false, "erreur": ...}``, ``Connection:
    close``) to a request framed two ways, before its body is read, so nothing of it is
    stored; passes every other request (and non-HTTP scopes) on."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry."""
        if scope["type"] == "http" and framed_twice(scope["headers"]):
            response = JSONResponse(
                {"ok": False, "erreur": "a request with both Content-Length and "
                                        "Transfer-Encoding is refused (RFC 9112, 6.1)"},
                status_code=400, headers={"Connection": "close"})
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)
