"""The classement example of ``docs/formulas.md`` (once the README's) holds (issue 19;
ADR-0081): ``examples/classement/`` is what ``scripts/classement_demo.py`` writes, and the
commands the page shows print, on a fresh data directory, exactly what the page says, each
verdict kind included."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from scripts.classement_demo import OUT, build

ROOT = Path(__file__).parents[2]
PAGE = ROOT / "docs" / "formulas.md"
SCRIPT = Path(sys.executable).with_name("miam-economies")


def readme_output(command: str) -> list[str]:
    """The lines the page shows after ``$ <command>``, up to the next prompt or fence."""
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    start = lines.index(f"$ {command}") + 1
    out = []
    for line in lines[start:]:
        if line.startswith("$ ") or line.startswith("```"):
            break
        out.append(line.rstrip())
    return out


def run(*args: str) -> list[str]:
    done = subprocess.run([str(SCRIPT), *args], check=True, capture_output=True, text=True,
                          env={"COLUMNS": "120", "PATH": ""})
    return [line.rstrip() for line in done.stdout.splitlines()]


def test_the_example_files_are_what_the_script_writes() -> None:
    events, journal = build()
    assert (OUT / "evenements.jsonl").read_text(encoding="utf-8").splitlines() == events
    assert (OUT / "delegations.jsonl").read_text(encoding="utf-8").splitlines() == journal


def test_the_readme_shows_what_the_commands_print(tmp_path: Path) -> None:
    data = tmp_path / "demo"
    imported = run("import", "--data", str(data), str(OUT / "evenements.jsonl"))
    command = "import --data /tmp/demo examples/classement/evenements.jsonl"
    assert imported == readme_output(f".venv/bin/miam-economies {command}")
    shutil.copy(OUT / "delegations.jsonl", data / "delegations.jsonl")
    for extra in ("", " --apparier test_id"):
        shown = readme_output(f".venv/bin/miam-economies classement --data /tmp/demo "
                              f"--par preset{extra}")
        printed = run("classement", "--data", str(data), "--par", "preset", *extra.split())
        assert printed == shown
    # Each verdict the page quotes, as the JSON document has it (rounded as quoted).
    document = json.loads("\n".join(run("classement", "--data", str(data), "--par",
                                        "preset", "--json")))
    paired = json.loads("\n".join(run("classement", "--data", str(data), "--par", "preset",
                                      "--apparier", "test_id", "--json")))
    text = " ".join(PAGE.read_text(encoding="utf-8").split())

    def pair(doc: dict[str, Any], a: str, b: str) -> dict[str, Any]:
        (found,) = [c for c in doc["comparaisons"] if (c["a"], c["b"]) == (a, b)]
        return found

    def rounded(c: dict[str, Any]) -> str:
        low, high = (f"{bound:.3f}" for bound in c["intervalle"])
        return f'"difference": {c["difference"]:.3f}, "intervalle": [{low}, {high}]'

    ahead = pair(document, "precis", "rapide")
    assert ahead["verdict"] == "a_devant"
    assert f'{{"a": "precis", "b": "rapide", {rounded(ahead)}, "verdict": "a_devant"' in text
    behind = pair(paired, "code", "rapide")
    assert behind["verdict"] == "b_devant" and behind["taches"] == 60
    assert f'{{"a": "code", "b": "rapide", {rounded(behind)}, "verdict": "b_devant"' in text
    unclear = pair(document, "code", "rapide")
    assert unclear["verdict"] == "indiscernable" and unclear["raison"] is None
    low, high = (f"{bound:.3f}" for bound in unclear["intervalle"])
    assert f"code against rapide, interval [{low}, {high}]" in text
    held = pair(document, "precis", "code")
    assert held["verdict"] == "indiscernable" and held["raison"].startswith("unequal sizes")
