"""The classement (SPEC, "Ranking presets: the classement") from the projection's samples,
against an independent recomputation from the events and the journal, on both backends;
its route and its command."""

from __future__ import annotations

import json
import math
import random
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from scipy import stats

from miam_economies.api.service.replay import replay
from miam_economies.api.service.services import Services
from miam_economies.domain.acceptance import accept_batch
from tests.conftest import LiveServer
from tests.corpus import expected_breakdowns, generate, journal_lines

SCRIPT = Path(sys.executable).with_name("miam-economies")
EVENTS = generate(3000, seed=11)[:3000]
JOURNAL = journal_lines(EVENTS, seed=11)


def recomputed(par: str) -> dict[str, list[tuple[int, int, int]]]:
    """Each group's demandes as ``(evites, pilotage, corrections)``, from the events and
    the journal alone (``tests.corpus``): a demande counts once its delegation arrived."""
    expected = expected_breakdowns(EVENTS, JOURNAL, ZoneInfo("UTC"))
    groups: defaultdict[str, list[tuple[int, int, int]]] = defaultdict(list)
    for demande_id, clients in expected["demande"].items():
        for client, row in clients.items():
            if row["delegations"] == 0:
                continue
            cle = client if par == "client" else expected["valeurs"].get(
                demande_id, {}).get(par, "(inconnu)")
            groups[cle].append((row["evites"], row["pilotage"], row["corrections"]))
    return groups


def t_interval(nets: list[int]) -> tuple[float, float]:
    """The 95 % t interval of the mean of ``nets``, by scipy.stats and statistics."""
    mean = statistics.fmean(nets)
    half = stats.t.ppf(0.975, len(nets) - 1) * statistics.stdev(nets) / math.sqrt(len(nets))
    return mean - half, mean + half


def load(services: Services, rng: random.Random | None = None) -> None:
    """The corpus appended (in random small batches, folded as they come, the journal
    written halfway, when ``rng`` is given) and everything folded."""
    journal = services.settings.journal_path
    if rng is None:
        for start in range(0, len(EVENTS), 500):
            services.store.append(accept_batch({"evenements": EVENTS[start:start + 500]}))
        journal.write_text("\n".join(JOURNAL) + "\n")
    else:
        shuffled = EVENTS[:]
        rng.shuffle(shuffled)
        start = 0
        while start < len(shuffled):
            size = rng.randint(1, 60)
            services.store.append(accept_batch({"evenements": shuffled[start:start + size]}))
            start += size
            if start >= len(shuffled) // 2 and not journal.exists():
                journal.write_text("\n".join(JOURNAL) + "\n")
            services.runner.catch_up()
    services.runner.catch_up()


def check(answer: dict[str, Any], par: str, minimum: int) -> None:
    """``answer`` against the recomputation: every group's sums and figures, intervals,
    flags and order."""
    groups = recomputed(par)
    assert (answer["par"], answer["min"], answer["critere"]) == (par, minimum,
                                                                 "net_par_demande")
    assert sorted(g["cle"] for g in answer["groupes"]) == sorted(groups)
    for g in answer["groupes"]:
        rows = groups[g["cle"]]
        evites, pilotage, corrections = (sum(r[i] for r in rows) for i in range(3))
        assert (g["demandes"], g["evites"], g["pilotage"], g["corrections"]) == (
            len(rows), evites, pilotage, corrections)
        assert g["net"] == evites - pilotage - corrections
        assert g["net_par_demande"] == pytest.approx(g["net"] / len(rows), rel=1e-12)
        assert g["taux_reprise"] == (pytest.approx(corrections / evites, rel=1e-12)
                                     if evites > 0 else None)
        nets = [e - p - c for e, p, c in rows]
        if len(rows) >= 2:
            low, high = g["intervalle_net_par_demande"]
            assert (low, high) == pytest.approx(t_interval(nets), rel=1e-9, abs=1e-6)
            assert low <= g["net_par_demande"] <= high
        else:
            assert g["intervalle_net_par_demande"] is None
        if g["intervalle_taux_reprise"] is not None:
            low, high = g["intervalle_taux_reprise"]
            assert low <= g["taux_reprise"] <= high
        assert g["suffisant"] is (len(rows) >= minimum)
    ranked = [g for g in answer["groupes"] if g["suffisant"]]
    assert answer["groupes"][:len(ranked)] == ranked  # sufficient groups first
    assert [g["rang"] for g in ranked] == list(range(1, len(ranked) + 1))
    assert all(g["rang"] is None for g in answer["groupes"][len(ranked):])
    for part in (ranked, answer["groupes"][len(ranked):]):
        means = [g["net_par_demande"] for g in part]
        assert means == sorted(means, reverse=True)


