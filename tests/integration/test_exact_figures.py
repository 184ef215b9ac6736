"""Figures are exact integers whatever the history (SPEC, "Figures are exact"; issue 13.1).

Every counter is at most 2^53 - 1, so about a thousand events take a sum past 2^63: the
bilan, its breakdowns, the demande view, replay, compare, the report and the CLI must all
keep exact integers, on both backends, and the projection must never stop on a large sum.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from miam_economies.api.http.report import render_report
from miam_economies.api.service.answers import bilan_answer, classement_answer
from miam_economies.api.service.replay import compare, replay
from miam_economies.api.service.report import report_data
from miam_economies.api.service.services import Services
from miam_economies.domain.acceptance import accept_batch
from tests.conftest import LiveServer

BIG = 2**53 - 1
N = 1_100  # N * BIG > 2^63
CLIENT = "claude-code"
SCRIPT = Path(sys.executable).with_name("miam-economies")


def demande(i: int) -> str:
    return f"dem-{i:05d}"


def history() -> list[dict[str, Any]]:
    """N delegations, pilotages and corrections whose every counter is 2^53 - 1, then one
    delegation saving 1 token: each sum passes 2^63, and the last +1 must still count."""
    events: list[dict[str, Any]] = []
    for i in range(N):
        # Five sessions a day: each group holds several clusters (ADR-0167), so has
        # intervals.
        common = {"schema": 1, "client": CLIENT, "session_id": f"s{i % 5}"}
        day = "2026-10-30" if i % 2 else "2026-10-31"
        # Three sessions, each group in several: intervals over sessions (ADR-0166).
        events.append({**common, "session_id": f"s{i % 3}", "type": "delegation",
                       "id": f"{CLIENT}:{demande(i)}",
                       "date": f"{day}T09:00:00.000Z", "demande_id": demande(i),
                       "agent_id": "a1", "par_subagent": True, "retour": "complet",
                       "tokens_entree": BIG, "tokens_sortie": BIG,
                       "estimation": {"lus": BIG, "ecrits": BIG, "consigne": 0,
                                      "rendus": BIG, "evites": BIG,
                                      "methode": "caracteres/4"}})
        events.append({**common, "type": "pilotage", "id": f"{CLIENT}:s:a1:t{i}",
                       "date": f"{day}T09:01:00.000Z", "agent_id": "a1", "turn_id": f"t{i}",
                       "demande_ids": [demande(i)], "modele": "claude-haiku-5-5",
                       "usage": {"input_tokens": BIG, "output_tokens": BIG,
                                 "cache_read_input_tokens": BIG,
                                 "cache_creation_input_tokens": BIG}, "cout": BIG})
        # Every correction reworks the first demande: its own sums pass 2^63 too.
        events.append({**common, "type": "correction", "id": f"{CLIENT}:s:toolu_{i}",
                       "date": f"{day}T09:02:00.000Z", "demande_id": demande(0),
                       "outil": "Read", "tool_use_id": f"toolu_{i}", "tokens_lus": BIG,
                       "tokens_ecrits": 0, "cout": BIG})
    last = dict(events[0], id=f"{CLIENT}:{demande(N)}", demande_id=demande(N))
    last["estimation"] = {**last["estimation"], "evites": 1}
    events.append(last)
    return events


EVITES, PILOTAGE, CORRECTIONS = N * BIG + 1, N * BIG, N * BIG
NET = EVITES - PILOTAGE - CORRECTIONS


def load(services: Services) -> None:
    """The history appended in batches of 500, the journal with a preset per demande, and
    everything folded."""
    events = history()
    for start in range(0, len(events), 500):
        services.store.append(accept_batch({"evenements": events[start:start + 500]}))
    services.settings.journal_path.write_text("".join(
        json.dumps({"demande_id": demande(i), "preset": "rapide" if i % 2 else "precis"})
        + "\n" for i in range(N + 1)))
    services.runner.catch_up()


def exact(value: Any, expected: int) -> None:
    assert type(value) is int, f"{value!r} is a {type(value).__name__}, not an int"
    assert value == expected


class ExactFiguresContract:
    """Sums past 2^63 on one backend."""

    def test_the_bilan_and_every_breakdown_stay_exact(self, services: Services) -> None:
        load(services)
        figures = bilan_answer(services.bilan())["economies"][CLIENT]
        exact(figures["evites"], EVITES)
        exact(figures["pilotage"], PILOTAGE)
        exact(figures["corrections"], CORRECTIONS)
        exact(figures["net"], NET)
        assert figures["delegations"] == N + 1
        for par in ("jour", "preset", "demande", "client"):
            cells = [c[CLIENT] for c in bilan_answer(services.bilan(par))["groupes"].values()]
            for name, total in (("evites", EVITES), ("pilotage", PILOTAGE),
                                ("corrections", CORRECTIONS), ("net", NET)):
                assert all(type(c[name]) is int for c in cells), (par, name)
                assert sum(c[name] for c in cells) == total, (par, name)
        modele = bilan_answer(services.bilan("modele"))["groupes"]["claude-haiku-5-5"][CLIENT]
        exact(modele["pilotage"], PILOTAGE)
        assert modele["tours"] == N
        for counter in modele["usage"].values():
            exact(counter, N * BIG)

    def test_the_classement_stays_exact(self, services: Services) -> None:
        load(services)
        for par in ("preset", "client"):
            groupes = classement_answer(services.classement(par, 1))["groupes"]
            for name, total in (("evites", EVITES), ("pilotage", PILOTAGE),
                                ("corrections", CORRECTIONS), ("net", NET)):
                assert all(type(g[name]) is int for g in groupes), (par, name)
                assert sum(g[name] for g in groupes) == total, (par, name)
            assert sum(g["demandes"] for g in groupes) == N + 1
            for g in groupes:
                if g["cle"] == "rapide":  # every net 0: no spread, no interval (ADR-0166)
                    assert g["intervalle_net_par_demande"] is None
                    continue
                low, high = g["intervalle_net_par_demande"]
                assert low <= g["net_par_demande"] <= high

    def test_the_demande_view_stays_exact(self, services: Services) -> None:
        load(services)
        first = services.demande(demande(0))
        assert first is not None
        exact(first["corrections"]["cout"], CORRECTIONS)
        exact(first["corrections"]["par_outil"]["Read"]["cout"], CORRECTIONS)
        assert first["corrections"]["nombre"] == N
        exact(first["net"], BIG - BIG - CORRECTIONS)

    def test_replay_compare_and_the_report_stay_exact(self, services: Services) -> None:
        load(services)
        settings = services.settings
        replay(settings, "v1-serveur")  # evites recomputed: lus + ecrits, 2 BIG each
        with_subagent = 2 * BIG
        services.runner.catch_up()
        exact(bilan_answer(services.bilan())["economies"][CLIENT]["evites"],
              N * with_subagent + with_subagent)
        compared = compare(settings, ["v1", "v1-serveur"])["groupes"][CLIENT][CLIENT]
        exact(compared["v1"]["evites"], EVITES)
        exact(compared["v1-serveur"]["evites"], (N + 1) * with_subagent)
        data = report_data(services)
        exact(data["total"]["corrections"], CORRECTIONS)
        exact(data["periode"]["corrections"], CORRECTIONS)
        assert f"{CORRECTIONS:,}" in render_report(services)


class TestExactFiguresSQLite(ExactFiguresContract):
    backend = "sqlite"


class TestExactFiguresPostgres(ExactFiguresContract):
    backend = "postgresql"


def test_http_and_the_cli_answer_exact_integers(tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = LiveServer(data)
    server.start()
    try:
        events = history()
        for start in range(0, len(events), 500):
            assert server.post({"evenements": events[start:start + 500]}).status_code == 200
        figures = json.loads(server.client.get(  # the raw JSON: no float anywhere
            "/economies/bilan", params={"attendre": "1"}).text)["economies"][CLIENT]
        exact(figures["evites"], EVITES)
        exact(figures["net"], NET)
        printed = json.loads(subprocess.run(
            [str(SCRIPT), "bilan", "--data", str(data), "--json"], check=True,
            capture_output=True, text=True).stdout)
        exact(printed["total"]["evites"], EVITES)
        table = subprocess.run([str(SCRIPT), "bilan", "--data", str(data)], check=True,
                               capture_output=True, text=True).stdout
        assert f"{EVITES:,}" in table
    finally:
        server.close()


def test_postgres_tables_of_the_previous_schema_are_rebuilt_with_exact_sums(
        tmp_path: Path) -> None:
    # Schema 4's sums were bigint: opening them again drops and recreates the view's
    # tables (one transaction), and the projection is folded again from the store.
    import psycopg

    from miam_economies.api.service.bootstrap import open_services
    from miam_economies.api.service.settings import Settings
    from tests.conftest import fresh_postgres

    with fresh_postgres() as url:
        settings = Settings(data=tmp_path / "data", database_url=url)
        with open_services(settings, run_projections=False) as services:
            load(services)
        with psycopg.connect(url, autocommit=True) as db:
            db.execute("UPDATE bilan_schema SET version = 4")
            db.execute("ALTER TABLE bilan_clients ALTER COLUMN evites TYPE bigint USING 0")
        with open_services(settings, run_projections=False) as services:
            assert services.projection.position() == 0  # rebuilt, from the store
            services.runner.catch_up()
            exact(bilan_answer(services.bilan())["economies"][CLIENT]["evites"], EVITES)
        with psycopg.connect(url, autocommit=True) as db:
            row = db.execute("SELECT data_type FROM information_schema.columns WHERE "
                             "table_name = 'bilan_clients' AND column_name = 'evites'"
                             ).fetchone()
        assert row is not None and row[0] == "numeric"
