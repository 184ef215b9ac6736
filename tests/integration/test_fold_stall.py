"""A fold that stopped shows (ADR-0136): ``/healthz`` answers 503, and the metrics say it,
once events wait and the fold has not advanced for ``--fold-stall-after`` seconds; on
PostgreSQL, where ``serve`` only appends, the message asks whether ``project`` runs."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from tests.conftest import EXAMPLE_BATCH, LiveServer, fresh_postgres


def wait_for(server: LiveServer, status: int, within: float = 10.0) -> httpx.Response:
    """``/healthz`` once it answers ``status`` (at most ``within`` seconds)."""
    deadline = time.monotonic() + within
    while True:
        answer = server.client.get("/healthz")
        if answer.status_code == status or time.monotonic() > deadline:
            return answer
        time.sleep(0.1)


def test_serve_on_postgresql_without_project_says_so(tmp_path: Path) -> None:
    with fresh_postgres() as url:
        server = LiveServer(tmp_path / "data", database_url=url,
                            env={"MIAM_ECONOMIES_FOLD_STALL_AFTER": "1"})
        server.start()
        try:
            assert server.projector is not None
            server.projector.terminate()  # as if nobody started `project`
            server.projector.wait(20)
            server.projector = None
            assert server.post(EXAMPLE_BATCH).status_code == 200
            stalled = wait_for(server, 503)
            assert stalled.status_code == 503
            body = stalled.json()
            assert body["ok"] is False and body["retard"] == 2 and body["arrete_depuis"] >= 1
            assert "miam-economies project" in body["erreur"]
            assert "miam_economies_projection_stalled 1.0" in server.client.get(
                "/metrics").text
            server._start_projector()  # started: it folds, and health comes back
            assert wait_for(server, 200).json()["retard"] == 0
        finally:
            server.close()
        log = next((tmp_path).glob("server-*.log")).read_text()
        assert "run `miam-economies project` beside it" in log  # said at start
