"""The classement within a window and its drift flag (SPEC, "Ranking presets: the
classement", "Window", "Drift"; ADR-0167): the windowed answer from the samples per day
equals the independent recomputation on the window's demandes (clusters: a session's
demandes of one day), a window over the whole history answers as none does, bad windows
are refused naming the parameter, an empty window ranks nothing; ``derive`` flags a
preset whose recent quarter changed and not a stable one; HTTP and the command line give
the same document. Both backends, no mocks."""

from __future__ import annotations

import json
import random
import subprocess
import time
from datetime import date as date_type
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from miam_economies.api.service.answers import classement_answer
from miam_economies.api.service.services import Services
from miam_economies.domain.acceptance import accept_batch
from miam_economies.domain.classement import ClassementError
from tests.conftest import LiveServer
from tests.integration.test_classement import EVENTS, JOURNAL, SCRIPT, check, clusters, load

DAYS = sorted({day for _, day in clusters().values()})
WINDOWS = [(DAYS[len(DAYS) // 3], DAYS[2 * len(DAYS) // 3]), (DAYS[-20], None),
           (None, DAYS[15]), (DAYS[40], DAYS[40])]


def drifting(days: int = 40, seed: int = 3) -> tuple[list[dict[str, Any]], list[str]]:
    """Events and journal of two presets over ``days`` days from 2026-10-01, three
    sessions a day each of four demandes (evites 1,000 each, corrections drawn around a
    taux): ``stable`` at about 10 % throughout, ``change`` at about 10 % then 60 % over
    its last quarter of days."""
    rng = random.Random(seed)
    events: list[dict[str, Any]] = []
    lines: list[str] = []
    for day in range(days):
        date = (date_type(2026, 10, 1) + timedelta(days=day)).isoformat()
        for preset in ("stable", "change"):
            taux = 0.6 if preset == "change" and day >= days * 3 // 4 else 0.1
            for s in range(3):
                session = f"{preset}-{day}-{s}"
                for k in range(4):
                    demande = f"{session}-{k}"
                    common = {"schema": 1, "date": f"{date}T{10 + k:02d}:00:00.000Z",
                              "client": "claude-code", "session_id": session}
                    events.append({
                        **common, "type": "delegation", "id": f"d-{demande}",
                        "demande_id": demande, "agent_id": "a1", "par_subagent": True,
                        "retour": "complet", "tokens_entree": 0, "tokens_sortie": 0,
                        "estimation": {"lus": 0, "ecrits": 0, "consigne": 0, "rendus": 0,
                                       "evites": 1000, "methode": "m"}})
                    cout = max(0, round(rng.gauss(taux * 1000, 60)))
                    events.append({**common, "type": "correction", "id": f"c-{demande}",
                                   "demande_id": demande, "outil": "Edit",
                                   "tool_use_id": demande, "tokens_lus": 0,
                                   "tokens_ecrits": cout, "cout": cout})
                    lines.append(json.dumps({"demande_id": demande, "preset": preset}))
    return events, lines


class WindowContract:
    """The window and the drift flag on one backend."""

    @pytest.mark.parametrize("selon", ["taux", "net"])
    def test_windowed_it_equals_the_recomputation_on_the_windows_demandes(
            self, services: Services, selon: str) -> None:
        load(services, random.Random(7))
        for depuis, jusqu_au in WINDOWS:
            for par, minimum in (("preset", 5), ("client", 1)):
                answer = classement_answer(services.classement(par, minimum, selon, None,
                                                               depuis, jusqu_au))
                assert (answer.get("depuis"), answer.get("jusqu_au")) == (depuis, jusqu_au)
                check(answer, par, minimum, selon, depuis=depuis, jusqu_au=jusqu_au)
            paired = classement_answer(services.classement("preset", 2, selon, "test_id",
                                                           depuis, jusqu_au))
            check(paired, "preset", 2, selon, "test_id", depuis=depuis, jusqu_au=jusqu_au)

    def test_a_window_over_everything_answers_as_none(self, services: Services) -> None:
        load(services)
        whole = classement_answer(services.classement("preset", 5))
        windowed = classement_answer(services.classement("preset", 5, "taux", None,
                                                         DAYS[0], DAYS[-1]))
        assert windowed["groupes"] == whole["groupes"]
        assert windowed["comparaisons"] == whole["comparaisons"]

    def test_an_empty_window_ranks_nothing_and_bad_ones_are_refused(
            self, services: Services) -> None:
        load(services)
        assert classement_answer(services.classement(
            "preset", 5, "taux", None, "2030-01-01", None))["groupes"] == []
        for depuis, jusqu_au, named in (("2026-13-01", None, "depuis"),
                                        (None, "hier", "jusqu_au"),
                                        ("2026-11-02", "2026-11-01", "depuis")):
            with pytest.raises(ClassementError) as refused:
                services.classement("preset", 5, "taux", None, depuis, jusqu_au)
            assert refused.value.parametre in (named, "jusqu_au", "depuis")
            assert str(refused.value).startswith(refused.value.parametre)

    def test_derive_flags_the_changed_preset_not_the_stable_one(
            self, services: Services) -> None:
        events, lines = drifting()
        services.settings.journal_path.write_text("\n".join(lines) + "\n")
        for start in range(0, len(events), 400):
            services.store.append(accept_batch({"evenements": events[start:start + 400]}))
        services.runner.catch_up()
        for selon in ("taux", "net"):
            groups = {g["cle"]: g for g in classement_answer(
                services.classement("preset", 30, selon))["groupes"]}
            assert groups["stable"]["derive"] is None
            flag = groups["change"]["derive"]
            assert flag is not None and flag["depuis"] >= "2026-10-30", flag
            assert (flag["apres"] > flag["avant"]) is (selon == "taux")
            # Within the stable period alone, nothing changed.
            early = {g["cle"]: g for g in classement_answer(services.classement(
                "preset", 30, selon, None, None, "2026-10-29"))["groupes"]}
            assert early["change"]["derive"] is None


class TestWindowSQLite(WindowContract):
    backend = "sqlite"


class TestWindowPostgres(WindowContract):
    backend = "postgresql"


def test_the_route_and_the_command_window_alike(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "delegations.jsonl").write_text("\n".join(JOURNAL) + "\n")
    server = LiveServer(data)
    server.start()
    depuis, jusqu_au = WINDOWS[0]
    try:
        for start in range(0, len(EVENTS), 500):
            assert server.post({"evenements": EVENTS[start:start + 500]}).status_code == 200
        params = {"par": "preset", "min": "5", "depuis": depuis, "jusqu_au": jusqu_au,
                  "attendre": "1"}
        deadline = time.monotonic() + 30
        while True:  # the journal's follower joins its lines on its own beat
            response = server.client.get("/economies/classement", params=params)
            if len(response.json().get("groupes", [])) > 1 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert response.status_code == 200, response.text
        answer = response.json()
        check(answer, "preset", 5, depuis=depuis, jusqu_au=jusqu_au)
        before = server.client.get("/economies/bilan").json()
        for bad, named in (({"depuis": "2026-02-30"}, "depuis"),
                           ({"jusqu_au": "26-11-01"}, "jusqu_au"),
                           ({"depuis": "2026-11-02", "jusqu_au": "2026-11-01"}, "depuis")):
            refused = server.client.get("/economies/classement",
                                        params={"par": "preset", **bad})
            assert refused.status_code == 400, (bad, refused.text)
            assert refused.json()["erreur"].startswith(named), (bad, refused.json())
        after = server.client.get("/economies/bilan").json()
        assert after["position"] == before["position"]
        assert after["economies"] == before["economies"]
        empty = server.client.get("/economies/classement", params={
            "par": "preset", "depuis": "2031-01-01"}).json()
        assert empty["groupes"] == []
    finally:
        server.close()
    printed = json.loads(subprocess.run(
        [str(SCRIPT), "classement", "--data", str(data), "--par", "preset", "--min", "5",
         "--depuis", depuis, "--jusqu-au", jusqu_au, "--json"], check=True,
        capture_output=True, text=True).stdout)
    assert printed == answer
    refused = subprocess.run([str(SCRIPT), "classement", "--data", str(data), "--par",
                              "preset", "--depuis", "2026-11-02", "--jusqu-au", "2026-11-01"],
                             capture_output=True, text=True)
    assert refused.returncode == 2 and "depuis" in refused.stderr, refused.stderr
