"""Issue 32, "Done when": the typed results' wire output is byte-identical to the answers
of the release before them (commit 92db6ba, recorded by
``tests/fixtures/answers_92db6ba/make.py``) on the fixture store, for every route and
parameter set of the docs, as JSON and CSV, under v1 and in US dollars, apart from the
documented additions (ADR-0163); the classement's figures the same, its intervals and
verdicts now over sessions (ADR-0166)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.fixtures.answers_92db6ba.make import HERE, answers
from tests.fixtures.store_ca63dfe.make import fixture_copy

RECORDED: dict[str, Any] = json.loads((HERE / "answers.json").read_text(encoding="utf-8"))


def test_the_fixture_covers_every_read_shape() -> None:
    # What the recording is meant to exercise, so a remade one cannot quietly lose it.
    assert len(RECORDED) == 2 * (2 * 17 + 2 * 5 + 4)
    statuses = {name: a["status"] for name, a in RECORDED.items()}
    assert statuses["v1 /economies/demandes/absente {}"] == 404
    assert sum(status == 200 for status in statuses.values()) == len(RECORDED) - 2
    weighted = json.loads(RECORDED['pondere-v2 /economies/bilan {"par": "preset"}']["body"])
    assert "en_usd" in weighted["total"] and weighted["groupes"]["rapide"]
    ranked = json.loads(RECORDED['pondere-v2 /economies/classement {"min": "3", "par": "preset", '
                      '"selon": "net"}']["body"])
    assert ranked["comparaisons"] and "en_usd" in ranked["groupes"][0]


ADDITIONS = (
    # The classement says what its taux counts (ADR-0165), after "comparaisons".
    re.compile(r',"perimetre":"demandes dont la delegation est arrivee"'),
    # Every bilan carries the rapprochement, null while no relevé is folded (ADR-0177).
    re.compile(r',"rapprochement":null'),
)
"""The documented additions since 92db6ba, taken out of today's bytes before comparing."""


def without_additions(answer: dict[str, Any]) -> dict[str, Any]:
    """``answer`` with ``ADDITIONS`` taken out of its body, once each at most."""
    body = answer["body"]
    for addition in ADDITIONS:
        body = addition.sub("", body, count=1)
    return {**answer, "body": body}


FIGURES = ("cle", "demandes", "evites", "pilotage", "corrections", "net", "net_par_demande",
           "taux_reprise", "suffisant", "rang", "en_usd")
"""What a classement group says that ADR-0166 did not change: its sums, ratios and rank.
Its intervals and the verdicts are taken over sessions since (and it says ``sessions``);
its pairs held ``indiscernable`` say ``a_completer`` (ADR-0167)."""


def classement_figures(body: str) -> list[dict[str, Any]]:
    """A classement answer's groups, each cut to ``FIGURES``."""
    groupes: list[dict[str, Any]] = json.loads(body)["groupes"]
    cut = [{k: g[k] for k in FIGURES if k in g} for g in groupes]
    for g in cut:  # its interval in USD is an interval too
        if "en_usd" in g:
            g["en_usd"] = {k: v for k, v in g["en_usd"].items()
                           if k != "intervalle_net_par_demande"}
    return cut


def test_today_answers_what_the_release_before_answered(tmp_path: Path) -> None:
    today = answers({"MIAM_ECONOMIES_TZ": "Europe/Paris"}, fixture_copy(tmp_path))
    assert sorted(today) == sorted(RECORDED)
    classements = [name for name in RECORDED if "/classement " in name
                   and RECORDED[name]["status"] == 200]
    differ = [name for name in RECORDED if name not in classements
              and without_additions(today[name]) != RECORDED[name]]
    assert not differ, differ
    json_ones = [name for name in classements if '"format": "csv"' not in name]
    assert json_ones and all(
        classement_figures(today[name]["body"]) == classement_figures(RECORDED[name]["body"])
        for name in json_ones)
    # The additions are there, where documented.
    assert all('"perimetre"' in today[name]["body"] for name in today
               if "/classement " in name and today[name]["status"] == 200
               and '"format": "csv"' not in name)
