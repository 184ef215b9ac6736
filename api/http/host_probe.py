"""The start-up check's own requests (ADR-0091, ADR-0140): how they are built, sent in
process through the host app, and recognised by our routes.

A check request carries a scope key an HTTP client cannot set (``PROBE``). ``ProbeStop``,
the outermost layer of each of our endpoints, answers it itself (204, empty), before our
observer, handler or store, and notes that it got there: reaching it proves a request
with those credentials reaches our route, and stores and logs nothing.

Four requests per data route must be refused (401 or 403) before our route: without
``Authorization``, with an empty bearer (``Bearer`` and ``Bearer ``: a guard that checks
presence or the scheme only), and with a random wrong token (a guard that accepts any
non-empty one). One more, with MIAM's own token when the check knows it, must reach it.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass

import anyio
from starlette.middleware import Middleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

PROBE = "miam_economies.probe"
"""Scope key of the check's own requests: a list our endpoint appends its path to."""

PROBE_TIMEOUT = 10.0
"""Seconds the host app may take to answer one check request."""


class ProbeStop:
    """Our endpoint's outermost layer: answers a check request (204, empty) and notes
    that it got here; passes every other request on to ``app``.

    ``middleware``: the route's own middleware, outermost first, as
    ``economies_routes(auth=...)`` made it (``[BearerAuth]`` for a token, the host's
    entries, none for ``"host"``); the check reads there MIAM's token and a per-route
    guard that can never pass.
    """

    def __init__(self, app: ASGIApp, middleware: Sequence[Middleware] = ()):
        self.app = app
        self.middleware = tuple(middleware)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry."""
        reached = scope.get(PROBE)
        if scope["type"] == "http" and isinstance(reached, list):
            reached.append(scope["path"])
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await self.app(scope, receive, send)


@dataclass(frozen=True)
class Probe:
    """One kind of check request: ``said`` names it in a refusal's message;
    ``authorization``: the header's raw value (None: no header)."""

    said: str
    authorization: bytes | None


def refused_probes() -> tuple[Probe, ...]:
    """The requests a guard must refuse, weakest first; the wrong token is new at each
    call (``secrets``), so it is never MIAM's."""
    wrong = "miam-economies-probe-" + secrets.token_urlsafe(16)
    return (Probe("without credentials", None),
            Probe("with an empty bearer ('Authorization: Bearer')", b"Bearer"),
            Probe("with an empty bearer ('Authorization: Bearer ')", b"Bearer "),
            Probe("with a wrong token ('Authorization: Bearer miam-economies-probe-...')",
                  f"Bearer {wrong}".encode()))


def token_probe(token: str) -> Probe:
    """The request that must reach our route: MIAM's ``token`` as the plugin sends it."""
    return Probe("with MIAM's token", b"Bearer " + token.encode("utf-8"))


def probe_scope(method: str, path: str, probe: Probe, reached: list[str]) -> Scope:
    """The ASGI scope of ``probe`` on ``method path``, from 127.0.0.1 to ``localhost``,
    marked with ``PROBE`` (``reached`` collects the paths our routes saw)."""
    headers = [(b"host", b"localhost")]
    if probe.authorization is not None:
        headers.append((b"authorization", probe.authorization))
    if method == "POST":  # an empty body: nothing to store, even past a lost marker
        headers += [(b"content-type", b"application/json"), (b"content-length", b"0")]
    return {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.4"},
            "http_version": "1.1", "method": method, "scheme": "http", "path": path,
            "raw_path": path.encode(), "query_string": b"", "root_path": "",
            "headers": headers, "client": ("127.0.0.1", 0), "server": ("localhost", 80),
            "state": {}, PROBE: reached}


async def answer(app: ASGIApp, scope: Scope) -> int | str:
    """The status ``app`` answers ``scope`` with (a str: why there is none)."""
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
