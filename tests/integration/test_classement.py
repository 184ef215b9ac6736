"""The classement (SPEC, "Ranking presets: the classement") from the projection's samples
and its demandes, against an independent recomputation from the events and the journal
(figures, order by either criterion, intervals, verdicts, paired verdicts on a journal
``test_id``), on both backends, whatever the arrival order; its route and its command."""

from __future__ import annotations

import functools
import json
import math
import random
import subprocess
import sys
from collections import defaultdict
from datetime import datetime
from fractions import Fraction
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from scipy import stats

from miam_economies.api.service.answers import classement_answer
from miam_economies.api.service.replay import replay
from miam_economies.api.service.services import Services
from miam_economies.domain.acceptance import accept_batch
from miam_economies.domain.classement import MAX_COMPARED
from tests.classement_reference import (
    assert_same,
    clustered,
    expected_paired,
    expected_pairs,
    net_df,
)
from tests.conftest import LiveServer
from tests.corpus import expected_breakdowns, generate, journal_lines, with_fields

SCRIPT = Path(sys.executable).with_name("miam-economies")
EVENTS = generate(3000, seed=11)[:3000]


def with_tasks(lines: list[str]) -> list[str]:
    """The journal with a ``test_id`` (one of 40 tasks) on four lines in five, as MIAM's
    test runs would write it, and a ``lot`` of 60 values (more groups than are
    compared)."""
    rng = random.Random(19)

    def fields(k: int) -> dict[str, str]:
        task = {"test_id": f"t{rng.randrange(40):02d}"} if rng.random() < 0.8 else {}
        return {**task, "lot": f"l{rng.randrange(60):02d}"}

    return with_fields(lines, fields)


JOURNAL = with_tasks(journal_lines(EVENTS, seed=11))


EXPECTED = expected_breakdowns(EVENTS, JOURNAL, ZoneInfo("UTC"))


@functools.cache
def clusters(zone: str = "UTC") -> dict[tuple[str, str], tuple[str, str]]:
    """Each (client, demande)'s cluster: the session and the day (in ``zone``, the
    projection's) of its delegation of smallest id (ADR-0166, ADR-0167)."""
    delegations = sorted((e["id"], e["client"], e["demande_id"], e["session_id"], e["date"])
                         for e in EVENTS if e["type"] == "delegation")
    out: dict[tuple[str, str], tuple[str, str]] = {}
    for _, client, demande_id, session, date in delegations:
        out.setdefault((client, demande_id), (session, day_in(date, zone)))
    return out


def day_in(date: str, zone: str) -> str:
    """An event's ISO UTC ``date`` as a day ``YYYY-MM-DD`` in ``zone``."""
    return datetime.fromisoformat(date.replace("Z", "+00:00")).astimezone(
        ZoneInfo(zone)).date().isoformat()


SESSIONS = clusters()
"""Each (client, demande)'s cluster (session, day) in UTC, the fixtures' zone."""


def recomputed(par: str, tache: str | None = None, zone: str = "UTC",
               depuis: str | None = None, jusqu_au: str | None = None) -> dict[str, Any]:
    """Each group's demandes as ``(cluster, evites, pilotage, corrections)``, from the
    events and the journal alone (``tests.corpus``; the cluster: (session, day in
    ``zone``)): a demande counts once its delegation arrived, and when its day is within
    ``depuis``..``jusqu_au``; with ``tache``, as ``(evites, pilotage, corrections)`` by
    group and task (demandes without a task left out)."""
    groups: defaultdict[str, Any] = defaultdict(lambda: defaultdict(list) if tache else [])
    for demande_id, clients in EXPECTED["demande"].items():
        valeurs = EXPECTED["valeurs"].get(demande_id, {})
        for client, row in clients.items():
            if row["delegations"] == 0:
                continue
            cluster = clusters(zone)[(client, demande_id)]
            if not (depuis or "") <= cluster[1] <= (jusqu_au or "9999"):
                continue
            cle = client if par == "client" else valeurs.get(par, "(inconnu)")
            figures = (row["evites"], row["pilotage"], row["corrections"])
            if tache is None:
                groups[cle].append((cluster, *figures))
            elif tache in valeurs:
                groups[cle][valeurs[tache]].append(figures)
    return groups


