"""``miam-economies releves`` and ``import_releves`` (SPEC, "Claude Code's own record...",
"Import"; ADR-0174): each transcript fault's folder imported through the command and the
function gives the counts worked out by hand and folds to the replies worked out by hand;
a re-import stores nothing; a missing PATH is refused, naming it, before anything is
imported; an unreadable file is named and skipped, the rest imported, exit status 1; the
bilan's conservation counts the relevés. Real SQLite files and the real PostgreSQL."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from zoneinfo import ZoneInfoNotFoundError

import psycopg
import pytest

from miam_economies import import_releves
from miam_economies.api.service.answers import bilan_answer
from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.releves import RelevesImportes
from miam_economies.api.service.settings import Settings
from miam_economies.api.service.transcripts import TranscriptPathMissing
from miam_economies.domain.acceptance import accept_batch
from miam_economies.domain.releves import cost
from tests.conftest import EXAMPLE_BATCH
from tests.releves_support import (
    EXPECTED,
    FIXTURES,
    SCRIPT,
    counts_of,
    hand_counts,
    releves_cli,
    replies_of,
)


class RelevesImport:
    """The contract, run on each backend."""

    backend = "sqlite"

    @pytest.mark.parametrize("name", sorted(EXPECTED))
    def test_a_fixture_folder_imports_to_its_hand_counts_and_once(
            self, name: str, settings: Settings) -> None:
        data, url = settings.data, settings.database_url
        first = counts_of(releves_cli(data, url, FIXTURES / name, "--json"))
        assert first == hand_counts(name)
        # The function, over the same files: the counts a re-import gives, nothing stored.
        again = import_releves([FIXTURES / name], data, database_url=url)
        assert again == RelevesImportes(**{**first, "nouvelles": 0,
                                           "doublons": first["reponses"]})
        assert counts_of(releves_cli(data, url, FIXTURES / name, "--json")) == \
            again.as_dict()
        replies = replies_of(settings)
        want = EXPECTED[name].replies
        assert {r.key.value for r in replies} == set(want)
        for reply in replies:
            hand = want[reply.key.value]
            u = reply.usage
            assert (u.input_tokens, u.output_tokens, u.cache_read_input_tokens,
                    u.cache_creation_input_tokens, cost(reply)) == hand[:5]
            assert (reply.stop_reason, reply.agent_id, reply.is_sidechain, reply.model) == (
                hand.stop_reason, hand.agent, hand.sidechain, hand.model)

    def test_the_whole_folder_adds_up_and_says_so_in_words(self, settings: Settings) -> None:
        done = releves_cli(settings.data, settings.database_url, FIXTURES)
        assert done.stdout == (
            "files 14, lines 90, replies 26, new relevés 26, doublons 0, incomplete "
            "replies 1, ignored lines 47\n")
        assert done.stderr == ""
        assert hand_counts(*EXPECTED) == {
            "fichiers": 14, "lignes": 90, "reponses": 26, "nouvelles": 26, "doublons": 0,
            "incompletes": 1, "ignorees": 47}
        # Folder by folder afterwards: every reply already stored.
        each = import_releves(sorted(FIXTURES / name for name in EXPECTED), settings.data,
                              database_url=settings.database_url)
        assert (each.reponses, each.nouvelles, each.doublons) == (26, 0, 26)
        assert len(replies_of(settings)) == 26

    def test_a_missing_path_is_named_and_nothing_is_imported(
            self, settings: Settings, tmp_path: Path) -> None:
        missing = tmp_path / "no-such-folder"
        done = releves_cli(settings.data, settings.database_url, FIXTURES, missing,
                           check=False)
        assert done.returncode == 2  # a usage error, as every command's
        assert str(missing) in done.stderr and done.stdout == ""
        with pytest.raises(TranscriptPathMissing) as refused:
            import_releves([FIXTURES, missing], settings.data,
                           database_url=settings.database_url)
        assert refused.value.path == str(missing) and str(missing) in str(refused.value)
        if settings.database_url is None:
            assert not settings.data.exists()  # not even a store created
        else:
            with psycopg.connect(settings.database_url) as db:
                row = db.execute("SELECT to_regclass('economies_events')").fetchone()
            assert row == (None,)

    def test_an_unreadable_file_is_named_and_skipped_the_rest_imported(
            self, settings: Settings, tmp_path: Path) -> None:
        folder = tmp_path / "projects"
        shutil.copytree(FIXTURES / "subagent_file", folder)
        fifo = folder / "-home-dev-shop" / "stuck.jsonl"
        os.mkfifo(fifo)  # not a regular file: never opened (it would block)
        done = releves_cli(settings.data, settings.database_url, folder, "--json",
                           check=False)
        assert done.returncode == 1
        assert done.stderr == f"unreadable, skipped: {fifo}: not a regular file\n"
        assert counts_of(done) == hand_counts("subagent_file")
        result = import_releves([folder], settings.data, database_url=settings.database_url)
        assert [u.path for u in result.illisibles] == [str(fifo)]
        assert (result.nouvelles, result.doublons) == (0, 5)

    def test_the_conservation_counts_the_releves_and_the_figures_ignore_them(
            self, settings: Settings) -> None:
        with open_services(settings, run_projections=False) as services:
            services.store.append(accept_batch(EXAMPLE_BATCH))
            services.runner.catch_up()
            before = services.bilan(None, None, None, None)
        import_releves([FIXTURES], settings.data, database_url=settings.database_url)
        with open_services(settings, run_projections=False) as services:
            services.runner.catch_up()
            after = services.bilan(None, None, None, None)
        assert after.snapshot.clients == before.snapshot.clients  # no figure moves
        assert (after.stockes, after.snapshot.evenements, after.snapshot.releves) == (
            28, 28, 26)
        conservation = bilan_answer(after)["conservation"]
        assert conservation["stockes"] == conservation["comptes"] == 28
        assert conservation["ecartes"] == 0


class TestRelevesImportSQLite(RelevesImport):
    backend = "sqlite"


class TestRelevesImportPostgres(RelevesImport):
    backend = "postgresql"


def test_without_path_the_claude_folders_are_read(tmp_path: Path) -> None:
    config = tmp_path / "claude"
    shutil.copytree(FIXTURES / "repeated_lines", config / "projects")
    done = import_releves(data=tmp_path / "data", environ={"CLAUDE_CONFIG_DIR": str(config)})
    assert done.as_dict() == hand_counts("repeated_lines")
    home = {**os.environ, "HOME": str(tmp_path / "home")}
    home.pop("CLAUDE_CONFIG_DIR", None)
    nothing = releves_cli(tmp_path / "data", None, "--json", env=home)
    assert counts_of(nothing) == dict.fromkeys(hand_counts(), 0)
    assert "no Claude Code projects folder with a *.jsonl file was found" in nothing.stderr
    read = releves_cli(tmp_path / "data", None, "--json",
                       env={**home, "CLAUDE_CONFIG_DIR": f" {tmp_path / 'x'}, {config}"})
    assert counts_of(read) == {**hand_counts("repeated_lines"), "nouvelles": 0,
                               "doublons": 3}


def test_the_embedding_pages_import_runs_as_printed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = Path(__file__).parents[2] / "docs" / "embedding.md"
    (block,) = [code for code in re.findall(r"```python\n(.*?)```",
                                            page.read_text(encoding="utf-8"), re.S)
                if "import_releves" in code]
    shutil.copytree(FIXTURES / "placeholder", tmp_path / "home" / ".claude" / "projects")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.chdir(tmp_path)  # logs/mcp under the working directory, as MIAM's
    names: dict[str, object] = {}
    exec(compile(block, str(page), "exec"), names)  # the page's own code, as printed
    assert names["counts"] == {**hand_counts("placeholder"), "nouvelles": 0,
                               "doublons": 2}
    assert names["skipped"] == []
    assert len(replies_of(Settings(data=tmp_path / "logs" / "mcp"))) == 2


def test_a_new_directory_takes_the_zone_the_next_command_reads(tmp_path: Path) -> None:
    # As import's (the independent audit of issue 30): the relevés' import builds a new
    # bilan in MIAM_ECONOMIES_TZ's zone, so the next read does not rebuild it; the
    # function takes fuseau= and refuses an unknown zone before reading a file.
    data = tmp_path / "data"
    env = {**os.environ, "MIAM_ECONOMIES_TZ": "Pacific/Chatham"}
    releves_cli(data, None, FIXTURES / "subagent_file", env=env)
    read = subprocess.run([str(SCRIPT), "bilan", "--data", str(data), "--json"],
                          capture_output=True, text=True, check=True, env=env, timeout=300)
    assert "moves to zone" not in read.stderr
    assert json.loads(read.stdout)["provenance"]["fuseau"] == "Pacific/Chatham"
    with pytest.raises(ZoneInfoNotFoundError):
        import_releves([FIXTURES / "subagent_file"], tmp_path / "other", fuseau="Mars/Olympus")
    assert not (tmp_path / "other").exists()
    bad = releves_cli(data, None, "--fuseau", "Mars/Olympus", FIXTURES / "subagent_file",
                      check=False)
    assert bad.returncode == 2 and "--fuseau" in bad.stderr


def test_the_package_names_what_import_releves_returns_and_raises() -> None:
    import miam_economies

    assert miam_economies.RelevesImportes is RelevesImportes
    assert miam_economies.TranscriptPathMissing is TranscriptPathMissing
    assert {"RelevesImportes", "TranscriptPathMissing"} <= set(miam_economies.__all__)
