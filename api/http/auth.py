"""Bearer authentication as a pure ASGI middleware, in the shape of Starlette's own.

Checked before the body is read (SPEC, "Wire contract"): a refused request costs no
upload. The scheme name is case-insensitive (RFC 7235 section 2.1); the token is compared
byte-wise in constant time (``hmac.compare_digest``), so a non-ASCII token is a plain
mismatch, never an error.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

HEADER_HINT = "send the header 'Authorization: Bearer <token>'"
"""What a 401 says by default: the header, not where the token lives (a host's own)."""


class BearerAuth:
    """Answers 401 with ``WWW-Authenticate: Bearer`` unless the request carries the token.

    ``token``: the expected bearer token (str, compared as UTF-8 bytes); an empty one
    raises ``ValueError`` here, since ``Authorization: Bearer `` would match it.
    ``public_paths``: paths served without auth (``/healthz``). Non-HTTP scopes pass.
    ``hint``: what the 401's ``erreur`` adds after "missing or invalid bearer token: ",
    so that a refused client learns what to send (the standalone app says where its
    token lives; a host's token is the host's own, so by default only the header).
    """

    def __init__(self, app: ASGIApp, token: str, public_paths: Iterable[str] = ("/healthz",),
                 hint: str = HEADER_HINT):
        if not token or not token.strip():
            raise ValueError("BearerAuth needs a non-empty token: an empty one would let "
                             "'Authorization: Bearer ' through")
        self.app = app
        self.token = token.encode("utf-8")
        self.public_paths = frozenset(public_paths)
        self.refusal = {"ok": False, "erreur": f"missing or invalid bearer token: {hint}"}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry: pass the request on, or answer 401 without reading its body."""
        if scope["type"] != "http" or scope["path"] in self.public_paths:
            await self.app(scope, receive, send)
            return
        if self._authorized(scope):
            await self.app(scope, receive, send)
            return
        response = JSONResponse(
            self.refusal,
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )
        await response(scope, receive, send)

    def _authorized(self, scope: Scope) -> bool:
        # Exactly one Authorization header: two of them is ambiguous, so refused.
        # ASGI headers are raw bytes (latin-1 on the wire): no decoding, so no decode error.
        values = [v for k, v in scope["headers"] if k == b"authorization"]
        if len(values) != 1:
            return False
        scheme, _, credentials = values[0].strip().partition(b" ")
        if scheme.lower() != b"bearer":
            return False
        return hmac.compare_digest(credentials.strip(), self.token)
