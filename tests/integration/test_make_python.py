"""``make run`` and ``make test`` on a machine whose ``python3`` is older than
pyproject.toml's ``requires-python`` stop in one line saying so, before any ``.venv`` is
made (a newcomer's review: an older ``python3`` otherwise failed later, inside pip)."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


def _older_python() -> str | None:
    """An interpreter older than 3.11 on this machine (pyenv's, or on PATH), or None."""
    candidates = sorted(Path.home().glob(".pyenv/versions/3.*/bin/python3"), reverse=True)
    found = [str(p) for p in candidates] + [w for w in (shutil.which(f"python3.{m}")
                                                        for m in (10, 9, 8)) if w]
    for python in found:
        version = subprocess.run([python, "-c", "import sys; print(sys.version_info[1])"],
                                 capture_output=True, text=True)
        if version.returncode == 0 and int(version.stdout) < 11:
            return python
    return None


def test_the_makefiles_check_is_pyprojects_requires_python() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["requires-python"] == ">=3.11"
    assert re.search(r"sys\.version_info \\\n\s+< \(3, 11\)", (ROOT / "Makefile").read_text())


@pytest.mark.parametrize("target", ["install", "run"])
def test_an_older_python_is_refused_in_one_line_and_no_venv_is_made(
        tmp_path: Path, target: str) -> None:
    python = _older_python()
    if python is None:
        pytest.skip("no Python older than 3.11 on this machine")
    venv = tmp_path / ".venv"
    done = subprocess.run(["make", "-C", str(ROOT), target, f"PYTHON={python}",
                           f"VENV={venv}"], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert re.search(r"miam-economies needs Python >= 3\.11; \S+ is 3\.\d+\.\d+: run make "
                     r"PYTHON=python3\.11 \(or newer\)", done.stderr), done.stderr
    assert not venv.exists()
