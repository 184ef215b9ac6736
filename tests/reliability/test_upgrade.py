"""An ``Upgrade`` offer on a request is ignored and the request served as HTTP/1.1, its
body read (RFC 9110 §7.8; issue 34.8): ``curl --http2`` over plain http, JetBrains' and
Ktor's clients send ``Upgrade: h2c`` with their POST, and llhttp (httptools) stopped
parsing at the end of such a request's head, so its body was dropped and the batch
refused (400 "the body is not JSON"). On both of ``serve``'s protocols, raw sockets; then
through ``miam-economies serve`` itself, with curl when it is installed."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE_BATCH, EXAMPLES, TOKEN, LiveServer
from tests.reliability.test_connections import (
    AUTH,
    HEALTHZ,
    Guarded,
    _serve,
    read_all,
    statuses,
)

BATCH = json.dumps(EXAMPLE_BATCH).encode()
H2C = (b"Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
       b"HTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n")
"""What curl --http2 adds to a request over plain http."""
WEBSOCKET = (b"Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
             b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n")


@pytest.fixture(params=["httptools", "h11"])
def guarded(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Guarded]:
    """``serve``'s server on each of its protocols (``test_connections``'s)."""
    with _serve(tmp_path, request.param) as served:
        yield served


def offered(offer: bytes, body: bytes = BATCH, *, chunked: bool = False,
            close: bool = False) -> bytes:
    """A ``POST /economies`` of ``body`` carrying the headers ``offer`` (with ``close``,
    its Connection header says ``close`` too)."""
    if close:
        offer = offer.replace(b"Connection: Upgrade", b"Connection: close, Upgrade")
    framing = (b"Transfer-Encoding: chunked\r\n" if chunked
               else b"Content-Length: %d\r\n" % len(body))
    if chunked:  # in two chunks, then the last
        half = len(body) // 2
        body = b"".join(b"%x\r\n%s\r\n" % (len(part), part)
                        for part in (body[:half], body[half:])) + b"0\r\n\r\n"
    return (b"POST /economies HTTP/1.1\r\nHost: x\r\n" + AUTH + offer
            + b"Content-Type: application/json\r\n" + framing + b"\r\n" + body)


def exchange(port: int, data: bytes) -> bytes:
    """Send ``data`` (its last request asks ``Connection: close``) and read every answer
    until the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        return read_all(sock)


@pytest.mark.parametrize("offer", [H2C, WEBSOCKET], ids=["h2c", "websocket"])
@pytest.mark.parametrize("chunked", [False, True], ids=["length", "chunked"])
def test_an_upgrade_offer_is_ignored_and_the_body_read(guarded: Guarded, offer: bytes,
                                                       chunked: bool) -> None:
    answer = exchange(guarded.port, offered(offer, chunked=chunked, close=True))
    assert statuses(answer) == [200], answer[:300]
    assert answer.endswith(b'{"ok":true,"recus":2,"doublons":0}'), answer[-200:]
    assert b"101 Switching" not in answer and b"upgrade: " not in answer.lower()
    assert guarded.stored() == 2


def test_requests_after_an_offer_on_the_connection_are_served(guarded: Guarded) -> None:
    # Pipelined in one write: the offer's POST, a GET offering h2c without a body, then
    # a plain GET; each answered in order on the same connection.
    head_only = b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + H2C + b"\r\n"
    last = HEALTHZ.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n")
    answer = exchange(guarded.port, offered(H2C) + head_only + last)
    assert statuses(answer) == [200, 200, 200], answer[:600]
    assert guarded.stored() == 2


def test_serve_ignores_offers_websocket_and_h2c_alike(tmp_path: Path) -> None:
    # serve itself (its protocol, ws="none"): a websocket offer on the POST route was
    # handed to the websocket protocol, which closed the connection with no answer.
    server = LiveServer(tmp_path / "data")
    server.start()
    try:
        answer = exchange(server.port, offered(WEBSOCKET, close=True))
        assert statuses(answer) == [200], answer[:300]
        curl = shutil.which("curl")
        if curl is not None:  # the client of the report, when installed
            sent = subprocess.run(
                [curl, "-sS", "--http2", "-X", "POST", f"{server.url}/economies",
                 "-H", f"Authorization: Bearer {TOKEN}",
                 "-H", "Content-Type: application/json",
                 "--data", f"@{EXAMPLES / 'contract-batch.json'}", "-w", " %{http_version}"],
                capture_output=True, text=True, timeout=30, check=True)
            assert sent.stdout == '{"ok":true,"recus":0,"doublons":2} 1.1', sent
        assert server.stored_count() == 2
    finally:
        server.close()
