"""``examples/statusline.py`` as Claude Code runs it (SPEC, "Where a person looks";
ADR-0178): its status line document on standard input, a real server to ask, the route's
line printed; and on every failure (no server, a wrong token, no token, a session never
seen, an input that is not the document) nothing printed, nothing on standard error,
exit status 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, LiveServer

SCRIPT = EXAMPLES / "statusline.py"
SESSION = "c009a419-e17b-4036-9531-ac29eaa481d4"


def run(stdin: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MIAM_")}
    return subprocess.run([sys.executable, str(SCRIPT)], input=stdin, text=True,
                          capture_output=True, timeout=30, env={**clean, **env})


def document(session_id: str) -> str:
    # The shape Claude Code gives a status line command (its other keys, abridged).
    return json.dumps({"hook_event_name": "Status", "session_id": session_id,
                       "cwd": "/home/me/app", "model": {"id": "claude-opus-4-5"}})


@pytest.fixture
def story(tmp_path: Path) -> LiveServer:
    """A server (its token in its data directory's file) holding the contract's example
    and the example transcripts of its session."""
    server = LiveServer(tmp_path / "data", token=None)
    server.start()
    server.post(json.loads((EXAMPLES / "contract-batch.json").read_text()))
    server.cli("releves", str(EXAMPLES / "transcripts"))
    server.bilan()  # folded
    return server


def test_the_line_is_the_routes_and_each_failure_is_silent(story: LiveServer) -> None:
    try:
        where = {"MIAM_ECONOMIES_URL": story.url, "MIAM_ECONOMIES_DATA": str(story.data)}
        done = run(document(SESSION), **where)
        assert (done.returncode, done.stderr) == (0, "")
        assert done.stdout == "MIAM net 2,900 tokens · 21.0% saved · 1 delegation\n"
        token = (story.data / "token").read_text().strip()
        assert run(document(SESSION), MIAM_ECONOMIES_URL=story.url,
                   MIAM_ECONOMIES_TOKEN=token).stdout == done.stdout
        failures = [
            run(document("never-seen"), **where),                          # 404
            run(document(SESSION), **where, MIAM_ECONOMIES_TOKEN="wrong"),  # 401
            run(document(SESSION), MIAM_ECONOMIES_URL=story.url,
                MIAM_ECONOMIES_DATA=str(story.data.parent / "none")),       # no token
            run("not json", **where), run("{}", **where), run("", **where),
            run(json.dumps({"session_id": 7}), **where),
        ]
    finally:
        story.close()
    failures.append(run(document(SESSION), **where))  # the server is gone
    for failed in failures:
        assert (failed.returncode, failed.stdout, failed.stderr) == (0, "", "")
