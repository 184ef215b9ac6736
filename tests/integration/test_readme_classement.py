"""The classement example of ``docs/formulas.md`` (once the README's) holds (issue 19;
ADR-0081): ``examples/classement/`` is what ``scripts/classement_demo.py`` writes, and the
commands the page shows print, on a fresh data directory, exactly what the page says, each
verdict kind included."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from scipy import stats

from scripts.classement_demo import OUT, build
from tests.classement_reference import assert_same, clustered, expected_pairs, net_df

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
    # In UTC, the example's days (its sessions run 08:00-17:00 UTC): in a zone far from
    # it they would cross midnight, and count as two clusters each (ADR-0168).
    imported = run("import", "--data", str(data), "--fuseau", "Etc/UTC",
                   str(OUT / "evenements.jsonl"))
    command = "import --data /tmp/demo --fuseau Etc/UTC examples/classement/evenements.jsonl"
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


def test_the_example_equals_the_clustered_recomputation(tmp_path: Path) -> None:
    # Done when (issue 30): the example's classement, sessions and all, against the
    # cluster-robust rules written again apart (tests.classement_reference) from the
    # example's own files: each group's sessions and net interval, and every verdict.
    data = tmp_path / "demo"
    run("import", "--data", str(data), str(OUT / "evenements.jsonl"))
    shutil.copy(OUT / "delegations.jsonl", data / "delegations.jsonl")
    document = json.loads("\n".join(run("classement", "--data", str(data), "--par",
                                        "preset", "--json")))
    presets = {j["demande_id"]: j["preset"] for j in map(
        json.loads, (OUT / "delegations.jsonl").read_text(encoding="utf-8").splitlines())}
    rows: dict[str, list[Any]] = {}
    for event in map(json.loads, (OUT / "evenements.jsonl").read_text(
            encoding="utf-8").splitlines()):
        if event["type"] == "delegation":
            row = rows.setdefault(event["demande_id"], [None, 0, 0, 0])
            row[0], row[1] = event["session_id"], event["estimation"]["evites"]
        elif event["type"] == "pilotage":  # one demande a turn in the example
            rows.setdefault(event["demande_ids"][0], [None, 0, 0, 0])[2] += event["cout"]
        else:
            rows.setdefault(event["demande_id"], [None, 0, 0, 0])[3] += event["cout"]
    groups: dict[str, list[tuple[str, int, int, int]]] = {}
    for demande, (session, e, p, c) in rows.items():
        groups.setdefault(presets[demande], []).append((session, e, p, c))
    for g in document["groupes"]:
        mine = groups[g["cle"]]
        assert g["sessions"] == len({r[0] for r in mine}) < g["demandes"] == len(mine)
        mean, variance, _ = clustered(mine, "net")
        half = stats.t.ppf(0.975, net_df(mine)) * math.sqrt(variance)
        assert g["intervalle_net_par_demande"] == pytest.approx([mean - half, mean + half],
                                                                rel=1e-9)
    ranked = [g["cle"] for g in document["groupes"] if g["rang"] is not None]
    assert_same(document["comparaisons"],
                expected_pairs({cle: groups[cle] for cle in ranked}, "taux"))
