"""A TCP proxy in front of the test PostgreSQL server that a test can cut: the database
"goes away" for the processes that connect through it, and comes back, while the
machine's server keeps running for everything else (issue 34.4).

``cut("refuse")``: every connection through it is closed and nothing listens on its port
(a stopped server: connections refused at once). ``cut("hang")``: the open connections
are closed, new ones are accepted and never answered (a server that accepts and stalls,
a firewall that drops). ``cut("stall")``: nothing is forwarded any more, on the open
connections or new ones, and nothing is closed (a frozen server, a network partition).
``restore()`` forwards again on the same port.
"""

from __future__ import annotations

import selectors
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from urllib.parse import urlsplit, urlunsplit

MODES = ("refuse", "hang", "stall")


class DbProxy:
    """Forwards ``127.0.0.1:port`` to ``target`` (host, port) in one thread until
    ``close()``; ``url(database_url)`` is that URL through the proxy."""

    def __init__(self, target: tuple[str, int]):
        self.target = target
        self.mode = "open"
        self._selector = selectors.DefaultSelector()
        self._peers: dict[socket.socket, socket.socket | None] = {}  # None: held
        self._wake_r, self._wake_w = socket.socketpair()
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._listener: socket.socket | None = None
        self._pending: tuple[Callable[[], None], threading.Event] | None = None
        self.port = self._listen(0)
        self._stop = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def url(self, database_url: str) -> str:
        """``database_url`` (``postgresql://user@host:port/db``) through the proxy."""
        parts = urlsplit(database_url)
        user = f"{parts.username}@" if parts.username else ""
        return urlunsplit(parts._replace(netloc=f"{user}127.0.0.1:{self.port}"))

    def cut(self, mode: str) -> None:
        """The database goes away, as ``mode`` says (see the module)."""
        assert mode in MODES, mode
        self._call(lambda: self._cut(mode))

    def restore(self) -> None:
        """Forward again, on the same port."""
        self._call(self._restore)

    def close(self) -> None:
        """Close every socket and stop the thread."""
        self._stop = True
        self._wake_w.send(b"x")
        self._thread.join(10)
        for sock in list(self._peers):
            sock.close()
        if self._listener is not None:
            self._listener.close()
        self._wake_r.close()
        self._wake_w.close()

    # --- the proxy's thread -------------------------------------------------------------

    def _call(self, change: Callable[[], None]) -> None:
        # Changes run in the proxy's thread, between two reads: no socket is used by two
        # threads at once.
        done = threading.Event()
        self._pending = (change, done)
        self._wake_w.send(b"x")
        assert done.wait(10), "the proxy did not take the change"

    def _listen(self, port: int) -> int:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(64)
        self._listener = listener
        self._selector.register(listener, selectors.EVENT_READ)
        return int(listener.getsockname()[1])

    def _drop(self, sock: socket.socket) -> None:
        peer = self._peers.pop(sock, None)
        for each in (sock, peer):
            if each is not None:
                with suppress(KeyError, ValueError):
                    self._selector.unregister(each)
                with suppress(OSError):
                    # RST rather than FIN: what a killed server's kernel sends.
                    each.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
                each.close()
                self._peers.pop(each, None)

    def _cut(self, mode: str) -> None:
        self.mode = mode
        for sock in list(self._peers):
            if mode == "stall":
                # Nothing forwarded: the bytes stay where they are (the kernel's buffers).
                with suppress(KeyError, ValueError):
                    self._selector.unregister(sock)
            else:
                self._drop(sock)
        if mode == "refuse" and self._listener is not None:
            self._selector.unregister(self._listener)
            self._listener.close()
            self._listener = None

    def _restore(self) -> None:
        for sock, peer in list(self._peers.items()):
            if peer is None:
                self._drop(sock)  # accepted while cut: never answered, closed now
            elif self.mode == "stall":
                self._selector.register(sock, selectors.EVENT_READ)
        self.mode = "open"
        if self._listener is None:
            self._listen(self.port)

    def _accept(self) -> None:
        assert self._listener is not None
        client, _ = self._listener.accept()
        if self.mode != "open":
            self._peers[client] = None  # held: never answered
            return
        try:
            server = socket.create_connection(self.target, timeout=5)
        except OSError:
            client.close()
            return
        for sock, peer in ((client, server), (server, client)):
            sock.setblocking(False)
            self._peers[sock] = peer
            self._selector.register(sock, selectors.EVENT_READ)

    def _forward(self, sock: socket.socket) -> None:
        peer = self._peers.get(sock)
        if peer is None:
            return
        try:
            data = sock.recv(65536)
            if data:
                peer.setblocking(True)
                peer.sendall(data)
                peer.setblocking(False)
                return
        except OSError:
            pass
        self._drop(sock)

    def _run(self) -> None:
        while not self._stop:
            for key, _ in self._selector.select(timeout=1.0):
                sock = key.fileobj
                if sock is self._wake_r:
                    self._wake_r.recv(64)
                    if self._pending is not None:
                        (change, done), self._pending = self._pending, None
                        change()
                        done.set()
                elif sock is self._listener:
                    self._accept()
                elif isinstance(sock, socket.socket):
                    self._forward(sock)


@contextmanager
def proxied(database_url: str) -> Iterator[tuple[DbProxy, str]]:
    """A proxy to ``database_url``'s server, and that URL through it; closed on exit."""
    parts = urlsplit(database_url)
    proxy = DbProxy((parts.hostname or "127.0.0.1", parts.port or 5432))
    try:
        yield proxy, proxy.url(database_url)
    finally:
        proxy.close()
