"""Connection handling uvicorn does not do by itself, for ``serve`` only (a host app that
embeds the routes runs its own server, with its own limits).

``guarded_protocol(header_timeout)`` is what ``serve`` runs: ``guarded_httptools`` when
httptools is importable (uvicorn[standard], which the ``cli`` extra installs), else
``guarded_h11`` (ADR-0112). Each is uvicorn's own protocol, subclassed to

* close a connection that has not completed a request's line and headers within
  ``header_timeout`` seconds of opening (or of its last response): uvicorn times idle
  keep-alive connections only after a response, so silent or trickling connections could
  otherwise fill the connection limit (ADR-0010);
* answer a client that half-closes its side once its request is in (``shutdown(SHUT_WR)``,
  with or without bytes past its Content-Length), then close: uvicorn closes the
  transport at the end of the client's stream, and the answer was lost (ADR-0053);
* close the connection after answering a request with both Content-Length and
  Transfer-Encoding, on any path (RFC 9112 §6.1; ``api.http.framing``; ADR-0102). llhttp,
  httptools' parser, refuses such a request itself (400, then close) before the app sees
  it; the check stays in case uvicorn ever makes the parser lenient about it;
* close lingering after a refusal (400, 431): our side shut after the answer, the
  client's late bytes dropped, the close on its end or ``LINGER`` seconds later, so that
  no reset destroys the answer (RFC 9112 §9.6; ADR-0112);
* cap a request's line and headers at ``MAX_HEADERS`` bytes while they arrive (ADR-0010):
  h11 does it when ``serve`` passes ``h11_max_incomplete_event_size`` (uvicorn then answers
  a plain 400); llhttp has no cap, so the httptools protocol counts the bytes itself and
  answers ``HeaderCap``'s 431 (ADR-0112);
* ignore an offer to switch protocols (``Upgrade: h2c``, ``Upgrade: websocket``) and
  serve the request as HTTP/1.1, its body read (RFC 9110 §7.8; ADR-0150). h11 reads the
  body of such a request; llhttp stops at the end of its head and uvicorn dropped the
  body, so the httptools protocol parses the request again without the offer. ``serve``
  runs uvicorn with ``ws="none"``: no route of ours is a websocket.
"""

from __future__ import annotations

import asyncio
import json
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from miam_economies.api.http.framing import framed_twice
from miam_economies.api.http.headers import MAX_HEADERS

if TYPE_CHECKING:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

_INVALID = "Invalid HTTP request received."  # uvicorn's own words for a parser error

LINGER = 2.0
"""Seconds a refused connection stays half-closed, its incoming bytes dropped, so that the
refusal reaches a client still sending (ADR-0112; RFC 9112 §9.6)."""


class _HeaderTimeout:
    """The guards both protocols share, mixed in before uvicorn's protocol: the
    half-close answer (ADR-0053), and the header timeout (ADR-0010), armed on connecting
    and (by the protocol) after each response: ``header_timeout`` seconds later the connection
    closes unless a request's headers completed meanwhile or a request is being served."""

    header_timeout: float
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    cycle: Any
    flow: Any
    server_state: Any
    _stall: asyncio.TimerHandle | None = None
    _half_closed = False
    _lingering = False  # refused: our side shut, the client's bytes read and dropped

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """The protocol's, then the header timer armed."""
        super().connection_made(transport)  # type: ignore[misc]
        self._arm()

    def eof_received(self) -> bool | None:
        """Keep our side of the socket open (True) only while a request that arrived
        whole waits for its answer (ADR-0053): after the answer the connection closes, and
        a request cut short, an idle connection, or one refused and lingering, closes at
        once as before."""
        if self._lingering:
            return None
        cycle = self.cycle
        if cycle is not None and not cycle.more_body and not cycle.response_complete:
            self._half_closed = True
            return True
        return None

    def _unsupported_upgrade_warning(self) -> None:
        # uvicorn's warns at each offer, and names a websocket library to install: an
        # offer ignored is the rule here (RFC 9110 §7.8), not a fault to log.
        return None

    def _answer(self, status: HTTPStatus, content_type: bytes, body: bytes) -> bytes:
        # A refusal's bytes: the status line, uvicorn's default headers, close.
        head = [b"HTTP/1.1 %d %s\r\n" % (status, status.phrase.encode())]
        head += [name + b": " + value + b"\r\n"
                 for name, value in self.server_state.default_headers]
        head.append(b"content-type: " + content_type + b"\r\ncontent-length: %d\r\n"
                    b"connection: close\r\n\r\n" % len(body))
        return b"".join(head) + body

    def _close_lingering(self) -> None:
        # After a refusal. A close with the client's bytes still arriving resets the
        # connection, and the reset can destroy the answer before the client reads it (RFC
        # 9112 §9.6): so shut our side after the answer, let the protocol drop what still
        # comes, and close on the client's end or LINGER seconds later, whichever is first.
        transport = self.transport
        if transport.is_closing() or not transport.can_write_eof():
            transport.close()
            return
        self._lingering = True
        transport.write_eof()
        self.flow.resume_reading()
        self.loop.call_later(LINGER, transport.close)

    def _arm(self) -> None:
        # One timer a connection: a pipelined request started as the previous answer
        # ended re-arms at its own end, and an older timer must not fire in its place.
        if self._stall is not None:
            self._stall.cancel()
        self._stall = self.loop.call_later(self.header_timeout, self._close_if_stalled,
                                           self.cycle)

    def _close_if_stalled(self, cycle: Any) -> None:
        # The same cycle as when armed: no new request's headers completed since. A cycle
        # still being answered (a pipelined request) did get its headers in: its body has
        # its own timeout (--body-timeout), its answer re-arms this one.
        if (self.cycle is cycle and (cycle is None or cycle.response_complete)
                and not self.transport.is_closing()):
            self.transport.close()


