"""``domain.anomalies.anomaly_values``: each anomaly kind with the plugin's value and the
server's recomputation, so that a listing tells a plugin bug from a formula's (review
2026-12-03-newcomer, section 8: "the kind, not the two values that differ")."""

from __future__ import annotations

from miam_economies.domain.anomalies import anomaly_values
from tests.unit.test_named_formulas import (
    correction,
    delegation,
    main_agent_delegation,
    pilotage,
)


def test_a_clean_event_has_no_anomaly_values() -> None:
    for clean in (delegation(), pilotage(), correction()):
        assert anomaly_values(clean) == {}


def test_every_wrong_thing_of_a_delegation_comes_with_both_values() -> None:
    d = delegation({"evites": 1, "lus": 1}, par_subagent=False, id="claude-code:x")

    assert anomaly_values(d) == {
        # evites recomputed from the server's counts: lus 4000 + ecrits 900.
        "evites": {"plugin": 1, "serveur": 4900},
        "estimation": {"plugin": {"lus": 1, "ecrits": 900, "rendus": 900},
                       "serveur": {"lus": 4000, "ecrits": 900, "rendus": 900}},
        "par_subagent": {"plugin": False, "serveur": True},
        "id": {"plugin": "claude-code:x", "serveur": "claude-code:dem-9c8a4d0189"},
    }


def test_a_main_agents_evites_is_recomputed_as_the_main_agent() -> None:
    # agent_id null: 4000 + 900 - (100 + 900) = 3900.
    assert anomaly_values(main_agent_delegation({"evites": 3901})) == {
        "evites": {"plugin": 3901, "serveur": 3900}}


def test_a_pilotages_and_a_corrections_cout_and_id_come_with_both_values() -> None:
    p = pilotage(cout=1, id="claude-code:x")
    assert anomaly_values(p) == {
        "cout": {"plugin": 1, "serveur": 2000},
        "id": {"plugin": "claude-code:x",
               "serveur": "claude-code:c009a419-e17b-4036-9531-ac29eaa481d4:a1:t"}}
    c = correction(tokens_lus=30, cout=490)
    assert anomaly_values(c) == {"cout": {"plugin": 490, "serveur": 520}}
