"""Connection handling uvicorn does not do by itself, for ``serve`` only (a host app that
embeds the routes runs its own server, with its own limits).

``guarded_h11(header_timeout)``: uvicorn's h11 protocol, which

* closes a connection that has not completed a request's line and headers within
  ``header_timeout`` seconds of opening (or of its last response): uvicorn times idle
  keep-alive connections only after a response, so silent or trickling connections could
  otherwise fill the connection limit (ADR-0010);
* answers a client that half-closes its side once its request is in (``shutdown(SHUT_WR)``,
  with or without bytes past its Content-Length), then closes: uvicorn closes the
  transport at the end of the client's stream, and the answer was lost (ADR-0053);
* closes the connection after answering a request with both Content-Length and
  Transfer-Encoding, on any path (RFC 9112 §6.1; ``api.http.framing``; ADR-0102).
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from miam_economies.api.http.framing import framed_twice


def guarded_h11(header_timeout: float) -> type[H11Protocol]:
    """An ``H11Protocol`` subclass closing connections whose request does not arrive
    (line and headers complete) within ``header_timeout`` seconds, answering a request
    whose client half-closed after sending it, and closing after a request framed two
    ways (see the module)."""

    class GuardedH11Protocol(H11Protocol):
        _half_closed = False

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def eof_received(self) -> bool | None:  # type: ignore[override]
            # True keeps our side of the socket open. Only while a request that arrived
            # whole waits for its answer: after the answer the connection closes, and a
            # request cut short, or an idle connection, closes at once as before.
            cycle = self.cycle
            if cycle is not None and not cycle.more_body and not cycle.response_complete:
                self._half_closed = True
                return True
            return None

        def handle_events(self) -> None:
            super().handle_events()
            # A request framed two ways (api.http.framing): close once it is answered,
            # whatever answers it (a 401, a 404...), so that nothing past its chunked
            # body is read as another request (RFC 9112, 6.1). Its task has not run yet.
            cycle = self.cycle
            if cycle is not None and framed_twice(cycle.scope["headers"]):
                cycle.keep_alive = False

        def on_response_complete(self) -> None:
            if self._half_closed:
                # The client can send nothing more: whatever it sent past its request
                # is never read as another one.
                self.transport.close()
                return
            super().on_response_complete()
            self._arm()

        def _arm(self) -> None:
            self.loop.call_later(header_timeout, self._close_if_stalled, self.cycle)

        def _close_if_stalled(self, cycle: Any) -> None:
            # The same cycle as when armed: no new request's headers completed since.
            if self.cycle is cycle and not self.transport.is_closing():
                self.transport.close()

    return GuardedH11Protocol