def t_interval(rows: list[tuple[Any, int, int, int]]) -> tuple[float, float] | None:
    """The 95 % t interval of the mean net of ``rows`` over their sessions (ADR-0166; its
    degrees of freedom its effective sessions', ADR-0171; by
    ``tests.classement_reference`` and scipy.stats), None below 2 sessions
    or without spread."""
    sessions = len({r[0] for r in rows})
    if sessions < 2:
        return None
    mean, variance, _ = clustered(rows, "net")
    if variance == 0:
        return None
    half = stats.t.ppf(0.975, net_df(rows)) * math.sqrt(variance)
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


def check(answer: dict[str, Any], par: str, minimum: int, selon: str = "taux",
          apparier: str | None = None, zone: str = "UTC", depuis: str | None = None,
          jusqu_au: str | None = None) -> None:
    """``answer`` against the recomputation: every group's sums and figures, intervals,
    flags and order by ``selon``, and every comparison (paired on ``apparier``), the
    clusters' days cut in ``zone``, within the window ``depuis``..``jusqu_au``."""
    groups = recomputed(par, None, zone, depuis, jusqu_au)
    critere = {"taux": "taux_reprise", "net": "net_par_demande"}[selon]
    assert (answer["par"], answer["min"], answer["critere"]) == (par, minimum, critere)
    assert answer.get("apparier") == apparier
    assert sorted(g["cle"] for g in answer["groupes"]) == sorted(groups)
    for g in answer["groupes"]:
        rows = groups[g["cle"]]
        evites, pilotage, corrections = (sum(r[i] for r in rows) for i in range(1, 4))
        unclustered = g["cle"] == "(inconnu)"  # its sessions are not kept (ADR-0166)
        assert (g["demandes"], g["sessions"], g["evites"], g["pilotage"],
                g["corrections"]) == (len(rows), None if unclustered else
                                      len({r[0] for r in rows}), evites, pilotage,
                                      corrections)
        assert g["net"] == evites - pilotage - corrections
        assert g["net_par_demande"] == pytest.approx(g["net"] / len(rows), rel=1e-12)
        assert g["taux_reprise"] == (pytest.approx(corrections / evites, rel=1e-12)
                                     if evites > 0 else None)
        want = None if unclustered else t_interval(rows)
        if want is not None:
            low, high = g["intervalle_net_par_demande"]
            assert (low, high) == pytest.approx(want, rel=1e-9, abs=1e-6)
            assert low <= g["net_par_demande"] <= high
        else:
            assert g["intervalle_net_par_demande"] is None
        if g["intervalle_taux_reprise"] is not None:
            low, high = g["intervalle_taux_reprise"]
            assert low <= g["taux_reprise"] and (high is None or g["taux_reprise"] <= high)
            assert (high is None) if corrections == 0 else True
        assert g["suffisant"] is (len(rows) >= minimum)
    ranked = [g for g in answer["groupes"] if g["rang"] is not None]
    assert answer["groupes"][:len(ranked)] == ranked  # ranked groups first
    assert [g["rang"] for g in ranked] == list(range(1, len(ranked) + 1))
    assert all(g["suffisant"] and (selon == "net" or g["taux_reprise"] is not None)
               for g in ranked)

    def key(g: dict[str, Any]) -> tuple[bool, Fraction]:
        if selon == "net":
            return False, -Fraction(g["net"], g["demandes"])
        return g["evites"] <= 0, Fraction(g["corrections"], max(g["evites"], 1))

    for part in (ranked, answer["groupes"][len(ranked):]):
        assert part == sorted(part, key=lambda g: (*key(g), g["cle"]))
    names = [g["cle"] for g in ranked]
    if apparier is None:
        want = expected_pairs({cle: groups[cle] for cle in names}, selon,
                              () if par == "client" else ("(inconnu)",))
    else:
        want = expected_paired(recomputed(par, apparier, zone, depuis, jusqu_au), names,
                               selon)
    assert_same(answer["comparaisons"], want)


