"""A request with both ``Content-Length`` and ``Transfer-Encoding`` cannot smuggle a second
request behind its chunked body (issue 21.7; RFC 9112 §6.1): our routes refuse it with a
400 and ``Connection: close``, on ``serve``'s server and on a plain uvicorn as a host runs
them; ``serve`` closes the connection after answering any such request. Raw sockets
against real uvicorn processes; the store is checked afterwards."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from miam_economies.api.http.app import create_app
from miam_economies.api.service.settings import Settings
from tests.conftest import EXAMPLE_BATCH, TOKEN, LiveServer
from tests.integration.uvicorn_thread import running

DELEGATION, PILOTAGE = EXAMPLE_BATCH["evenements"]


def smuggling(path: str, method: str = "POST") -> bytes:
    """A request whose chunked body holds the delegation, followed by a second request (the
    pilotage's POST) that a front end framing by Content-Length would take as its body."""
    inner = json.dumps({"evenements": [PILOTAGE]}).encode()
    smuggled = (b"POST /economies HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                + TOKEN.encode() + b"\r\nContent-Type: application/json\r\n"
                + b"Content-Length: %d\r\n\r\n" % len(inner) + inner)
    outer = json.dumps({"evenements": [DELEGATION]}).encode()
    chunked = b"%x\r\n" % len(outer) + outer + b"\r\n0\r\n\r\n"
    return (method.encode() + b" " + path.encode() + b" HTTP/1.1\r\nHost: x\r\n"
            b"Authorization: Bearer " + TOKEN.encode() + b"\r\n"
            b"Content-Type: application/json\r\n"
            + b"Content-Length: %d\r\n" % len(chunked + smuggled)
            + b"Transfer-Encoding: chunked\r\n\r\n" + chunked + smuggled)


def exchange(port: int, request: bytes) -> list[int]:
    """Send ``request`` and read until the server closes the connection; return the
    status of every response read."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(request)
        received = b""
        while chunk := s.recv(65536):
            received += chunk
    # A response body ends without a newline: look for status lines anywhere.
    return [int(status) for status in re.findall(rb"HTTP/1\.1 (\d{3}) ", received)]


@pytest.mark.parametrize(("method", "path"), [("POST", "/economies"),
                                              ("GET", "/economies/bilan")])
def test_our_routes_refuse_it_and_close_the_connection(
        server: LiveServer, method: str, path: str) -> None:
    assert exchange(server.port, smuggling(path, method)) == [400]
    assert server.stored_count() == 0


def test_serve_closes_the_connection_after_answering_it_on_any_path(
        server: LiveServer) -> None:
    # One answer, then the close: httptools' parser, which serve runs when it imports
    # (ADR-0112), refuses the request itself (400) before the router could answer; on
    # the h11 fallback the router's 404 (test_connections.py runs both protocols).
    assert exchange(server.port, smuggling("/nowhere", "GET")) in ([400], [404])
    assert server.stored_count() == 0


@pytest.fixture(params=["h11", "httptools"])
def plain_uvicorn(tmp_path: Path, request: pytest.FixtureRequest
                  ) -> Iterator[tuple[int, Settings]]:
    """The routes under uvicorn's own protocols, as a host would run them: none of
    ``serve``'s protocol guards (httptools refuses such a request itself)."""
    settings = Settings(data=tmp_path / "data", token=TOKEN)
    config = uvicorn.Config(create_app(settings), http=request.param, log_level="critical",
                            lifespan="on")
    with running(config) as port:
        yield port, settings


def test_a_plain_uvicorn_closes_too_as_our_routes_answer_it(
        plain_uvicorn: tuple[int, Settings]) -> None:
    port, settings = plain_uvicorn
    assert exchange(port, smuggling("/economies")) == [400]
    import sqlite3
    with sqlite3.connect(settings.database.path) as db:
        stored: Any = db.execute("SELECT count(*) FROM stored_events").fetchone()[0]
    assert stored == 0