def guarded_protocol(header_timeout: float) -> type[asyncio.Protocol]:
    """The protocol class ``serve`` hands uvicorn (``http=``): ``guarded_httptools`` when
    httptools imports, else ``guarded_h11`` (ADR-0112); ``header_timeout`` in seconds."""
    try:
        return guarded_httptools(header_timeout)
    except ImportError:
        return guarded_h11(header_timeout)


def guarded_h11(header_timeout: float) -> type[H11Protocol]:
    """An ``H11Protocol`` subclass closing connections whose request does not arrive
    (line and headers complete) within ``header_timeout`` seconds, answering a request
    whose client half-closed after sending it, and closing after a request framed two
    ways (see the module; ADR-0010, 0053, 0102). Its header cap is uvicorn's
    ``h11_max_incomplete_event_size``, which the caller sets (``MAX_HEADERS``)."""

    # eof_received may return True (keep the socket half-open), where uvicorn types None.
    class GuardedH11Protocol(_HeaderTimeout, H11Protocol):  # type: ignore[misc]
        def data_received(self, data: bytes) -> None:
            if self._lingering:
                return  # refused: what still comes is dropped, never parsed
            super().data_received(data)

        def send_400_response(self, msg: str) -> None:
            # uvicorn's answer, then closed lingering (the mixin's _close_lingering).
            self.transport.write(self._answer(HTTPStatus.BAD_REQUEST,
                                              b"text/plain; charset=utf-8", msg.encode()))
            self._close_lingering()

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

    GuardedH11Protocol.header_timeout = header_timeout
    return GuardedH11Protocol


