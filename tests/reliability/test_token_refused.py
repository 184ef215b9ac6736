"""An empty or blank bearer token, in the token file or in ``MIAM_ECONOMIES_TOKEN``, is
refused at start: one line naming the file or the variable and how to mend it, exit
status 1, no traceback, nothing created (issue 34.6). Against 7093df9 a blank file ended
``serve`` with a traceback, and a blank variable with another one from the app."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from miam_economies.api.service.settings import TokenRefused, resolve_token
from miam_economies.domain.errors import MiamEconomiesError

SCRIPT = Path(sys.executable).with_name("miam-economies")


@pytest.mark.parametrize("content", ["", "\n", " \t \r\n", "\n\n"])
def test_a_token_file_without_a_token_is_refused(tmp_path: Path, content: str) -> None:
    (tmp_path / "token").write_text(content, encoding="utf-8")
    with pytest.raises(TokenRefused) as refused:
        resolve_token(tmp_path, None)
    assert isinstance(refused.value, MiamEconomiesError)
    message = str(refused.value)
    assert str((tmp_path / "token").resolve()) in message
    assert "delete it" in message and "\n" not in message


@pytest.mark.parametrize("value", ["", " ", "\t\n"])
def test_a_blank_variable_is_refused(tmp_path: Path, value: str) -> None:
    with pytest.raises(TokenRefused, match="MIAM_ECONOMIES_TOKEN is set but blank"):
        resolve_token(tmp_path, value)
    assert list(tmp_path.iterdir()) == []  # no token file made in its place


def test_a_token_file_that_cannot_be_read_is_refused(tmp_path: Path) -> None:
    (tmp_path / "token").mkdir()  # a directory where the file should be
    with pytest.raises(TokenRefused, match="cannot be read"):
        resolve_token(tmp_path, None)
    (tmp_path / "token").rmdir()
    (tmp_path / "token").write_bytes(b"\xff\xfe not UTF-8")
    with pytest.raises(TokenRefused, match="cannot be read"):
        resolve_token(tmp_path, None)


def test_a_token_is_read_or_made_as_before(tmp_path: Path) -> None:
    assert resolve_token(tmp_path, "from-env") == ("from-env", None, False)
    token, path, created = resolve_token(tmp_path / "new", None)
    assert created and path is not None and path.read_text().strip() == token
    (tmp_path / "token").write_text("  kept \n", encoding="utf-8")
    assert resolve_token(tmp_path, None)[0] == "kept"


@pytest.mark.parametrize(("where", "value"), [("file", "\n"), ("env", ""), ("env", "  ")])
def test_serve_refuses_a_blank_token_in_one_line(tmp_path: Path, where: str,
                                                 value: str) -> None:
    data = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if k != "MIAM_ECONOMIES_TOKEN"}
    if where == "file":
        data.mkdir()
        (data / "token").write_text(value, encoding="utf-8")
    else:
        env["MIAM_ECONOMIES_TOKEN"] = value
    started = subprocess.run([str(SCRIPT), "serve", "--data", str(data), "--port", "0"],
                             env=env, capture_output=True, text=True, timeout=60)
    assert started.returncode == 1, started
    lines = started.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), started.stderr
    named = str((data / "token").resolve()) if where == "file" else "MIAM_ECONOMIES_TOKEN"
    assert named in lines[0]
    assert not (data / "economies.sqlite").exists()