def todays_order(answer: dict[str, Any], minimum: int) -> list[str]:
    """The order of the classement before ADR-0081 (267ce71): groups of at least
    ``minimum`` demandes by net per demande descending, then the others the same way,
    ties by cle."""
    return [g["cle"] for g in sorted(answer["groupes"], key=lambda g: (
        g["demandes"] < minimum, -Fraction(g["net"], g["demandes"]), g["cle"]))]


class ClassementContract:
    """The classement on one backend."""

    @pytest.mark.parametrize(("par", "minimum"), [("preset", 10), ("format", 400),
                                                  ("client", 1), ("ok", 10)])
    @pytest.mark.parametrize("selon", ["taux", "net"])
    def test_it_equals_an_independent_recomputation(self, services: Services, par: str,
                                                    minimum: int, selon: str) -> None:
        load(services)
        check(classement_answer(services.classement(par, minimum, selon)), par, minimum, selon)

    @pytest.mark.parametrize("selon", ["taux", "net"])
    def test_paired_on_a_task_it_equals_the_recomputation(self, services: Services,
                                                          selon: str) -> None:
        load(services)
        answer = classement_answer(services.classement("preset", 5, selon, "test_id"))
        check(answer, "preset", 5, selon, "test_id")
        assert answer["comparaisons"] and max(c["taches"] for c in answer["comparaisons"]) > 20

    def test_by_net_the_order_is_todays(self, services: Services) -> None:
        load(services)
        for par, minimum in (("preset", 10), ("format", 400), ("client", 1)):
            answer = classement_answer(services.classement(par, minimum, "net"))
            assert [g["cle"] for g in answer["groupes"]] == todays_order(answer, minimum)

    def test_folded_in_any_order_with_the_journal_late_it_is_the_same(
            self, services: Services) -> None:
        load(services, random.Random(5))
        for par in ("preset", "client"):
            check(classement_answer(services.classement(par, 10)), par, 10)
        check(classement_answer(services.classement("preset", 5, "net", "test_id")),
              "preset", 5, "net", "test_id")

    def test_it_is_deterministic_and_says_where_it_stands(self, services: Services) -> None:
        load(services)
        first = classement_answer(services.classement("preset"))
        assert json.dumps(first) == json.dumps(classement_answer(services.classement("preset")))
        assert first["position"] == services.store.head()
        assert first["formule"] == "v1" and first["min"] == 30
        assert first["critere"] == "taux_reprise"

    def test_a_replay_rebuilds_the_same_classement(self, services: Services) -> None:
        load(services, random.Random(9))
        live = classement_answer(services.classement("preset"))
        # Folded without groups, then samples rebuilt once from the demandes (ADR-0073).
        replay(services.settings, "v1", fuseau="Etc/GMT-1")
        rebuilt = classement_answer(services.classement("preset"))
        # Another zone cuts the sessions at another hour: the clusters, not the
        # demandes' sums, may change (ADR-0167).
        sums = ("cle", "demandes", "evites", "pilotage", "corrections", "net")
        assert ([{k: g[k] for k in sums} for g in rebuilt["groupes"]]
                == [{k: g[k] for k in sums} for g in live["groupes"]])
        check(rebuilt, "preset", 30, zone="Etc/GMT-1")

    def test_refused_parameters(self, services: Services) -> None:
        for par, minimum, selon, apparier in (
                ("jour", 10, "taux", None), ("modele", 10, "taux", None),
                ("demande", 10, "net", None), ("", 10, "taux", None),
                ("journal.", 10, "taux", None), ("preset", 0, "taux", None),
                ("preset", 10, "prix", None), ("preset", 10, "taux", "preset"),
                ("preset", 10, "taux", "client"), ("preset", 10, "taux", "jour"),
                ("preset", 10, "taux", "modele"), ("preset", 10, "taux", "demande")):
            with pytest.raises(ValueError):
                classement_answer(services.classement(par, minimum, selon, apparier))

    def test_past_max_compared_groups_only_the_best_ranked_are_compared(
            self, services: Services) -> None:
        load(services)
        answer = classement_answer(services.classement("lot", 1, "net"))
        ranked = [g["cle"] for g in answer["groupes"] if g["rang"] is not None]
        assert len(ranked) > MAX_COMPARED == answer["comparaisons_limite"]
        assert [(c["a"], c["b"]) for c in answer["comparaisons"]] == [
            (a, b) for i, a in enumerate(ranked[:MAX_COMPARED])
            for b in ranked[i + 1:MAX_COMPARED]]
        assert "comparaisons_limite" not in classement_answer(services.classement("preset", 1))

    def test_an_empty_store_ranks_nothing(self, services: Services) -> None:
        assert classement_answer(services.classement("preset"))["groupes"] == []
        paired = classement_answer(services.classement("preset", 1, "net", "test_id"))
        assert paired["comparaisons"] == []


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
        paired = server.client.get("/economies/classement", params={
            "par": "preset", "min": "5", "selon": "net", "apparier": "test_id"}).json()
        check(paired, "preset", 5, "net", "test_id")
        for bad, named in (({"par": "jour"}, "par"), ({"par": "preset", "min": "0"}, "min"),
                           ({"par": "preset", "min": "x"}, "min"),
                           ({"par": "preset", "min": "1.5"}, "min"),
                           ({"par": "preset", "min": "٣"}, "min"), ({"par": "journal."}, "par"),
                           ({}, "par"), ({"par": "preset", "selon": "prix"}, "selon"),
                           ({"par": "preset", "selon": ""}, "selon"),
                           ({"par": "preset", "apparier": "preset"}, "apparier"),
                           ({"par": "preset", "apparier": "journal.preset"}, "apparier"),
                           *(({"par": "preset", "apparier": f}, "apparier")
                             for f in ("client", "jour", "modele", "demande", ""))):
            refused = server.client.get("/economies/classement", params=bad)
            assert refused.status_code == 400, (bad, refused.text)
            assert refused.json()["ok"] is False
            assert refused.json()["erreur"].startswith(named), (bad, refused.json())
        assert server.client.get("/economies/classement", params={"par": "preset"},
                                 headers={"Authorization": "Bearer x"}).status_code == 401
    finally:
        server.close()
    printed = json.loads(subprocess.run(
        [str(SCRIPT), "classement", "--data", str(data), "--par", "preset", "--min", "5",
         "--json"], check=True, capture_output=True, text=True).stdout)
    assert printed == answer
    printed = json.loads(subprocess.run(
        [str(SCRIPT), "classement", "--data", str(data), "--par", "preset", "--min", "5",
         "--selon", "net", "--apparier", "test_id", "--json"], check=True,
        capture_output=True, text=True).stdout)
    assert printed == paired
    table = subprocess.run([str(SCRIPT), "classement", "--data", str(data), "--par",
                            "preset"], check=True, capture_output=True, text=True).stdout
    for g in answer["groupes"]:
        assert g["cle"] in table
    refused = subprocess.run([str(SCRIPT), "classement", "--data", str(data), "--par",
                              "jour"], capture_output=True, text=True)
    assert refused.returncode == 2 and "--par" in refused.stderr
    for args, named in ((["--selon", "prix"], "--selon"), (["--apparier", "preset"],
                                                           "apparier must differ")):
        refused = subprocess.run([str(SCRIPT), "classement", "--data", str(data), "--par",
                                  "preset", *args], capture_output=True, text=True)
        assert refused.returncode == 2 and named in refused.stderr, refused.stderr
