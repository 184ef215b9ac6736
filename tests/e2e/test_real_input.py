"""The main job on real-sized input: a 10,000+ event corpus posted twice over HTTP.

Issue 2, "Done when": the second pass is shuffled and cut into other batches; every
response is 200; Σ recus = distinct ids; the bilan equals a recomputation from the corpus
written apart from ``domain/`` (``tests.corpus``). Issue 3, "Done when": with MIAM's
journal beside it, every breakdown (day, model, demande, preset, format) equals the same
independent recomputation, days sum to clients, and conservation holds.
"""

from __future__ import annotations

import random
import sqlite3
from collections import defaultdict
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tests.conftest import LiveServer
from tests.corpus import (
    batches,
    expected_bilan,
    expected_breakdowns,
    generate,
    journal_lines,
    with_derived,
)

FUSEAU = "Pacific/Chatham"  # +12:45/+13:45: days differ from UTC's for many events


def cells(groupes: dict[str, dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """The four sums and the two derived figures of every cell (drops per-model extras)."""
    keys = ("delegations", "evites", "pilotage", "corrections", "net", "taux_reprise")
    return {g: {c: {k: row[k] for k in keys} for c, row in clients.items()}
            for g, clients in groupes.items()}


def derived(expected: dict[str, dict[str, dict[str, int]]]) -> dict[str, dict[str, Any]]:
    return {g: {c: with_derived(row) for c, row in clients.items()}
            for g, clients in expected.items()}


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A server that received the corpus twice, with the journal written half before and
    half after the events; yields (server, corpus, journal, answers)."""
    data = tmp_path_factory.mktemp("e2e") / "data"
    data.mkdir()
    server = LiveServer(data, env={"MIAM_ECONOMIES_TZ": FUSEAU})
    corpus = generate(10_000, seed=2026)
    journal = journal_lines(corpus, seed=5)
    half = len(journal) // 2
    (data / "delegations.jsonl").write_text("\n".join(journal[:half]) + "\n")
    server.start()
    try:
        rng = random.Random(7)
        second = corpus[:]
        rng.shuffle(second)
        answers = []
        for batch in batches(corpus, rng) + batches(second, rng):
            response = server.post({"evenements": batch})
            answers.append((response.status_code, response.json(), len(batch)))
        with (data / "delegations.jsonl").open("a") as f:  # MIAM appends later lines
            f.write("\n".join(journal[half:]) + "\n")
        yield server, corpus, journal, answers
    finally:
        server.stop()
        server.client.close()


def test_corpus_is_realistic(loaded: Any) -> None:
    _, corpus, _, _ = loaded
    kinds = {e["type"] for e in corpus}
    outils = {e["outil"] for e in corpus if e["type"] == "correction"}
    assert len(corpus) >= 10_000 and kinds == {"delegation", "pilotage", "correction"}
    assert outils == {"Read", "Edit", "Write", "NotebookEdit", "Bash"}
    assert any(e["type"] == "pilotage" and len(e["demande_ids"]) > 1 for e in corpus)
    assert {e.get("agent_id") is None for e in corpus if e["type"] == "delegation"} == {
        True, False}


def test_corpus_posted_twice_in_any_order_gives_the_independent_bilan(loaded: Any) -> None:
    server, corpus, _, answers = loaded
    assert all(status == 200 for status, _, _ in answers)
    assert all(a["recus"] + a["doublons"] == size for _, a, size in answers)
    recus = sum(a["recus"] for _, a, _ in answers)
    assert recus == len({e["id"] for e in corpus})
    assert sum(a["doublons"] for _, a, _ in answers) == len(corpus)
    bilan = server.bilan()
    assert {k: bilan[k] for k in ("economies", "total")} == expected_bilan(corpus)
    assert bilan["provenance"]["evenements"] == recus


def test_conservation_holds_against_the_store_itself(loaded: Any) -> None:
    server, corpus, _, _ = loaded
    bilan = server.bilan()
    with sqlite3.connect(server.data / "economies.sqlite") as db:
        stored = db.execute("SELECT count(*) FROM stored_events").fetchone()[0]
    conservation = bilan["conservation"]
    assert conservation["stockes"] == conservation["comptes"] == stored == len(corpus)
    # The corpus has no orphan: every pilotage and correction found its delegation.
    assert conservation["en_attente"] == 0


def test_every_breakdown_equals_the_independent_recomputation(loaded: Any) -> None:
    server, corpus, journal, _ = loaded
    expected = expected_breakdowns(corpus, journal, ZoneInfo(FUSEAU))
    for par in ("jour", "demande", "preset", "format"):
        got = server.client.get("/economies/bilan", params={"par": par, "attendre": "1"})
        assert got.status_code == 200
        body = got.json()
        assert body["par"] == par and body["provenance"]["fuseau"] == FUSEAU
        assert cells(body["groupes"]) == derived(expected[par]), par
    modeles = server.client.get("/economies/bilan", params={"par": "modele"}).json()["groupes"]
    flat = {m: {c: {"tours": row["tours"], "cout": row["pilotage"], **row["usage"]}
                for c, row in clients.items()} for m, clients in modeles.items()}
    assert flat == expected["modele"]


def test_days_and_demandes_add_up_to_the_clients(loaded: Any) -> None:
    server, _, _, _ = loaded
    bilan = server.bilan()
    for par in ("jour", "demande", "preset"):
        groupes = server.client.get("/economies/bilan", params={"par": par}).json()["groupes"]
        sums: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for clients in groupes.values():
            for client, row in clients.items():
                for k in ("delegations", "evites", "pilotage", "corrections"):
                    sums[client][k] += row[k]
        for client, figures in bilan["economies"].items():
            assert {k: sums[client][k] for k in sums[client]} == {
                k: figures[k] for k in ("delegations", "evites", "pilotage", "corrections")
            }, (par, client)


def test_the_journal_is_joined_with_its_counts(loaded: Any) -> None:
    server, _, journal, _ = loaded
    counts = server.bilan()["provenance"]["journal"]
    malformed = sum(1 for line in journal if line.startswith("{not"))
    without_id = sum(1 for line in journal if '"demande_id"' not in line) - malformed
    assert counts["malformees"] == malformed > 0
    assert counts["sans_demande"] == without_id > 0
    assert counts["lignes"] == len(journal) - malformed - without_id


def test_one_demande_reads_like_its_recomputation(loaded: Any) -> None:
    server, corpus, journal, _ = loaded
    expected = expected_breakdowns(corpus, journal, ZoneInfo(FUSEAU))["demande"]
    for demande_id in random.Random(3).sample(sorted(expected), 25):
        (client, row), = expected[demande_id].items()
        got = server.client.get(f"/economies/demandes/{demande_id}").json()
        assert got["client"] == client
        assert got["delegation"] is not None
        assert got["evites"] == row["evites"]
        assert got["pilotage"]["part"] == row["pilotage"]
        assert got["corrections"]["cout"] == row["corrections"]
        assert sum(o["cout"] for o in got["corrections"]["par_outil"].values()) == \
            row["corrections"]
        assert (got["net"], got["taux_reprise"]) == (
            with_derived(row)["net"], with_derived(row)["taux_reprise"])


def test_export_then_import_round_trips_ids_recu_le_and_the_bilan(
        loaded: Any, tmp_path: Path) -> None:
    # Issue 8, "Done when": export -> import into a fresh store keeps every id and
    # recu_le, and the fresh store's bilan (and breakdowns) equal the server's.
    import json
    import shutil
    import subprocess
    import sys

    server, corpus, _, _ = loaded
    script = str(Path(sys.executable).with_name("miam-economies"))

    def cli(*args: str) -> str:
        return subprocess.run([script, *args], check=True, capture_output=True, text=True,
                              timeout=300).stdout

    exported = tmp_path / "economies.jsonl"
    cli("export", "--data", str(server.data), "--out", str(exported))
    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    assert sorted(e["id"] for e in lines) == sorted(e["id"] for e in corpus)
    assert all(e["recu_le"].endswith("Z") for e in lines)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    shutil.copy(server.data / "delegations.jsonl", fresh / "delegations.jsonl")
    first = cli("import", "--data", str(fresh), str(exported))
    assert f"recus {len(corpus):,}, doublons 0," in first
    second = cli("import", "--data", str(fresh), str(exported))
    assert f"recus 0, doublons {len(corpus):,}," in second  # idempotent
    assert cli("export", "--data", str(fresh)) == exported.read_text()  # ids, recu_le, order
    for par in (None, "jour", "preset", "modele"):
        options = ["--par", par] if par else []
        copied = json.loads(cli("bilan", "--data", str(fresh), "--fuseau", FUSEAU, "--json",
                                *options))
        original = server.client.get("/economies/bilan", params={
            "attendre": "1", **({"par": par} if par else {})}).json()
        keys = ("economies", "total", "formule") + (("groupes",) if par else ())
        assert {k: copied[k] for k in keys} == {k: original[k] for k in keys}, par
    assert copied["conservation"] == original["conservation"]


def test_migrate_to_postgres_round_trips_every_event_and_the_bilan(
        loaded: Any, tmp_path: Path) -> None:
    # Issue 7, "Done when": migrate copies the store (ids, payloads, recu_le, order),
    # a second run copies nothing, and the target's bilan equals the source's.
    import json
    import subprocess
    import sys

    from tests.conftest import fresh_postgres

    server, corpus, _, _ = loaded
    script = str(Path(sys.executable).with_name("miam-economies"))

    def cli(*args: str) -> str:
        done = subprocess.run([script, *args], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert "\x1b[" not in done.stderr  # no progress bar off a terminal
        return done.stdout

    source = f"sqlite:///{server.data / 'economies.sqlite'}"
    with fresh_postgres() as target:
        first = cli("migrate", "--data", str(server.data), "--from", source, "--to", target)
        assert f"copied {len(corpus):,} events (0 already there)" in first
        assert "its bilan equal to the source's" in first
        again = cli("migrate", "--data", str(server.data), "--from", source, "--to", target)
        assert f"copied 0 events ({len(corpus):,} already there)" in again
        # Every stored event, conflicts included, byte for byte and in the same order.
        exported = cli("export", "--conflits", "--data", str(server.data))
        assert cli("export", "--conflits", "--data", str(server.data),
                   "--database-url", target) == exported
        for par in (None, "jour", "preset", "modele", "demande"):
            options = ["--par", par] if par else []
            moved = json.loads(cli("bilan", "--data", str(server.data), "--database-url",
                                   target, "--json", *options))
            original = server.client.get("/economies/bilan", params={
                "attendre": "1", **({"par": par} if par else {})}).json()
            keys = ("economies", "total", "formule", "conservation") + (
                ("groupes",) if par else ())
            assert {k: moved[k] for k in keys} == {k: original[k] for k in keys}, par
            assert moved["provenance"]["fuseau"] == FUSEAU
        # The target then takes traffic of its own: migrating again still works, and says
        # why it cannot compare the bilans any more.
        from tests.conftest import EXAMPLE_CORRECTION

        own = tmp_path / "own.jsonl"
        own.write_text(json.dumps(EXAMPLE_CORRECTION) + "\n")
        cli("import", "--data", str(server.data), "--database-url", target, str(own))
        later = cli("migrate", "--data", str(server.data), "--from", source, "--to", target)
        assert "copied 0 events" in later and "1 events of its own" in later


def test_replay_under_v1_reproduces_the_live_bilan_and_the_server_follows(
        loaded: Any) -> None:
    # Last in this module: it switches the server's projection away and back.
    import subprocess
    import sys
    from pathlib import Path

    server, _, _, _ = loaded
    pars = ("jour", "modele", "demande", "preset", "format")
    before = {par: server.client.get("/economies/bilan", params={"par": par,
                                                                 "attendre": "1"}).json()
              for par in pars}
    script = Path(sys.executable).with_name("miam-economies")

    def replay_to(zone: str) -> None:
        done = subprocess.run([str(script), "replay", "--data", str(server.data),
                               "--formule", "v1", "--fuseau", zone],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert server.bilan()["provenance"]["fuseau"] == zone

    replay_to("UTC")  # a new projection, folded from scratch while the server serves
    for par in pars:
        after = server.client.get("/economies/bilan", params={"par": par}).json()
        keys = ("economies", "total", "conservation", "formule")
        keys += () if par == "jour" else ("groupes",)  # days move with the zone
        for key in keys:
            assert after[key] == before[par][key], (par, key)
    replay_to(FUSEAU)  # back to the first projection: it resumes, nothing lost
    for par in pars:
        after = server.client.get("/economies/bilan", params={"par": par}).json()
        assert after["groupes"] == before[par]["groupes"], par
