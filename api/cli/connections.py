"""A connection limit uvicorn does not set by itself (ADR-0010), for ``serve`` only.

``guarded_h11(header_timeout)``: uvicorn's h11 protocol, closing a connection that has not
completed a request's line and headers within ``header_timeout`` seconds of opening (or
of its last response). uvicorn times idle keep-alive connections only after a response,
so silent or trickling connections could otherwise fill the connection limit. A host app
that embeds the routes runs its own server, with its own limits.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol


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
