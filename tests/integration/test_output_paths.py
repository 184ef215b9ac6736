"""Issue 32, point 4 (ADR-0161): a file a command writes (``export --out``, ``rapport
--html``) is checked when the option is parsed: a missing folder, a folder, ``-``,
something else than a regular file, are refused in one ``Error:`` line naming the option,
exit status 2, before any work and with nothing created. Against 92db6ba a missing folder
ended both commands in a ``FileNotFoundError`` traceback (``... e.jsonl.partiel``), and
``rapport --html -`` wrote a file named ``-``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from miam_economies.api.cli import main
from miam_economies.api.cli.output_files import OutputUnwritable, private, refusal
from tests.conftest import EXAMPLES

SCRIPT = Path(sys.executable).with_name("miam-economies")

COMMANDS = {"export": ["export", "--out"], "rapport": ["rapport", "--html"]}
"""Each command that writes a file, and its option."""


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A data directory holding the contract's example."""
    data = tmp_path / "data"
    subprocess.run([str(SCRIPT), "import", "--data", str(data),
                    str(EXAMPLES / "contract-batch.json")], check=True, capture_output=True)
    return data


def tree(root: Path) -> set[Path]:
    return set(root.rglob("*"))


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize(("target", "words"), [
    ("missing-dir/out.file", "folder missing-dir does not exist: create it first"),
    ("-", "'-' would be a file named '-', not standard output"),
    (".", ". is a folder: name a file in it (./NAME)"),
    ("data", "data is a folder: name a file in it (data/NAME)"),
    ("/dev/null", "/dev/null exists and is not a regular file"),
    ("data/economies.sqlite/x", "data/economies.sqlite is not a folder"),
])
def test_a_path_that_cannot_be_written_is_refused_before_anything(
        store: Path, command: str, target: str, words: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(store.parent)  # relative paths, as typed; restored after the test
    before = tree(store.parent)
    sqlite_before = (store / "economies.sqlite").read_bytes()
    done = CliRunner().invoke(main, [*COMMANDS[command], target, "--data", str(store)],
                              catch_exceptions=False)
    assert done.exit_code == 2, done.output
    errors = [line for line in done.output.splitlines() if line.startswith("Error")]
    assert len(errors) == 1
    assert errors[0].startswith(f"Error: Invalid value for '{COMMANDS[command][1]}': ")
    assert words in errors[0]
    assert tree(store.parent) == before  # nothing created: no file, no .partiel, no view
    assert (store / "economies.sqlite").read_bytes() == sqlite_before


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_missing_folder_is_one_line_not_a_traceback(store: Path, command: str) -> None:
    # The newcomer's case, as a process: the traceback of 92db6ba is gone.
    target = store.parent / "missing-dir" / "out.file"
    done = subprocess.run([str(SCRIPT), *COMMANDS[command], str(target), "--data",
                           str(store)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"Error: Invalid value for '{COMMANDS[command][1]}': folder "
        f"{target.parent} does not exist: create it first (mkdir -p {target.parent})")
    assert not target.parent.exists()


def test_a_file_in_an_existing_folder_is_still_written(
        store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    for args in (["export", "--out", "./-"], ["rapport", "--html", "r.html"]):
        done = runner.invoke(main, [*args, "--data", str(store)], catch_exceptions=False)
        assert done.exit_code == 0, done.output
    assert (tmp_path / "-").read_text(encoding="utf-8").count("\n") == 2
    assert (tmp_path / "r.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert (tmp_path / "-").stat().st_mode & 0o777 == 0o600


def test_the_rule_reads_the_file_system_only(tmp_path: Path) -> None:
    assert refusal(str(tmp_path / "new.jsonl")) is None
    (tmp_path / "old.jsonl").write_text("x")
    assert refusal(str(tmp_path / "old.jsonl")) is None  # replaced, as before
    assert refusal("") == "name a file"
    assert sorted(tmp_path.iterdir()) == [tmp_path / "old.jsonl"]


def test_a_file_the_system_then_refuses_is_one_line(tmp_path: Path) -> None:
    # Past the check (a folder removed in between): our refusal, not a traceback.
    with pytest.raises(OutputUnwritable, match=r"^cannot write .*gone/r\.html: No such"):
        private(tmp_path / "gone" / "r.html")


def test_the_help_says_what_dash_does() -> None:
    runner = CliRunner()
    for command, _ in COMMANDS.values():
        shown = " ".join(runner.invoke(main, [command, "--help"]).output.split())
        assert "'-' is refused" in shown and "folder must exist" in shown