class ClassementContract:
    """The classement on one backend."""

    @pytest.mark.parametrize(("par", "minimum"), [("preset", 10), ("format", 400),
                                                  ("client", 1), ("ok", 10)])
    def test_it_equals_an_independent_recomputation(self, services: Services, par: str,
                                                    minimum: int) -> None:
        load(services)
        check(services.classement(par, minimum), par, minimum)

    def test_folded_in_any_order_with_the_journal_late_it_is_the_same(
            self, services: Services) -> None:
        load(services, random.Random(5))
        for par in ("preset", "client"):
            check(services.classement(par, 10), par, 10)

    def test_it_is_deterministic_and_says_where_it_stands(self, services: Services) -> None:
        load(services)
        first = services.classement("preset")
        assert json.dumps(first) == json.dumps(services.classement("preset"))
        assert first["position"] == services.store.head()
        assert first["formule"] == "v1"

    def test_a_replay_rebuilds_the_same_classement(self, services: Services) -> None:
        load(services, random.Random(9))
        live = services.classement("preset")
        # Folded without groups, then samples rebuilt once from the demandes (ADR-0073).
        replay(services.settings, "v1", fuseau="Etc/GMT-1")
        services.runner.follow_switch()
        rebuilt = services.classement("preset")
        assert rebuilt["groupes"] == live["groupes"]
        check(rebuilt, "preset", 10)

    def test_refused_breakdowns_and_minimums(self, services: Services) -> None:
        for par, minimum in (("jour", 10), ("modele", 10), ("demande", 10), ("", 10),
                             ("journal.", 10), ("preset", 0)):
            with pytest.raises(ValueError):
                services.classement(par, minimum)

    def test_an_empty_store_ranks_nothing(self, services: Services) -> None:
        assert services.classement("preset")["groupes"] == []


class TestClassementSQLite(ClassementContract):
    backend = "sqlite"


class TestClassementPostgres(ClassementContract):
    backend = "postgresql"


def test_the_route_and_the_command_give_the_same_document(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "delegations.jsonl").write_text("\n".join(JOURNAL) + "\n")
    server = LiveServer(data)
    server.start()
    try:
        for start in range(0, len(EVENTS), 500):
            assert server.post({"evenements": EVENTS[start:start + 500]}).status_code == 200
        response = server.client.get("/economies/classement",
                                     params={"par": "preset", "min": "5", "attendre": "1"})
        assert response.status_code == 200, response.text
        answer = response.json()
        check(answer, "preset", 5)
        for bad in ({"par": "jour"}, {"par": "preset", "min": "0"},
                    {"par": "preset", "min": "x"}, {"par": "preset", "min": "1.5"},
                    {"par": "preset", "min": "٣"}, {"par": "journal."}, {}):
            refused = server.client.get("/economies/classement", params=bad)
            assert refused.status_code == 400, (bad, refused.text)
            assert refused.json()["ok"] is False
        assert server.client.get("/economies/classement", params={"par": "preset"},
                                 headers={"Authorization": "Bearer x"}).status_code == 401
    finally:
        server.close()
    printed = json.loads(subprocess.run(
        [str(SCRIPT), "classement", "--data", str(data), "--par", "preset", "--min", "5",
         "--json"], check=True, capture_output=True, text=True).stdout)
    assert printed == answer
    table = subprocess.run([str(SCRIPT), "classement", "--data", str(data), "--par",
                            "preset"], check=True, capture_output=True, text=True).stdout
    for g in answer["groupes"]:
        assert g["cle"] in table
    refused = subprocess.run([str(SCRIPT), "classement", "--data", str(data), "--par",
                              "jour"], capture_output=True, text=True)
    assert refused.returncode == 2 and "--par" in refused.stderr
