#!/usr/bin/env python3
"""Claude Code's status line, from miam-economies: this session's net, the share of its
spend saved and its delegations, in one line (SPEC, "Where a person looks"; ADR-0178).

Claude Code runs the status line's command with a JSON document on its standard input
(``session_id`` among its keys) and shows what it prints. This script asks the running
server's ``GET /economies/sessions/{session_id}?format=ligne`` with the data directory's
bearer token and prints the line. On any failure (no server, no token, a session the
server has not seen, a slow answer, a bad input) it prints nothing and exits 0: a status
line never breaks. Standard library only.

In ``~/.claude/settings.json``::

    {"statusLine": {"type": "command",
                    "command": "python3 /path/to/miam-economies/examples/statusline.py"}}

Settings, from the environment: ``MIAM_ECONOMIES_URL`` (default
``http://127.0.0.1:8090``, else ``MIAM_ECONOMIES_PORT`` on 127.0.0.1),
``MIAM_ECONOMIES_TOKEN``, else the token file of ``MIAM_ECONOMIES_DATA`` (default
``logs/mcp``, as the server's; give it as an absolute path: the status line runs in the
session's working directory), and ``MIAM_STATUSLINE_TIMEOUT`` (seconds, default 0.5).
"""

from __future__ import annotations

import json
import os
import sys
import urllib.parse
import urllib.request
from pathlib import Path

MAX_LINE = 200
"""Characters printed at most: a status line is one short line."""


def server_url(environ: dict[str, str]) -> str:
    """The server's base URL: ``MIAM_ECONOMIES_URL``, else 127.0.0.1 on
    ``MIAM_ECONOMIES_PORT`` (default 8090)."""
    url = environ.get("MIAM_ECONOMIES_URL")
    if url:
        return url.rstrip("/")
    return f"http://127.0.0.1:{int(environ.get('MIAM_ECONOMIES_PORT', '8090'))}"


def token(environ: dict[str, str]) -> str:
    """The bearer token: ``MIAM_ECONOMIES_TOKEN``, else the data directory's token file
    (``MIAM_ECONOMIES_DATA``, default ``logs/mcp``). Raises ``OSError`` or
    ``ValueError`` when there is none."""
    value = environ.get("MIAM_ECONOMIES_TOKEN", "").strip()
    if not value:
        data = Path(environ.get("MIAM_ECONOMIES_DATA", "logs/mcp"))
        value = (data / "token").read_text(encoding="utf-8").strip()
    if not value:
        raise ValueError("no token")
    return value


def status_line(stdin_text: str, environ: dict[str, str]) -> str:
    """The line to print for Claude Code's status line document ``stdin_text``: the
    route's text, first line only, at most ``MAX_LINE`` characters. Raises on any
    failure (``main`` turns every one into silence)."""
    session_id = json.loads(stdin_text)["session_id"]
    if not isinstance(session_id, str) or not session_id:
        raise ValueError("no session_id")
    url = (f"{server_url(environ)}/economies/sessions/"
           f"{urllib.parse.quote(session_id, safe='')}?format=ligne")
    request = urllib.request.Request(url, headers={
        "Authorization": f"Bearer {token(environ)}"})
    timeout = float(environ.get("MIAM_STATUSLINE_TIMEOUT", "0.5"))
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
        if response.status != 200:
            raise ValueError(f"status {response.status}")
        text = response.read(4096).decode("utf-8")
    return text.splitlines()[0][:MAX_LINE] if text.strip() else ""


def main() -> int:
    """Print the status line, or nothing; always exit status 0."""
    try:
        line = status_line(sys.stdin.read(), dict(os.environ))
        if line:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
    except Exception:  # noqa: BLE001 - a status line never breaks: silence is the answer
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
