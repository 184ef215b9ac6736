"""Whether ``serve`` can listen where it is told, asked before it creates anything (the
data directory, the token, the stores, the projector child): a port another server holds
is refused in one line naming ``--port``, ``MIAM_ECONOMIES_PORT`` and the address, where
uvicorn would only say ``[Errno 98]`` once everything was made (issue 32, point 4;
ADR-0161).

The test binds the address as uvicorn will and closes the socket at once: with one worker
uvicorn lets asyncio's ``create_server`` bind every address the host resolves to
(``SO_REUSEADDR``; ``IPV6_V6ONLY`` for IPv6), with several it binds one socket itself
(``Config.bind_socket``: IPv6 when the host holds a ``:``, else IPv4, ``SO_REUSEADDR``).
``SO_REUSEADDR`` lets a port in ``TIME_WAIT`` be bound (a server just restarted) but, on
Linux, never one a socket listens on. A server that takes the port between this test and
uvicorn's bind still meets uvicorn's own error: that race is accepted (ADR-0161).
"""

from __future__ import annotations

import errno
import socket
from typing import Any

from miam_economies.domain.errors import MiamEconomiesError

Address = tuple[int, tuple[Any, ...]]
"""A socket family and the address to bind with it: ``(host, port)``, and for IPv6 as
``getaddrinfo`` gives it, ``(host, port, flowinfo, scope_id)``."""


class PortUnavailable(MiamEconomiesError, OSError):
    """``serve`` cannot listen on its host and port: taken by another process, a host
    that is not this machine's or does not resolve, a port the user may not bind. The
    message names the option (and variable) to change and the address."""


def check_port(host: str, port: int, workers: int = 1) -> None:
    """Bind ``host``:``port`` the way uvicorn will for ``workers`` processes, then close
    every socket; return when that worked. Raises ``PortUnavailable`` (one line) when it
    did not. Creates no file and leaves no socket open."""
    for family, address in addresses(host, port, workers):
        try:
            probe = socket.socket(family, socket.SOCK_STREAM)
        except OSError as exc:
            if exc.errno == errno.EAFNOSUPPORT:
                continue  # as asyncio's create_server: a family the machine lacks
            raise PortUnavailable(unavailable(exc, host, port, address)) from None
        try:
            with probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6:
                    probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                probe.bind(address)
        except OSError as exc:
            raise PortUnavailable(unavailable(exc, host, port, address)) from None


def addresses(host: str, port: int, workers: int) -> list[Address]:
    """The addresses uvicorn binds for ``host``:``port``: several workers, one socket of
    the family ``Config.bind_socket`` picks; one worker, each address ``getaddrinfo``
    gives for a passive TCP socket, as asyncio's ``create_server`` binds them (in its
    order, without repeats). Raises ``PortUnavailable`` when ``host`` does not resolve."""
    if workers > 1:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        return [(family, (host, port))]
    try:
        infos = socket.getaddrinfo(host or None, port, socket.AF_UNSPEC, socket.SOCK_STREAM,
                                   0, socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise PortUnavailable(f"--host {host} (MIAM_ECONOMIES_HOST) does not resolve: "
                              f"{exc.strerror or exc}") from None
    found: list[Address] = []
    for family, _, _, _, sockaddr in infos:
        address = (family, tuple(sockaddr))
        if family in (socket.AF_INET, socket.AF_INET6) and address not in found:
            found.append(address)
    return found


def unavailable(exc: OSError, host: str, port: int, address: tuple[Any, ...]) -> str:
    """The one line saying why ``address`` (``host``:``port`` resolved) cannot be bound,
    naming the option and the variable to change."""
    bound = str(address[0])
    shown = f"[{bound}]:{port}" if ":" in bound else f"{bound}:{port}"
    if exc.errno == errno.EADDRINUSE:
        return (f"{shown} is already in use (another server listens there): choose "
                "another port with --port or MIAM_ECONOMIES_PORT")
    if exc.errno == errno.EACCES:
        return (f"{shown}: this user may not listen on port {port} (below 1024 needs "
                "privileges): choose another with --port or MIAM_ECONOMIES_PORT")
    if exc.errno == errno.EADDRNOTAVAIL:
        return (f"{shown}: {host} is not an address of this machine: choose another "
                "with --host or MIAM_ECONOMIES_HOST")
    return (f"cannot listen on {shown}: {exc.strerror or exc} (--host, --port; "
            "MIAM_ECONOMIES_HOST, MIAM_ECONOMIES_PORT)")
