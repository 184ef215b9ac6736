"""The ``bilan`` and ``classement`` tables' columns (a review's four findings): a breakdown
by ``client`` prints the client once; one by ``modele`` prints what a model's cell holds
(turns, pilotage, ``usd``), not the figures it never has; under a weighted formula the
classement has the bilan's ``net USD``; the bilan's title writes its position with a
thousands separator, as its provenance line and the classement's title do. On the
contract's example (one delegation, its Haiku turn, one correction), imported."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from miam_economies.api.cli import main, reading
from miam_economies.api.service.replay import replay
from miam_economies.api.service.results import BilanLu
from miam_economies.api.service.settings import Settings

EXAMPLES = Path(__file__).parents[2] / "examples"
FIGURES = ["delegations", "evites", "pilotage", "corrections", "net", "taux_reprise"]


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The example's data directory under ``v1``, and a copy replayed to ``pondere-v2``."""
    root = tmp_path_factory.mktemp("tables")
    v1 = root / "v1"
    imported = CliRunner().invoke(main, [
        "import", "--data", str(v1), "--fuseau", "Etc/UTC",
        str(EXAMPLES / "contract-batch.json"), str(EXAMPLES / "correction.json")])
    assert imported.exit_code == 0, imported.output
    weighted = root / "pondere-v2"
    shutil.copytree(v1, weighted)
    replay(Settings(data=weighted), "pondere-v2")
    return {"v1": v1, "pondere-v2": weighted}


def printed(data: Path, *args: str) -> str:
    """What ``args`` print on ``data`` (the command ends well)."""
    result = CliRunner().invoke(main, [*args, "--data", str(data)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def rows(table: str) -> list[list[str]]:
    """The table's header, then each row, as cells (columns are 2+ spaces apart; a cell
    left empty is not kept)."""
    lines = table.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.strip().startswith("─"))
    body = [lines[rule - 1], *(line for line in lines[rule + 1:] if line.strip())]
    cells = [re.split(r"\s{2,}", line.strip()) for line in body]
    return [row for row in cells if not row[0].startswith(("provenance:", "anomalies",
                                                            "by modele:", "figures:"))]


def test_a_breakdown_by_client_prints_the_client_once(stores: dict[str, Path]) -> None:
    header, row, total = rows(printed(stores["v1"], "bilan", "--par", "client"))
    assert header == ["client", *FIGURES]
    assert row == ["claude-code", "1", "4,900", "2,000", "490", "2,410", "10.0%"]
    assert total == ["total", "1", "4,900", "2,000", "490", "2,410", "10.0%"]
    # With a second dimension, the client keeps its place (first here, second below).
    header, row, _ = rows(printed(stores["v1"], "bilan", "--par", "client", "--puis",
                                  "modele"))
    assert header[:2] == ["client", "modele"] and header.count("client") == 1
    assert row[:2] == ["claude-code", "claude-haiku-5-5"]
    header, row, _ = rows(printed(stores["v1"], "bilan", "--par", "modele", "--puis",
                                  "client"))
    assert header[:2] == ["modele", "client"] and header.count("client") == 1
    assert row[:2] == ["claude-haiku-5-5", "claude-code"]
    # Any other breakdown still has its key, then the client.
    header, row, _ = rows(printed(stores["v1"], "bilan", "--par", "jour"))
    assert header == ["jour", "client", *FIGURES]
    assert row[:2] == ["2026-10-30", "claude-code"]


def test_a_breakdown_by_modele_prints_what_a_models_cell_holds(
        stores: dict[str, Path]) -> None:
    table = printed(stores["v1"], "bilan", "--par", "modele")
    header, row, total = rows(table)
    # The Haiku turn: 2,000 tokens of pilotage, $0.000280 at Haiku's own prices.
    assert header == ["modele", "client", "tours", "pilotage", "usd"]
    assert row == ["claude-haiku-5-5", "claude-code", "1", "2,000", "$0.000280"]
    assert total == ["total", "1", "2,000", "$0.000280"]
    assert "by modele: a model's turns and their pilotage only" in table
    header, row, _ = rows(printed(stores["v1"], "bilan", "--par", "modele", "--puis",
                                  "jour"))
    assert header == ["modele", "jour", "client", "tours", "pilotage", "usd"]
    assert row == ["claude-haiku-5-5", "2026-10-30", "claude-code", "1", "2,000",
                   "$0.000280"]
    # The JSON keeps the wire cell whole, the six figures included.
    answer: dict[str, Any] = json.loads(printed(stores["v1"], "bilan", "--par", "modele",
                                                "--json"))
    cell = answer["groupes"]["claude-haiku-5-5"]["claude-code"]
    assert {name: cell[name] for name in FIGURES} == {
        "delegations": 0, "evites": 0, "pilotage": 2000, "corrections": 0, "net": -2000,
        "taux_reprise": None}
    assert (cell["tours"], cell["usd"]) == (1, 0.00028)


def test_a_breakdown_by_modele_in_usd_under_a_weighted_formula(
        stores: dict[str, Path]) -> None:
    table = printed(stores["pondere-v2"], "bilan", "--par", "modele")
    header, row, total = rows(table)
    # 93 reference tokens at Sonnet 4.5's $3 per million: $0.000279.
    assert header == ["modele", "client", "tours", "pilotage", "usd", "pilotage USD"]
    assert row == ["claude-haiku-5-5", "claude-code", "1", "93", "$0.000280", "$0.000279"]
    assert total == ["total", "1", "93", "$0.000280", "$0.000279"]
    assert "pilotage USD: at claude-sonnet-4-5's prices" in table
    header, *_ = rows(printed(stores["pondere-v2"], "bilan", "--par", "client"))
    assert header == ["client", *FIGURES, "net USD"]


def test_the_classement_has_the_net_in_usd_under_a_weighted_formula(
        stores: dict[str, Path]) -> None:
    command = ("classement", "--par", "client", "--min", "1")
    header, row = rows(printed(stores["pondere-v2"], *command))
    assert header[header.index("net"):] == ["net", "net USD", "groupe"]
    # net/demande, its interval (one demande: none), net, net USD, groupe.
    assert row[row.index("5,957"):] == ["5,957", "-", "5,957", "$0.017871", "a"]
    header, _ = rows(printed(stores["v1"], *command))
    assert "net USD" not in header and header[-2:] == ["net", "groupe"]


def test_the_bilan_title_writes_its_position_with_a_separator(
        stores: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    read = reading.bilan_lu

    def far_along(*args: Any, **kwargs: Any) -> BilanLu:
        # The example's bilan as if 1,234 events had been folded (the title's format).
        lu = read(*args, **kwargs)
        return replace(lu, snapshot=replace(lu.snapshot, position=1234), tete=1234)

    monkeypatch.setattr(reading, "bilan_lu", far_along)
    table = printed(stores["v1"], "bilan")
    title = table.splitlines()[0]
    assert "position 1,234," in title, title
    assert "position 1,234 of tete 1,234" in table
