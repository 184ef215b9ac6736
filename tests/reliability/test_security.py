"""Security: loopback by default, private files, the token kept out of logs and help, no
CORS (issue 5, "Security")."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.conftest import EXAMPLE_BATCH, LiveServer

SCRIPT = Path(sys.executable).with_name("miam-economies")
SECRET = "s3cret-token-that-must-not-leak"


def test_another_interface_than_loopback_needs_an_explicit_flag(tmp_path: Path) -> None:
    refused = subprocess.run([str(SCRIPT), "serve", "--data", str(tmp_path), "--host",
                              "0.0.0.0", "--port", "0"], capture_output=True, text=True,
                             env={**os.environ, "MIAM_ECONOMIES_TOKEN": SECRET}, timeout=30)
    assert refused.returncode == 2
    assert "--allow-non-loopback" in refused.stderr
    assert not (tmp_path / "economies.sqlite").exists()


def test_the_token_never_shows_in_help_logs_or_answers(tmp_path: Path) -> None:
    env = {**os.environ, "MIAM_ECONOMIES_TOKEN": SECRET}
    for command in (["--help"], ["serve", "--help"], ["bilan", "--help"]):
        shown = subprocess.run([str(SCRIPT), *command], capture_output=True, text=True,
                               env=env, check=True)
        assert SECRET not in shown.stdout + shown.stderr
    live = LiveServer(tmp_path / "data", token=SECRET)
    live.start()
    try:
        live.post(EXAMPLE_BATCH)
        live.post({"evenements": []})
        httpx.post(live.url + "/economies", headers={"Authorization": "Bearer wrong"})
        answers = [live.client.get("/economies/bilan").text,
                   httpx.get(live.url + "/healthz").text]
    finally:
        live.stop()
        live.client.close()
    log = b"".join(p.read_bytes() for p in tmp_path.glob("server-*.log")).decode()
    assert '"path": "/economies"' in log  # the log is the server's, and it was written
    assert SECRET not in log and all(SECRET not in a for a in answers)


def test_the_store_projections_and_token_files_are_private(tmp_path: Path) -> None:
    live = LiveServer(tmp_path / "data", token=None)
    live.start()
    try:
        live.post(EXAMPLE_BATCH)
        live.bilan()
        files = sorted(live.data.iterdir())
        modes = {f.name: stat.S_IMODE(f.stat().st_mode) for f in files}
    finally:
        live.stop()
        live.client.close()
    assert {"economies.sqlite", "projections.sqlite", "token"} <= set(modes)
    assert all(mode == 0o600 for mode in modes.values()), modes


def test_no_cors_headers_are_ever_sent(server: LiveServer) -> None:
    preflight = httpx.options(server.url + "/economies", headers={
        "Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
    answer = server.client.post("/economies", json=EXAMPLE_BATCH,
                                headers={"Origin": "http://evil.example"})
    for response in (preflight, answer):
        assert not any(h.startswith("access-control-") for h in response.headers)


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.0.0.2", True), ("::1", True), ("localhost", True),
    ("0.0.0.0", False), ("::", False), ("192.168.1.10", False), ("example.org", False),
    ("", False), ("LOCALHOST", False),
])
def test_only_loopback_hosts_are_served_without_the_flag(host: str, loopback: bool) -> None:
    from miam_economies.api.cli.serve import _is_loopback

    assert _is_loopback(host) is loopback


def test_files_left_readable_by_others_are_made_private(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = LiveServer(data, token=None)
    first.start()
    first.post(EXAMPLE_BATCH)
    first.stop()
    first.client.close()
    for f in data.iterdir():
        f.chmod(0o644)  # as an earlier release, or a careless copy, left them
    second = LiveServer(data, token=None)
    second.start()
    try:
        assert second.post(EXAMPLE_BATCH).json()["doublons"] == 2
        modes = {f.name: stat.S_IMODE(f.stat().st_mode) for f in data.iterdir()}
    finally:
        second.stop()
        second.client.close()
    assert all(mode == 0o600 for mode in modes.values()), modes
