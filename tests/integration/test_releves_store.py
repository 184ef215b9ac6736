"""Relevés live in the store with everything else (SPEC, "Claude Code's own record...",
"Stored as events"; ADR-0172, ADR-0173): a replay under another formula keeps them, and
``compare`` reads a store that holds them; a view of an older schema is rebuilt with them;
``export`` then ``import`` carries them into another store, once; an import runs beside a
live server, which refuses a relevé POSTed as an event. Real SQLite files, the real
PostgreSQL, a real uvicorn."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from contextlib import closing
from dataclasses import replace
from pathlib import Path

import psycopg

from miam_economies import import_releves
from miam_economies.api.service.answers import bilan_answer
from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.replay import compare, replay
from miam_economies.api.service.settings import Settings
from miam_economies.api.service.transcripts import read_transcripts
from miam_economies.domain.acceptance import accept_batch
from miam_economies.domain.releves import Observation, merge_replies
from miam_economies.domain.releves_events import releve_payload
from tests.conftest import EXAMPLE_BATCH, LiveServer
from tests.releves_support import FIXTURES, SCRIPT, counts_of, releves_cli, replies_of

PLUGIN = EXAMPLE_BATCH["evenements"]


def loaded(settings: Settings) -> list[Observation]:
    """The contract's example batch and every fixture folder stored and folded; the
    replies the serving projection holds."""
    with open_services(settings, run_projections=False) as services:
        services.store.append(accept_batch(EXAMPLE_BATCH))
    import_releves([FIXTURES], settings.data, database_url=settings.database_url)
    replies = replies_of(settings)
    assert replies == sorted(merge_replies(read_transcripts([FIXTURES])).values(),
                             key=lambda reply: reply.key)
    return replies


def bilan(settings: Settings) -> dict[str, object]:
    with open_services(replace(settings, fuseau=None), run_projections=False) as services:
        services.runner.catch_up()
        return bilan_answer(services.bilan())


def cli(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    where = ["--data", str(settings.data)] + (
        [] if settings.database_url is None else ["--database-url", settings.database_url])
    return subprocess.run([str(SCRIPT), *args, *where], capture_output=True, text=True,
                          check=True, timeout=300)


class RelevesInTheStore:
    """The contract, run on each backend."""

    backend = "sqlite"

    def test_a_replay_under_another_formula_keeps_the_releves(
            self, settings: Settings) -> None:
        replies = loaded(settings)
        before = bilan(settings)
        done = replay(settings, "pondere-v1", page_size=7)
        assert done["active"] == done["projection"] != before["formule"]
        assert replies_of(settings) == replies
        v1 = f"bilan:{before['formule']}:{before['provenance']['fuseau']}"  # type: ignore[index]
        assert replies_of(settings, v1) == replies  # the one replaced keeps its own
        after = bilan(settings)
        assert after["formule"] == "pondere-v1"
        assert after["conservation"]["stockes"] == after["conservation"]["comptes"] == 28
        assert after["provenance"]["evenements"] == 28
        # compare folds the whole store, relevés included, and shows the plugin's figures.
        figures = compare(settings, ["v1", "pondere-v1"])["groupes"]["claude-code"]
        assert figures["claude-code"]["v1"]["net"] == 2900

    def test_an_older_view_is_rebuilt_with_the_releves(self, settings: Settings) -> None:
        replies = loaded(settings)
        if settings.database_url is None:
            with closing(sqlite3.connect(settings.data / "projections.sqlite")) as db:
                db.execute("PRAGMA user_version = 11")
                db.commit()
        else:
            with psycopg.connect(settings.database_url, autocommit=True) as pg:
                pg.execute("UPDATE bilan_schema SET version = 11")
        assert replies_of(settings) == replies
        assert bilan(settings)["conservation"]["comptes"] == 28

    def test_export_then_import_carries_the_releves_once(
            self, settings: Settings, tmp_path: Path) -> None:
        replies = loaded(settings)
        exported = cli(settings, "export").stdout
        lines = [json.loads(line) for line in exported.splitlines()]
        releves = [line for line in lines if line["type"] == "releve"]
        assert len(lines) == 28 and len(releves) == 26
        assert all(list(line)[-1] == "recu_le" for line in lines)
        first = {k: v for k, v in releves[0].items() if k != "recu_le"}
        assert first in [releve_payload(reply) for reply in replies]
        path = tmp_path / "economies.jsonl"
        path.write_text(exported, encoding="utf-8")
        target = Settings(data=tmp_path / "copy")
        done = json.loads(cli(target, "import", str(path), "--json").stdout)
        assert (done["recus"], done["doublons"], done["refusees"]) == (28, 0, [])
        assert replies_of(target) == replies
        assert cli(target, "export").stdout == exported  # each recu_le kept
        again = json.loads(cli(target, "import", str(path), "--json").stdout)
        assert (again["recus"], again["doublons"]) == (0, 28)
        # The transcripts themselves, imported into the copy: every relevé already there.
        counts = counts_of(releves_cli(target.data, None, FIXTURES, "--json"))
        assert (counts["nouvelles"], counts["doublons"]) == (0, 26)
        assert bilan(target)["conservation"] == bilan(settings)["conservation"]


class TestRelevesInTheStoreSQLite(RelevesInTheStore):
    backend = "sqlite"


class TestRelevesInTheStorePostgres(RelevesInTheStore):
    backend = "postgresql"


def test_imports_beside_a_live_server_store_each_releve_once(server: LiveServer) -> None:
    assert server.post(EXAMPLE_BATCH).json() == {"ok": True, "recus": 2, "doublons": 0}
    running = [subprocess.Popen([str(SCRIPT), "releves", "--data", str(server.data),
                                 str(FIXTURES), "--json"], stdout=subprocess.PIPE, text=True)
               for _ in range(2)]
    outputs = [json.loads(process.communicate(timeout=120)[0]) for process in running]
    assert all(process.returncode == 0 for process in running)
    # Whichever stored a relevé first, the other counted it a doublon: 26 in all.
    assert all(o["nouvelles"] + o["doublons"] == o["reponses"] == 26 for o in outputs)
    assert sum(o["nouvelles"] for o in outputs) == 26
    seen = server.bilan()
    assert seen["conservation"]["stockes"] == seen["conservation"]["comptes"] == 28
    assert seen["economies"]["claude-code"]["net"] == 2900
    assert server.stored_count() == 28


def test_the_plugin_cannot_post_a_releve(server: LiveServer) -> None:
    reply = next(iter(merge_replies(read_transcripts([FIXTURES / "repeated_lines"])).values()))
    event = {**releve_payload(reply), "id": "claude-code:r1", "date": reply.timestamp,
             "client": "claude-code"}
    refused = server.post({"evenements": [PLUGIN[0], event]})
    assert refused.status_code == 422
    assert {(e["index"], e["champ"]) for e in refused.json()["erreurs"]} == {(1, "type")}
    assert server.post({"evenements": [releve_payload(reply)]}).status_code == 422
    assert server.stored_count() == 0

