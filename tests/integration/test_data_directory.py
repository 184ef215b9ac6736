"""The journal that was not named explicitly is the data directory's, wherever the directory
now is (issue 21.2; ADR-0103): a moved directory joins its own journal (on both backends:
on PostgreSQL the directory holds the journal, the database stays), a copied one its own
copy, not the original's; an explicitly named journal that no longer exists is reported
in ``provenance.journal.erreur`` and on the command line."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.reading import read_bilan
from miam_economies.api.service.settings import Settings
from miam_economies.domain.acceptance import accept_batch
from tests.conftest import EXAMPLE_BATCH

DELEGATION = EXAMPLE_BATCH["evenements"][0]
SCRIPT = Path(sys.executable).with_name("miam-economies")


def delegation(demande: str, evites: int) -> dict[str, Any]:
    estimation = {**DELEGATION["estimation"], "evites": evites}
    return {**DELEGATION, "id": f"claude-code:{demande}", "demande_id": demande,
            "estimation": estimation}


def append(settings: Settings, *events: dict[str, Any]) -> None:
    with open_services(settings, run_projections=False) as services:
        services.store.append(accept_batch({"evenements": list(events)}))


def journal_line(data: Path, demande: str, preset: str) -> None:
    with (data / "delegations.jsonl").open("a") as f:
        f.write(json.dumps({"demande_id": demande, "preset": preset}) + "\n")


def presets(data: Path, database_url: str | None) -> dict[str, int]:
    bilan = read_bilan(data, par="preset", database_url=database_url)
    return {preset: clients["claude-code"]["evites"]
            for preset, clients in bilan["groupes"].items()}


class DataDirectoryContract:
    """A data directory moved, on one backend."""

    def test_a_moved_data_directory_joins_its_own_journal(self, settings: Settings,
                                                          tmp_path: Path) -> None:
        url = settings.database_url
        append(settings, delegation("dem-1", 100))
        journal_line(settings.data, "dem-1", "rapide")
        assert presets(settings.data, url) == {"rapide": 100}
        moved = tmp_path / "moved"
        settings.data.rename(moved)
        append(Settings(data=moved, database_url=url), delegation("dem-2", 10))
        journal_line(moved, "dem-2", "precis")
        assert presets(moved, url) == {"rapide": 100, "precis": 10}
        # Read again: the journal's lines are joined once, nothing counts twice.
        assert presets(moved, url) == {"rapide": 100, "precis": 10}

    def test_an_explicit_journal_that_is_gone_is_reported(self, settings: Settings,
                                                          tmp_path: Path) -> None:
        url = settings.database_url
        named = tmp_path / "miam" / "delegations.jsonl"
        named.parent.mkdir()
        named.write_text(json.dumps({"demande_id": "dem-1", "preset": "rapide"}) + "\n")
        append(replace(settings, journal=named), delegation("dem-1", 100))
        assert "erreur" not in read_bilan(settings.data, journal=named,
                                          database_url=url)["provenance"]["journal"]
        named.unlink()
        erreur = read_bilan(settings.data, database_url=url)["provenance"]["journal"]["erreur"]
        assert str(named) in erreur
        where = ["--data", str(settings.data)] + ([] if url is None else ["--database-url", url])
        table = subprocess.run([str(SCRIPT), "bilan", *where], capture_output=True, text=True)
        assert table.returncode == 0, table.stderr
        assert str(named) in table.stdout and str(named) in table.stderr


class TestDataDirectorySQLite(DataDirectoryContract):
    backend = "sqlite"

    def test_a_copied_data_directory_reads_its_own_journal(self, settings: Settings,
                                                           tmp_path: Path) -> None:
        append(settings, delegation("dem-1", 100))
        journal_line(settings.data, "dem-1", "rapide")
        assert presets(settings.data, None) == {"rapide": 100}
        copy = tmp_path / "copy"
        shutil.copytree(settings.data, copy)
        journal_line(settings.data, "dem-2", "original")  # the original's, not the copy's
        journal_line(copy, "dem-2", "copie")
        append(Settings(data=copy), delegation("dem-2", 10))
        assert presets(copy, None) == {"rapide": 100, "copie": 10}
        assert presets(settings.data, None) == {"rapide": 100}

    def test_a_journal_recorded_by_an_earlier_release_follows_the_directory(
            self, settings: Settings, tmp_path: Path) -> None:
        # An earlier release recorded the default journal by its absolute path.
        append(settings, delegation("dem-1", 100))
        journal_line(settings.data, "dem-1", "rapide")
        assert presets(settings.data, None) == {"rapide": 100}
        old = str((settings.data / "delegations.jsonl").resolve())
        with sqlite3.connect(settings.projections_path) as db:
            db.execute("UPDATE bilan_state SET journal = ?", (old,))
            for table in ("journal_suivi", "journal_demandes", "journal_valeurs"):
                db.execute(f"UPDATE {table} SET chemin = ?", (old,))
        moved = tmp_path / "moved"
        settings.data.rename(moved)
        journal_line(moved, "dem-2", "precis")
        append(Settings(data=moved), delegation("dem-2", 10))
        assert presets(moved, None) == {"rapide": 100, "precis": 10}
        bilan = read_bilan(moved)
        assert bilan["provenance"]["journal"]["lignes"] == 2


class TestDataDirectoryPostgres(DataDirectoryContract):
    backend = "postgresql"