def guarded_httptools(header_timeout: float,
                      max_head: int = MAX_HEADERS) -> type[HttpToolsProtocol]:
    """An ``HttpToolsProtocol`` subclass with ``guarded_h11``'s guards (header timeout of
    ``header_timeout`` seconds, half-close answered, close after a request framed two
    ways; ADR-0010, 0053, 0102) and a cap of ``max_head`` bytes on a request's line and
    headers while they arrive: past it, 431 with ``HeaderCap``'s JSON body and
    ``Connection: close``, then the connection closes (ADR-0112).

    A request that cannot be parsed, or whose headers pass the cap, while an earlier
    request on the connection is still being answered, is answered after it (400 or 431,
    then close), as h11 does, where uvicorn's httptools protocol wrote its 400 at once
    and closed, losing the earlier answer. Raises ``ImportError`` without httptools."""
    import httptools
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    too_large = json.dumps({"ok": False, "erreur": f"request headers over {max_head} bytes"},
                           ensure_ascii=False, separators=(",", ":")).encode()

    class GuardedHttpToolsProtocol(_HeaderTimeout, HttpToolsProtocol):  # type: ignore[misc]
        _in_head = True  # the next bytes received belong to a request's line and headers
        _head_bytes = 0  # bytes of the head being received, counted over whole reads
        _heads = 0  # heads completed on this connection
        _refusal: bytes | None = None  # the last answer, held until those in flight are out

        _offer: bytes | None = None  # the head of a request offering an upgrade, without it

        def data_received(self, data: bytes) -> None:
            # uvicorn's, but a parser error is answered through _refuse, an upgrade offer
            # is ignored, and a head still incomplete after this read is counted against
            # max_head. Nothing past a refusal is read as a request.
            self._unset_keepalive_if_required()
            while data and self._refusal is None:
                data = self._parse(data)

        def _parse(self, data: bytes) -> bytes:
            # The bytes to parse next: a request offering an upgrade again, without the
            # offer, and what followed its head; else nothing.
            whole, heads = self._in_head, self._heads
            try:
                self.parser.feed_data(data)
            except httptools.HttpParserError:
                self.logger.warning(_INVALID)
                self._refuse(self._answer(HTTPStatus.BAD_REQUEST,
                                          b"text/plain; charset=utf-8", _INVALID.encode()))
                return b""
            except httptools.HttpParserUpgrade as upgrade:
                if self._offer is not None:
                    # llhttp stopped at the end of the head (httptools skips the body of
                    # an upgrade): a fresh parser reads the request without the offer.
                    head, self._offer = self._offer, None
                    self.parser = httptools.HttpRequestParser(self)
                    self.parser.set_dangerous_leniencies(lenient_data_after_close=True)
                    return head + data[upgrade.args[0]:]
                if self._should_upgrade():
                    self.handle_websocket_upgrade()
                return b""
            if self._in_head:
                # llhttp hands a header over only once it is whole, so its callbacks
                # cannot count a header that trickles: count the reads. A read in which
                # the head began after another request's bytes counts from the next
                # one, so the bound is max_head plus at most one read (256 KiB on uvloop).
                fresh = whole and heads == self._heads
                self._head_bytes = self._head_bytes + len(data) if fresh else 0
                if self._head_bytes > max_head:
                    self._refuse(self._answer(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE,
                                              b"application/json", too_large))
            return b""

        def on_headers_complete(self) -> None:
            if (self.parser.should_upgrade() and self.parser.get_method() != b"CONNECT"
                    and not self._should_upgrade()):
                # An offer to switch protocols (llhttp's reading: an Upgrade header and an
                # upgrade token in any Connection header), ignored (RFC 9110 §7.8): no cycle
                # for this parse; the head without its Upgrade headers is parsed again.
                kept = b"".join(name + b": " + value + b"\r\n" for name, value in self.headers
                                if name != b"upgrade")
                self._offer = b"%s %s HTTP/%s\r\n%s\r\n" % (
                    self.parser.get_method(), self.url,
                    self.parser.get_http_version().encode(), kept)
                return
            self._in_head, self._head_bytes, self._heads = False, 0, self._heads + 1
            super().on_headers_complete()
            # As guarded_h11's (ADR-0102); llhttp refuses such a request before this.
            cycle = self.cycle
            if cycle is not None and cycle.scope is self.scope and framed_twice(self.headers):
                cycle.keep_alive = False

        def on_message_complete(self) -> None:
            if self._offer is not None:
                return  # the request offering an upgrade: parsed again, body and all
            super().on_message_complete()
            self._in_head = True

        def on_response_complete(self) -> None:
            if self._half_closed:
                # As guarded_h11's: nothing sent past the request is read as another one.
                self.transport.close()
                return
            if self._refusal is not None and not self.pipeline:
                self._send_refusal()  # the requests before the refused bytes are answered
                return
            super().on_response_complete()
            self._arm()

        def _refuse(self, answer: bytes) -> None:
            self._refusal = answer
            cycle = self.cycle
            if self._in_head and cycle is not None and not cycle.response_complete:
                # Bytes after a whole request that is still being answered: h11 would
                # not read them before that answer is out, so answer them after it.
                self.flow.pause_reading()
                return
            # Bytes of the request being received, or none in flight: now, as uvicorn.
            self._send_refusal()

        def _send_refusal(self) -> None:
            if self._refusal is not None and not self.transport.is_closing():
                self.transport.write(self._refusal)
            self._close_lingering()  # data_received reads nothing once refused

    GuardedHttpToolsProtocol.header_timeout = header_timeout
    return GuardedHttpToolsProtocol
