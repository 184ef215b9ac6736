"""A real uvicorn serving an app object on a free loopback port, in a thread of the test
process: the MCP SDK is imported once for every host the tests build, instead of once per
subprocess. The app's lifespan runs as under ``uvicorn.run``; a lifespan that raises
leaves the server unstarted, with uvicorn's error lines kept."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from starlette.types import ASGIApp


class _Kept(logging.Handler):
    def __init__(self, exits: list[object]) -> None:
        super().__init__(logging.ERROR)
        self.lines: list[str] = []
        self.exits = exits

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))  # with the traceback, if any


def _run(app: ASGIApp) -> tuple[uvicorn.Server, threading.Thread, str, _Kept]:
    # A socket bound here and handed to uvicorn: no race for a free port.
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    # ws="none": no websockets import (its deprecation warnings are errors under pytest).
    # log_level="error": uvicorn sets the level of its process-wide "uvicorn.error" logger
    # from each Config, and another module's Config(log_level="critical") in the same
    # worker would otherwise hide the start-up failure's lines read here.
    server = uvicorn.Server(uvicorn.Config(app, lifespan="on", log_config=None, ws="none",
                                           http="h11", access_log=False, log_level="error"))
    exits: list[object] = []
    kept = _Kept(exits)
    logging.getLogger("uvicorn.error").addHandler(kept)

    def run() -> None:
        # uvicorn ends a failed start with sys.exit(3) (STARTUP_FAILURE); here it ends a
        # thread, and the code is the failed start's testimony.
        try:
            server.run(sockets=[sock])
        except SystemExit as stop:
            exits.append(stop.code)
        finally:
            sock.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)  # uvicorn has no start-up callback to wait on
    return server, thread, url, kept


def _stop(server: uvicorn.Server, thread: threading.Thread, kept: _Kept) -> None:
    server.should_exit = True
    thread.join(timeout=20)
    logging.getLogger("uvicorn.error").removeHandler(kept)
    assert not thread.is_alive(), "uvicorn did not stop within 20 s"


@contextmanager
def serving(app: ASGIApp) -> Iterator[str]:
    """Serve ``app`` and yield its base URL once started; stop on exit (lifespan closed)."""
    server, thread, url, kept = _run(app)
    try:
        assert server.started, "\n".join(kept.lines) or "uvicorn did not start in 20 s"
        yield url
    finally:
        _stop(server, thread, kept)


def refused_start(app: ASGIApp) -> str:
    """Start ``app``, which must not start: uvicorn exits with its start-up failure (3);
    return uvicorn's error lines (the lifespan's exception among them)."""
    server, thread, _, kept = _run(app)
    _stop(server, thread, kept)
    assert not server.started, "the host started"
    assert kept.exits == [3], kept.exits
    return "\n".join(kept.lines)


@contextmanager
def running(config: uvicorn.Config) -> Iterator[int]:
    """Serve ``config`` (its app, protocol and limits as given) on a free loopback port
    bound here, in a thread, and yield the port once uvicorn listens; stop on exit."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)  # uvicorn sets the flag once it listens: nothing to wait on
    try:
        assert server.started, "uvicorn did not start"
        yield int(sock.getsockname()[1])
    finally:
        server.should_exit = True
        thread.join(20)
        sock.close()
