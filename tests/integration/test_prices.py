"""``compare --formules pondere-v1,pondere-v2`` on the contract's example batch, through
the command line as ``docs/formulas.md`` ("Prices", once the README's) shows it, its
output as printed there (issue 15, section 2; ADR-0071).

The expected figures are recomputed here by hand from the contract's example and the list
prices, not read from the code under test.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import EXAMPLES

SCRIPT = Path(sys.executable).with_name("miam-economies")
PAGE = Path(__file__).parents[2] / "docs" / "formulas.md"


def _shown(command: str) -> list[str]:
    """The lines the page shows after ``$ <command>``, up to the next prompt or fence, the
    blank lines at their end left out."""
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    out = []
    for line in lines[lines.index(f"$ {command}") + 1:]:
        if line.startswith(("$ ", "```")):
            break
        out.append(line.rstrip())
    return "\n".join(out).rstrip("\n").splitlines()


def _run(data: Path, *args: str) -> str:
    done = subprocess.run([str(SCRIPT), *args, "--data", str(data)], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _compare(data: Path, par: str) -> dict[str, Any]:
    out = _run(data, "compare", "--formules", "pondere-v1,pondere-v2", "--par", par, "--json")
    result: dict[str, Any] = json.loads(out)
    return result


def test_compare_pondere_v1_and_v2_on_the_contracts_example(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _run(data, "import", str(EXAMPLES / "contract-batch.json"))

    # The delegation (subagent a1): lus 4,000 read and ecrits 900 written by the local
    # model, which Claude would have read (1x) and written (5x, output / input price of
    # the reference model claude-sonnet-4-5, 15 / 3): 4,000 + 5 x 900 = 8,500, both formulas.
    evites = 4000 + 5 * 900
    # The pilotage: claude-haiku-5-5, 800 input, 200 output, 10,000 cache-read tokens.
    # pondere-v1's table (2025-11-24) does not list it: weighed as claude-sonnet-4-5,
    # 800 + 5 x 200 + 10,000 / 10 = 2,800.
    pilotage_v1 = 800 + 5 * 200 + 10_000 // 10
    # pondere-v2: Haiku 5.5's list prices, 0.10 / 0.50 / 0.01 USD per million tokens, in
    # Sonnet 4.5 input tokens (3.00): (800 x 0.10 + 200 x 0.50 + 10,000 x 0.01) / 3
    # = 280 / 3 = 93.3, rounded half up: 93.
    pilotage_v2 = (2 * 280 + 3) // (2 * 3)
    assert (evites - pilotage_v1, evites - pilotage_v2) == (5700, 8407)

    cells = _compare(data, "client")["groupes"]["claude-code"]["claude-code"]
    assert cells["pondere-v1"]["evites"] == cells["pondere-v2"]["evites"] == evites
    assert cells["pondere-v1"]["pilotage"] == pilotage_v1
    assert cells["pondere-v2"]["pilotage"] == pilotage_v2
    assert cells["pondere-v1"]["net"] == 5700
    assert cells["pondere-v2"]["net"] == 8407

    model = _compare(data, "modele")["groupes"]["claude-haiku-5-5"]["claude-code"]
    # USD at the list prices whatever the formula: 280 micro-dollars.
    assert model["pondere-v1"]["usd"] == model["pondere-v2"]["usd"] == 280 / 1_000_000

    table = _run(data, "compare", "--formules", "pondere-v1,pondere-v2")
    assert "5,700" in table and "8,407" in table
    for par in ([], ["--par", "modele"]):  # the page's two tables, as printed
        printed = subprocess.run(
            [str(SCRIPT), "compare", "--formules", "pondere-v1,pondere-v2", *par, "--data",
             str(data)], capture_output=True, text=True, timeout=120, check=True,
            env={"COLUMNS": "120", "PATH": ""}).stdout
        command = " ".join([".venv/bin/miam-economies compare --formules pondere-v1,pondere-v2",
                            *par])
        assert "\n".join(line.rstrip() for line in printed.splitlines()).rstrip(
            "\n").splitlines() == _shown(command)


def test_a_model_no_table_lists_weighs_as_the_reference_and_has_no_usd(
        tmp_path: Path) -> None:
    batch = json.loads((EXAMPLES / "contract-batch.json").read_text(encoding="utf-8"))
    batch["evenements"][1]["modele"] = "claude-mystery-9"
    source = tmp_path / "batch.json"
    source.write_text(json.dumps(batch), encoding="utf-8")
    data = tmp_path / "data"
    _run(data, "import", str(source))

    model = _compare(data, "modele")["groupes"]["claude-mystery-9"]["claude-code"]
    for formule in ("pondere-v1", "pondere-v2"):
        assert model[formule]["pilotage"] == 800 + 5 * 200 + 10_000 // 10
        assert model[formule]["usd"] is None
