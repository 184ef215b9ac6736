"""Breakdowns, demandes, the journal join, zones and MIAM's read function (issue 3)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from miam_economies.api.service.answers import bilan_answer
from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.reading import net_du_jour, read_bilan
from miam_economies.api.service.services import Services
from miam_economies.api.service.settings import Settings
from miam_economies.domain.acceptance import accept_batch
from miam_economies.projections.view import ProjectionMismatch
from tests.conftest import EXAMPLE_BATCH, EXAMPLE_CORRECTION, TOKEN, LiveServer

DELEGATION, PILOTAGE = EXAMPLE_BATCH["evenements"]
DEMANDE = DELEGATION["demande_id"]
SCRIPT = Path(sys.executable).with_name("miam-economies")


def append(services: Services, *events: dict[str, Any]) -> None:
    services.store.append(accept_batch({"evenements": list(events)}))
    services.runner.catch_up()


def test_pilotage_and_correction_wait_for_their_delegation(services: Services) -> None:
    append(services, PILOTAGE, EXAMPLE_CORRECTION)
    parked = bilan_answer(services.bilan())
    assert parked["conservation"] == {"stockes": 2, "comptes": 2, "en_attente": 2,
                                      "ecartes": 0, "meme_source": True}
    waiting = services.demande(DEMANDE)
    assert waiting is not None and waiting["delegation"] is None
    assert (waiting["pilotage"]["part"], waiting["net"], waiting["taux_reprise"]) == (
        2000, -2490, None)

    append(services, DELEGATION)
    assert bilan_answer(services.bilan())["conservation"] == {
        "stockes": 3, "comptes": 3, "en_attente": 0, "ecartes": 0, "meme_source": True}
    joined = services.demande(DEMANDE)
    assert joined is not None
    assert joined["delegation"]["agent_id"] == "a1"
    assert joined["delegation"]["estimation"]["evites"] == 4900
    assert (joined["evites"], joined["net"], joined["taux_reprise"]) == (4900, 2410, 0.1)
    assert joined["corrections"] == {"cout": 490, "nombre": 1,
                                     "par_outil": {"Edit": {"cout": 490, "nombre": 1}}}


def test_a_pilotage_is_split_over_its_demandes_in_exact_integers(services: Services) -> None:
    pilotage = {**PILOTAGE, "demande_ids": ["dem-c", "dem-a", "dem-b"], "cout": 1000}
    append(services, pilotage)
    parts = {d: services.demande(d)["pilotage"]["part"]  # type: ignore[index]
             for d in ("dem-a", "dem-b", "dem-c")}
    assert parts == {"dem-a": 334, "dem-b": 333, "dem-c": 333}
    economies = bilan_answer(services.bilan())["economies"]
    assert economies["claude-code"]["pilotage"] == sum(parts.values())


def test_days_are_cut_in_the_configured_zone(tmp_path: Path) -> None:
    late = {**DELEGATION, "date": "2026-10-30T23:30:00.000Z"}
    same_instant = {**PILOTAGE, "date": "2026-10-31T00:30:00.000+01:00"}
    settings = Settings(data=tmp_path / "data", token=TOKEN, fuseau="Europe/Paris")
    with open_services(settings, run_projections=False) as services:
        append(services, late, same_instant)
        groupes = bilan_answer(services.bilan("jour"))["groupes"]
        assert list(groupes) == ["2026-10-31"]  # 00:30 in Paris: the next day
        assert bilan_answer(services.bilan("jour", depuis="2026-10-30", jusqu_au="2026-10-30"))[
            "groupes"] == {}
    with pytest.raises(ProjectionMismatch), \
            open_services(Settings(data=settings.data, token=TOKEN, fuseau="UTC")):
        pass
    with open_services(Settings(data=settings.data, token=TOKEN)) as unset:
        assert bilan_answer(unset.bilan())["provenance"]["fuseau"] == "Europe/Paris"


def test_models_count_turns_usage_and_cout(services: Services) -> None:
    second = {**PILOTAGE, "id": "p2", "turn_id": "t2", "cout": 10,
              "usage": {**PILOTAGE["usage"], "input_tokens": 5}}
    append(services, PILOTAGE, second)
    cell = bilan_answer(services.bilan("modele"))["groupes"]["claude-haiku-5-5"]["claude-code"]
    assert cell["tours"] == 2
    assert (cell["pilotage"], cell["net"], cell["delegations"]) == (2010, -2010, 0)
    assert cell["usage"] == {"input_tokens": 805, "output_tokens": 400,
                             "cache_read_input_tokens": 20000,
                             "cache_creation_input_tokens": 0}


def test_journal_fields_group_the_demandes_whenever_lines_arrive(services: Services) -> None:
    other = {**DELEGATION, "id": "claude-code:dem-2", "demande_id": "dem-2"}
    append(services, DELEGATION, other, PILOTAGE)
    journal = services.settings.journal_path
    journal.write_text(json.dumps({"demande_id": DEMANDE, "preset": "rapide", "n": 2}) + "\n"
                       + "{broken\n" + json.dumps({"preset": "sans id"}) + "\n")
    services.runner.catch_up()
    groupes = bilan_answer(services.bilan("preset"))["groupes"]
    assert groupes["rapide"]["claude-code"]["net"] == 2900
    assert groupes["(inconnu)"]["claude-code"]["evites"] == 4900  # dem-2, not in the journal
    assert bilan_answer(services.bilan("n"))["groupes"]["2"]["claude-code"]["delegations"] == 1
    with journal.open("a") as f:  # appended later, and a second line for DEMANDE: ignored
        f.write(json.dumps({"demande_id": "dem-2", "preset": "precis"}) + "\n")
        f.write(json.dumps({"demande_id": DEMANDE, "preset": "autre"}) + "\n")
        f.write('{"demande_id": "dem-3", "preset": "partial line still being wri')
    services.runner.catch_up()
    bilan = bilan_answer(services.bilan("preset"))
    assert set(bilan["groupes"]) == {"rapide", "precis"}
    assert bilan["provenance"]["journal"] == {"lignes": 3, "malformees": 1, "sans_demande": 1,
                                                 "valeurs_ecartees": 0}


def test_a_journal_field_named_like_a_breakdown_is_reachable_with_a_prefix(
        services: Services) -> None:
    append(services, DELEGATION)
    services.settings.journal_path.write_text(
        json.dumps({"demande_id": DEMANDE, "modele": "qwen-local"}) + "\n")
    services.runner.catch_up()
    assert list(bilan_answer(services.bilan("journal.modele"))["groupes"]) == ["qwen-local"]
    assert bilan_answer(services.bilan("modele"))["groupes"] == {}  # pilotage models: none yet


def test_demandes_endpoint_and_breakdowns_over_http(server: LiveServer) -> None:
    server.post(EXAMPLE_BATCH)
    found = server.client.get(f"/economies/demandes/{DEMANDE}", params={"attendre": "1"})
    assert found.status_code == 200 and found.json()["net"] == 2900
    missing = server.client.get("/economies/demandes/dem-never")
    assert missing.status_code == 404 and missing.json()["ok"] is False
    day = server.client.get("/economies/bilan", params={"par": "jour", "attendre": "1",
                                                        "depuis": "2026-10-30",
                                                        "jusqu_au": "2026-10-30"})
    assert day.json()["par"] == "jour" and list(day.json()["groupes"]) == ["2026-10-30"]
    for bad in ("2026-13-01", "30/10/2026", ""):
        refused = server.client.get("/economies/bilan", params={"par": "jour", "depuis": bad})
        assert refused.status_code == 400


def test_serve_refuses_a_zone_other_than_the_projections(tmp_path: Path) -> None:
    settings = Settings(data=tmp_path / "data", token=TOKEN, fuseau="Asia/Tokyo")
    with open_services(settings, run_projections=False):
        pass
    done = subprocess.run([str(SCRIPT), "serve", "--data", str(settings.data), "--fuseau",
                           "UTC", "--port", "0"], capture_output=True, text=True,
                          env={"MIAM_ECONOMIES_TOKEN": TOKEN, "PATH": ""}, timeout=30)
    assert done.returncode != 0
    assert "Asia/Tokyo" in done.stderr


def test_the_cli_prints_a_breakdown(server: LiveServer) -> None:
    server.post(EXAMPLE_BATCH)
    server.bilan()
    out = subprocess.run([str(SCRIPT), "bilan", "--data", str(server.data), "--par", "modele"],
                         check=True, capture_output=True, text=True).stdout
    assert "claude-haiku-5-5" in out and " 2,000 " in out  # its pilotage (a model's column)
    as_json = json.loads(subprocess.run(
        [str(SCRIPT), "bilan", "--data", str(server.data), "--par", "jour", "--json"],
        check=True, capture_output=True, text=True).stdout)
    assert as_json["groupes"]["2026-10-30"]["claude-code"]["net"] == 2900
    bad = subprocess.run([str(SCRIPT), "bilan", "--data", str(server.data), "--par", "jour",
                          "--depuis", "hier"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--depuis" in bad.stderr


def test_miam_reads_the_bilan_and_todays_net_without_a_server(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert read_bilan(data)["economies"] == {}
    assert not data.exists()
    today = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    batch = copy.deepcopy(EXAMPLE_BATCH)
    for e in batch["evenements"]:
        e["date"] = today
    with open_services(Settings(data=data, token=TOKEN, fuseau="UTC"),
                       run_projections=False) as services:
        services.store.append(accept_batch(batch))  # stored, not folded yet
    assert read_bilan(data)["economies"]["claude-code"]["net"] == 2900
    assert read_bilan(data, par="jour")["groupes"][today[:10]]["claude-code"]["net"] == 2900
    assert net_du_jour("claude-code", data) == 2900
    assert net_du_jour("someone-else", data) == 0


def test_a_journal_line_longer_than_the_read_limit_is_skipped_not_stuck(
        services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    from miam_economies.projections import journal

    monkeypatch.setattr(journal, "READ_LIMIT", 64)  # a small limit, same logic
    append(services, DELEGATION)
    services.settings.journal_path.write_text(
        json.dumps({"demande_id": "dem-x", "blob": "y" * 500}) + "\n"
        + json.dumps({"demande_id": DEMANDE, "preset": "rapide"}) + "\n")
    services.runner.catch_up()
    bilan = bilan_answer(services.bilan("preset"))
    assert list(bilan["groupes"]) == ["rapide"]
    assert bilan["provenance"]["journal"] == {"lignes": 1, "malformees": 1, "sans_demande": 0,
                                                 "valeurs_ecartees": 0}


def test_en_attente_counts_events_not_the_demandes_they_reach(services: Services) -> None:
    pilotage = {**PILOTAGE, "demande_ids": ["dem-a", "dem-b", "dem-b", "dem-c"]}
    append(services, pilotage, EXAMPLE_CORRECTION)
    assert bilan_answer(services.bilan())["conservation"]["en_attente"] == 2
    append(services, {**DELEGATION, "id": "d-a", "demande_id": "dem-a"},
           {**DELEGATION, "id": "d-b", "demande_id": "dem-b"})
    assert bilan_answer(services.bilan())["conservation"]["en_attente"] == 2  # dem-c still missing
    append(services, {**DELEGATION, "id": "d-c", "demande_id": "dem-c"})
    assert bilan_answer(services.bilan())["conservation"]["en_attente"] == 1  # only the correction
    append(services, DELEGATION)
    assert bilan_answer(services.bilan())["conservation"]["en_attente"] == 0


def test_the_conservation_check_shows_a_page_folded_twice(services: Services) -> None:
    append(services, DELEGATION, PILOTAGE)
    ok = bilan_answer(services.bilan())["conservation"]
    assert ok["stockes"] == ok["comptes"] == 2
    # Fold the same page again, bypassing the runner's compare-and-set (the defect
    # ADR-0007 closes): the conservation figures must disagree.
    events = [value for _, value in services.store.read(1, 10)]
    services.projection.process_page(events, last_id=2, previous=2)
    broken = bilan_answer(services.bilan())["conservation"]
    assert (broken["stockes"], broken["comptes"]) == (2, 4)


def test_a_breakdown_and_the_totals_come_from_one_read(services: Services) -> None:
    import threading

    from tests.corpus import generate

    corpus = generate(3_000, seed=11)
    done = threading.Event()

    def write() -> None:
        for i in range(0, len(corpus), 20):
            append(services, *corpus[i:i + 20])
        done.set()

    writer = threading.Thread(target=write)
    writer.start()
    reads = 0
    while not done.is_set() or reads == 0:
        bilan = bilan_answer(services.bilan("jour"))
        for k in ("delegations", "evites", "pilotage", "corrections"):
            assert sum(row[k] for clients in bilan["groupes"].values()
                       for row in clients.values()) == bilan["total"][k]
        reads += 1
    writer.join()
    assert reads > 1


def test_an_unreadable_journal_never_holds_the_events_back(services: Services) -> None:
    services.settings.journal_path.mkdir()  # a directory where the journal should be
    append(services, DELEGATION, PILOTAGE)
    bilan = bilan_answer(services.bilan("preset"))
    assert bilan["economies"]["claude-code"]["net"] == 2900
    assert "erreur" in bilan["provenance"]["journal"]
    assert services.runner.journal is not None and services.runner.journal.caught_up()


def test_a_replaced_journal_is_read_from_its_start(services: Services) -> None:
    append(services, DELEGATION, {**DELEGATION, "id": "d-2", "demande_id": "dem-2"})
    journal = services.settings.journal_path
    journal.write_text(json.dumps({"demande_id": DEMANDE, "preset": "vieux"}) + "\n")
    services.runner.catch_up()
    replacement = journal.with_name("new.jsonl")
    replacement.write_text(json.dumps({"demande_id": "dem-2", "preset": "neuf"}) + "\n"
                           + json.dumps({"demande_id": "dem-9", "preset": "x" * 80}) + "\n")
    replacement.replace(journal)  # longer than the old file: size alone would not tell
    services.runner.catch_up()
    groupes = bilan_answer(services.bilan("preset"))["groupes"]
    assert groupes["neuf"]["claude-code"]["delegations"] == 1


def test_the_journal_is_fixed_per_projection_like_the_zone(tmp_path: Path) -> None:
    data = tmp_path / "data"
    other = tmp_path / "other.jsonl"
    with open_services(Settings(data=data, token=TOKEN, journal=other)):
        pass
    with pytest.raises(ProjectionMismatch), \
            open_services(Settings(data=data, token=TOKEN, journal=tmp_path / "third.jsonl")):
        pass
    with open_services(Settings(data=data, token=TOKEN)) as unset:
        assert unset.runner.journal is not None
        assert unset.runner.journal.path == other.resolve()


def test_a_reader_with_defaults_does_not_pin_the_zone_for_the_server(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with open_services(Settings(data=data, token=TOKEN, fuseau="UTC"),
                       run_projections=False) as services:
        services.store.append(accept_batch(EXAMPLE_BATCH))
    (data / "projections.sqlite").unlink()
    assert read_bilan(data)["provenance"]["fuseau"]  # a default zone, recorded as such
    with open_services(Settings(data=data, token=TOKEN, fuseau="Asia/Tokyo"),
                       run_projections=False) as server:
        server.runner.catch_up()
        bilan = bilan_answer(server.bilan("jour"))
    assert bilan["provenance"]["fuseau"] == "Asia/Tokyo"
    assert list(bilan["groupes"]) == ["2026-10-30"]  # 09:12Z is 18:12 in Tokyo
    assert bilan["economies"]["claude-code"]["net"] == 2900


def test_a_projections_file_from_a_newer_release_is_refused_not_wiped(tmp_path: Path) -> None:
    import sqlite3

    data = tmp_path / "data"
    with open_services(Settings(data=data, token=TOKEN, fuseau="UTC")):
        pass
    with sqlite3.connect(data / "projections.sqlite") as db:
        db.execute("PRAGMA user_version = 99")
    with pytest.raises(ProjectionMismatch, match="newer"), \
            open_services(Settings(data=data, token=TOKEN)):
        pass
    with sqlite3.connect(data / "projections.sqlite") as db:
        assert db.execute("SELECT count(*) FROM bilan_state").fetchone()[0] == 1


def test_day_bounds_without_par_jour_are_refused(server: LiveServer) -> None:
    refused = server.client.get("/economies/bilan", params={"depuis": "2026-10-30"})
    assert refused.status_code == 400


def test_the_cli_refuses_day_bounds_without_par_jour_and_totals_the_rows_shown(
        server: LiveServer) -> None:
    server.post(EXAMPLE_BATCH)
    server.post({"evenements": [{**DELEGATION, "id": "late", "demande_id": "dem-late",
                                 "date": "2026-11-02T10:00:00.000Z"}]})
    server.bilan()
    refused = subprocess.run([str(SCRIPT), "bilan", "--data", str(server.data), "--depuis",
                              "2026-10-30"], capture_output=True, text=True)
    assert refused.returncode == 2 and "--par or --puis is jour, semaine or mois" in refused.stderr
    assert "Traceback" not in refused.stderr
    table = subprocess.run([str(SCRIPT), "bilan", "--data", str(server.data), "--par", "jour",
                            "--depuis", "2026-11-01", "--jusqu-au", "2026-11-30"],
                           check=True, capture_output=True, text=True).stdout
    total_row = next(line for line in table.splitlines() if " total " in line)
    assert "4,900" in total_row and "2,000" not in total_row  # the period, not all time
