"""Issue 32, point 4 (ADR-0161): ``serve`` on a port another process listens on is
refused in one line naming ``--port``, ``MIAM_ECONOMIES_PORT`` and the address, exit
status 1, before anything is created: no data directory, no token, no store, no projector
child. Against 92db6ba it printed uvicorn's bare ``[Errno 98]`` once all of those were
made. The probe binds as uvicorn will (one worker: every address the host resolves to;
several: one socket) and leaves nothing bound."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from miam_economies.api.cli.port_check import PortUnavailable, addresses, check_port
from miam_economies.domain.errors import MiamEconomiesError
from tests.conftest import TOKEN

SCRIPT = Path(sys.executable).with_name("miam-economies")


@pytest.fixture
def taken() -> Iterator[int]:
    """A port of 127.0.0.1 another socket listens on for the test's length."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield int(holder.getsockname()[1])


def serve(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``miam-economies serve ARGS`` as a process, without a token in its environment (it
    would make one in the data directory)."""
    environment = {k: v for k, v in os.environ.items() if k != "MIAM_ECONOMIES_TOKEN"}
    return subprocess.run([str(SCRIPT), "serve", *args], capture_output=True, text=True,
                          env={**environment, **(env or {})}, timeout=60)


def refused_line(port: int) -> str:
    return (f"Error: 127.0.0.1:{port} is already in use (another server listens there): "
            "choose another port with --port or MIAM_ECONOMIES_PORT")


def test_a_taken_port_is_refused_before_anything_is_created(tmp_path: Path,
                                                             taken: int) -> None:
    data = tmp_path / "data"
    done = serve("--data", str(data), "--port", str(taken))
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [refused_line(taken)]  # no token line, no Errno 98
    assert not data.exists()
    assert list(tmp_path.iterdir()) == []


def test_the_variable_and_localhost_are_checked_the_same_way(tmp_path: Path,
                                                             taken: int) -> None:
    data = tmp_path / "data"
    data.mkdir()  # an existing directory stays as it was: no token, no store
    done = serve("--data", str(data), "--host", "localhost",
                 env={"MIAM_ECONOMIES_PORT": str(taken)})
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [refused_line(taken)]
    assert list(data.iterdir()) == []


def test_several_workers_are_checked_before_postgresql_is_touched(tmp_path: Path,
                                                                  taken: int) -> None:
    # An address nobody answers on: a check that came after the store would time out or
    # say so, not name the port.
    data = tmp_path / "data"
    done = serve("--data", str(data), "--port", str(taken), "--workers", "2",
                 "--database-url", "postgresql://nobody@127.0.0.1:9/none")
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [refused_line(taken)]
    assert not data.exists()


def test_a_free_port_passes_and_the_probe_leaves_nothing_bound() -> None:
    with socket.socket() as finder:
        finder.bind(("127.0.0.1", 0))
        port = int(finder.getsockname()[1])
    check_port("127.0.0.1", port, workers=1)
    check_port("127.0.0.1", port, workers=2)
    # Without SO_REUSEADDR: any socket the probe left open or bound would make this fail.
    with socket.socket() as after:
        after.bind(("127.0.0.1", port))
        after.listen()
        with pytest.raises(PortUnavailable) as refused:
            check_port("127.0.0.1", port)
    assert isinstance(refused.value, MiamEconomiesError | OSError)
    assert "MIAM_ECONOMIES_PORT" in str(refused.value)


def test_one_worker_binds_every_address_of_the_host_several_bind_one() -> None:
    assert addresses("127.0.0.1", 8090, 1) == [(socket.AF_INET, ("127.0.0.1", 8090))]
    assert addresses("localhost", 8090, 4) == [(socket.AF_INET, ("localhost", 8090))]
    assert addresses("::1", 8090, 4) == [(socket.AF_INET6, ("::1", 8090))]
    resolved = {address[0] for _, address in addresses("localhost", 8090, 1)}
    expected = {info[4][0] for info in socket.getaddrinfo(
        "localhost", 8090, socket.AF_UNSPEC, socket.SOCK_STREAM, 0, socket.AI_PASSIVE)}
    assert resolved == expected and "127.0.0.1" in resolved


def test_ipv6_loopback_taken_is_named_in_brackets() -> None:
    try:
        holder = socket.socket(socket.AF_INET6)
        holder.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback on this machine")
    with holder:
        holder.listen()
        port = int(holder.getsockname()[1])
        with pytest.raises(PortUnavailable, match=rf"^\[::1\]:{port} is already in use"):
            check_port("::1", port)


def test_a_host_that_does_not_resolve_is_named() -> None:
    with pytest.raises(PortUnavailable, match=r"^--host nowhere\.invalid "
                                              r"\(MIAM_ECONOMIES_HOST\) does not resolve"):
        check_port("nowhere.invalid", 8090)


def test_a_token_given_does_not_change_the_order(tmp_path: Path, taken: int) -> None:
    data = tmp_path / "data"
    done = serve("--data", str(data), "--port", str(taken),
                 env={"MIAM_ECONOMIES_TOKEN": TOKEN})
    assert done.returncode == 1
    assert done.stderr.splitlines() == [refused_line(taken)]
    assert not data.exists()
