"""Shared fixtures: a real ``miam-economies serve`` process on loopback, and open services."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.services import Services, open_services
from api.settings import Settings

TOKEN = "test-token"
EXAMPLES = Path(__file__).parents[1] / "examples"
EXAMPLE_BATCH: dict[str, Any] = json.loads(
    (EXAMPLES / "contract-batch.json").read_text(encoding="utf-8"))
"""The contract's example batch (``000_*.txt``, "Exemple")."""
EXAMPLE_CORRECTION: dict[str, Any] = json.loads(
    (EXAMPLES / "correction.json").read_text(encoding="utf-8"))["evenements"][0]
"""The README's correction: the main agent edits that delegation's output (490 tokens)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LiveServer:
    """A ``miam-economies serve`` subprocess on 127.0.0.1 over the data directory ``data``.

    ``client`` is an ``httpx.Client`` that sends the bearer token; ``restart()`` stops the
    process (SIGTERM, or SIGKILL with ``kill=True``) and starts a new one on the same data.
    """

    def __init__(self, data: Path, token: str | None = TOKEN,
                 env: dict[str, str] | None = None):
        self.data = data
        self.token = token
        self.env = {k: v for k, v in os.environ.items() if k != "MIAM_ECONOMIES_TOKEN"}
        self.env.update({"MIAM_ECONOMIES_TOKEN": token} if token else {})
        self.env.update(env or {})
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.client = httpx.Client(base_url=self.url, timeout=30)

    def start(self) -> None:
        """Start the process and return once ``/healthz`` answers 200 (at most 20 s)."""
        script = Path(sys.executable).with_name("miam-economies")
        self.log = open(self.data.parent / f"server-{self.port}.log", "ab")  # noqa: SIM115
        self.process = subprocess.Popen(
            [str(script), "serve", "--data", str(self.data), "--port", str(self.port)],
            env=self.env, stdout=self.log, stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode}")
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    # Without MIAM_ECONOMIES_TOKEN the server made (or read) its token file.
                    token = self.token or (self.data / "token").read_text().strip()
                    self.client.headers["Authorization"] = f"Bearer {token}"
                    return
            except httpx.TransportError:
                time.sleep(0.05)  # the process is still starting: nothing to wait on
        raise RuntimeError("server did not answer /healthz within 20 s")

    def stop(self, kill: bool = False) -> None:
        """Stop the process: SIGTERM (a clean shutdown), or SIGKILL with ``kill``."""
        if self.process is not None and self.process.poll() is None:
            if kill:
                self.process.kill()
            else:
                self.process.terminate()
            self.process.wait(timeout=20)
        self.process = None
        self.log.close()

    def restart(self, kill: bool = False) -> None:
        """Stop, then start a new process on the same data directory and port."""
        self.stop(kill=kill)
        self.start()

    def post(self, body: Any) -> httpx.Response:
        """POST ``body`` as JSON to /economies with the token."""
        return self.client.post("/economies", json=body)

    def bilan(self) -> dict[str, Any]:
        """The bilan after the projection folded everything stored so far."""
        response = self.client.get("/economies/bilan", params={"attendre": "1"})
        response.raise_for_status()
        bilan: dict[str, Any] = response.json()
        assert bilan["position"] == bilan["provenance"]["tete"], "projection lagging"
        return bilan


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    """A live server on a fresh data directory under ``tmp_path``."""
    live = LiveServer(tmp_path / "data")
    live.start()
    try:
        yield live
    finally:
        live.stop()
        live.client.close()


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    """Open services (store, view, projection) on real SQLite files, runner not started."""
    with open_services(Settings(data=tmp_path / "data", token=TOKEN),
                       run_projections=False) as opened:
        yield opened
