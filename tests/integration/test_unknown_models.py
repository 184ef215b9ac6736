"""A price file's model that the catalogue does not know, through the command line on a
real store, SQLite then PostgreSQL (issue 32, point 1; ADR-0162): ``replay --tarifs``
refuses the newcomer's ``claude-opus-41`` with its line and the name meant, changing
nothing; declared ``hors_catalogue = true`` it is taken, and ``replay`` and ``compare``
name on standard error the store's models the table does not price; a misspelt formula
name is answered with the recorded formulas and the nearest one. Against 92db6ba the
file was accepted in silence and ``replay --formule mes-prx`` named the built-in formulas
only."""

from __future__ import annotations

import copy
import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.settings import Settings
from miam_economies.domain.tarifs_fichier import FormuleEnregistree
from tests.conftest import EXAMPLE_BATCH
from tests.integration.test_user_prices import cli, ok, state
from tests.price_files import TYPO

SCRIPT = Path(sys.executable).with_name("miam-economies")

PRICES = TYPO
"""The newcomer's file: Opus 4.1 misspelt, its table at line 10."""

OPUS = "claude-opus-4-1-20250805"
UNPRICED = ("warning: mes-prix has no prices for claude-haiku-5-5, claude-opus-4-1-20250805 "
            "(models of this store): their pilotage weighs as claude-sonnet-4-5, the "
            "reference")


def batch() -> dict[str, Any]:
    """The contract's example and an Opus 4.1 turn of the same demande."""
    events = copy.deepcopy(EXAMPLE_BATCH["evenements"])
    opus = copy.deepcopy(events[1])
    opus.update(id=opus["id"] + "2", turn_id="t2", modele=OPUS)
    return {"evenements": [*events, opus]}


class UnknownModels:
    backend = "sqlite"

    def test_a_misspelt_model_is_refused_and_a_declared_one_is_reported(
            self, tmp_path: Path, database_url: str | None) -> None:
        data = tmp_path / "data"
        events = tmp_path / "events.json"
        events.write_text(json.dumps(batch()), encoding="utf-8")
        ok(cli(data, database_url, "import", str(events)))
        ok(cli(data, database_url, "bilan"))  # the projection and its registry exist
        settings = Settings(data=data, database_url=database_url)
        before = state(settings)

        typo = tmp_path / "typo.toml"
        typo.write_text(PRICES, encoding="utf-8")
        done = cli(data, database_url, "replay", "--formule", "mes-prix", "--tarifs",
                   str(typo))
        assert done.returncode == 1
        assert done.stderr.splitlines() == [
            "Error: typo.toml:10: modeles.claude-opus-41: unknown model: no built-in "
            "price table has it (did you mean claude-opus-4-1, claude-opus-4, "
            "claude-opus-4-8?); events of the model meant would weigh as the reference. A "
            "model outside the catalogue needs `hors_catalogue = true` in its table"]
        assert state(settings) == before

        # Declared on purpose: taken, and the store's models it does not price are named.
        prix = tmp_path / "mes-prix.toml"
        prix.write_text(PRICES.replace('"claude-opus-41"]\n',
                                       '"claude-opus-41"]\nhors_catalogue = true\n'),
                        encoding="utf-8")
        done = cli(data, database_url, "replay", "--formule", "mes-prix", "--tarifs",
                   str(prix))
        assert done.returncode == 0, done.stderr
        assert done.stderr.splitlines() == [UNPRICED]
        assert "it serves the bilan" in done.stdout

        # compare: one line per weighted formula that leaves a model out, none for the
        # others; the JSON says the same.
        done = cli(data, database_url, "compare", "--formules", "v1,pondere-v2,mes-prix",
                   "--json")
        assert done.returncode == 0, done.stderr
        assert done.stderr.splitlines() == [UNPRICED]
        assert json.loads(done.stdout)["non_tarifes"] == {
            "pondere-v2": {"modeles": [], "reference": "claude-sonnet-4-5"},
            "mes-prix": {"modeles": ["claude-haiku-5-5", OPUS],
                         "reference": "claude-sonnet-4-5"}}
        done = cli(data, database_url, "replay", "--formule", "pondere-v1")
        assert done.stderr.splitlines() == [
            "warning: pondere-v1 has no prices for claude-haiku-5-5 (models of this "
            "store): their pilotage weighs as claude-sonnet-4-5, the reference"]
        done = cli(data, database_url, "replay", "--formule", "v1")
        assert done.returncode == 0 and done.stderr == ""

        # A misspelt formula name: the recorded ones, and the one meant.
        recorded = state(settings)
        for command in (["replay", "--formule", "mes-prx"],
                        ["compare", "--formules", "v1,mes-prx"]):
            done = cli(data, database_url, *command)
            assert done.returncode == 1
            assert done.stderr.splitlines() == [
                "Error: no formula 'mes-prx' (did you mean mes-prix?); built in: pondere-v1, "
                "pondere-v2, v1, v1-serveur; recorded from price files: mes-prix; or set "
                "your prices: replay --formule mes-prx --tarifs FILE"]
        assert state(settings) == recorded


class TestUnknownModelsSQLite(UnknownModels):
    backend = "sqlite"


class TestUnknownModelsPostgres(UnknownModels):
    backend = "postgresql"


def test_a_store_without_a_projection_yet_names_only_the_built_in_formulas(
        tmp_path: Path) -> None:
    data = tmp_path / "data"
    events = tmp_path / "events.json"
    events.write_text(json.dumps(batch()), encoding="utf-8")
    ok(cli(data, None, "import", str(events)))
    done = subprocess.run([str(SCRIPT), "replay", "--data", str(data), "--formule",
                           "pondere_v2"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.startswith("Error: no formula 'pondere_v2' (did you mean pondere-v2?);")
    assert "recorded" not in done.stderr


def test_a_file_recorded_before_the_rule_is_still_taken_again(tmp_path: Path) -> None:
    # A formula recorded under ADR-0131 alone, from a file naming a local model without
    # the declaration: the same file given again resumes, as it did (ADR-0162).
    data = tmp_path / "data"
    events = tmp_path / "events.json"
    events.write_text(json.dumps(batch()), encoding="utf-8")
    ok(cli(data, None, "import", str(events)))
    old = tmp_path / "ancien.toml"
    old.write_text(PRICES.replace("claude-opus-41", "qwen-local"), encoding="utf-8")
    table = '{"modeles":{"claude-sonnet-4-5":{"cache_read":"0.3","cache_write":"3.75",' \
            '"input":"3","output":"15"},"qwen-local":{"cache_read":"1.5","cache_write":' \
            '"18.75","input":"15","output":"75"}},"reference":"claude-sonnet-4-5"}'
    with open_services(Settings(data=data), run_projections=False) as services:
        services.projection.view.record_formula(FormuleEnregistree(
            "ancien", hashlib.sha256(old.read_bytes()).hexdigest(), "ancien.toml", table,
            "2026-12-02T00:00:00.000Z"))
    done = cli(data, None, "replay", "--formule", "ancien", "--tarifs", str(old))
    assert done.returncode == 0, done.stderr
    assert "ancien: prices of ancien.toml" in done.stdout
    # Under another name it is a new formula, read under the rule.
    done = cli(data, None, "replay", "--formule", "ancien-2", "--tarifs", str(old))
    assert done.returncode == 1 and "modeles.qwen-local: unknown model" in done.stderr
