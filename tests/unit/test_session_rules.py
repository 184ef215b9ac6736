"""The pure rules of a session (SPEC, "Claude Code's own record: relevés, sessions, and the
share saved"; ADR-0176, ADR-0177): the cost rule on a reply, the share saved, each
verdict at its bounds, the rapprochement's order and the bilan's summary. Expected values
are worked out by hand here, from the SPEC's words, not through the product's code."""

from __future__ import annotations

import pytest

from miam_economies.domain.events import Usage
from miam_economies.domain.formulas import PONDERE, V1, V1_SERVEUR
from miam_economies.domain.rapprochement import (
    VERDICTS,
    PilotageAgent,
    SessionRapprochee,
    rapprochement,
    resume,
    verdict,
)
from miam_economies.domain.releves import Observation, ReplyKey
from miam_economies.domain.sessions import (
    Consommation,
    claude_of,
    cout_reponse,
    part_economisee,
)


def reply(key: str, i: int = 0, o: int = 0, cr: int = 0, cc: int = 0,
          agent: str | None = None, stop: str | None = "end_turn",
          model: str | None = "claude-haiku-4-5") -> Observation:
    return Observation(ReplyKey("s", "message_id", key), Usage(i, o, cr, cc),
                       "2026-11-20T09:00:00.000Z", model, agent, stop, False)


def releve(cout: int, incompletes: int = 0) -> Consommation:
    return Consommation(1, incompletes, Usage(cout, 0, 0, 0), cout)


@pytest.mark.parametrize(("cache_read", "rounded"), [
    (0, 0), (4, 0), (5, 1), (14, 1), (15, 2), (25, 3), (27000, 2700)])
def test_the_cost_rule_rounds_the_cache_read_tenth_halves_up(cache_read: int,
                                                             rounded: int) -> None:
    # input + cache_creation + output + Math.round(cache_read / 10): 2.5 -> 3, 0.5 -> 1.
    r = reply("m", i=6, o=240, cr=cache_read, cc=3400)
    assert cout_reponse(r, V1) == cout_reponse(r, V1_SERVEUR) == 6 + 3400 + 240 + rounded


def test_a_weighted_formula_weighs_a_reply_at_its_models_prices() -> None:
    r = reply("m", i=1000, o=1000, model="claude-sonnet-4-5")
    # Sonnet 4.5 is pondere-v1's reference: input 1, output 5 (ADR-0071's table).
    assert cout_reponse(r, PONDERE) == 1000 + 5 * 1000


def test_claude_sums_replies_per_agent_and_counts_the_incomplete() -> None:
    claude = claude_of([reply("a", i=10, o=5), reply("b", i=100, cr=15, agent="x"),
                        reply("c", o=7, agent="x", stop=None)], V1)
    assert claude is not None
    assert claude.total.reponses == 3 and claude.total.incompletes == 1
    assert claude.total.cout == 15 + 102 + 7
    assert claude.total.usage == Usage(110, 12, 15, 0)
    assert claude.par_agent["x"].cout == 109 and claude.par_agent["x"].incompletes == 1
    document = claude.as_dict()
    assert list(document["par_agent"]) == ["(principal)", "x"]
    assert document["par_agent"]["(principal)"]["cout"] == 15
    assert claude_of([], V1) is None


def test_the_share_saved_is_net_over_cost_plus_net() -> None:
    claude = claude_of([reply("a", i=7100)], V1)
    assert part_economisee(2900, claude) == 2900 / 10_000
    assert part_economisee(0, claude) == 0.0
    assert part_economisee(-100, claude) == -100 / 7000
    assert part_economisee(-7100, claude) is None  # denominator 0
    assert part_economisee(-8000, claude) is None  # denominator < 0
    assert part_economisee(2900, None) is None


@pytest.mark.parametrize(("plugin", "cout", "expected"), [
    (100, 100, "concorde"), (110, 100, "concorde"), (90, 100, "concorde"),
    (111, 100, "plugin_au_dessus"), (89, 100, "plugin_sous_releve"),
    # 1 % of 5,000 is 50: the wider bound.
    (5050, 5000, "concorde"), (4950, 5000, "concorde"),
    (5051, 5000, "plugin_au_dessus"), (4949, 5000, "plugin_sous_releve"),
    (0, 0, "concorde"), (11, 0, "plugin_au_dessus"),
])
def test_each_verdict_at_its_bound(plugin: int, cout: int, expected: str) -> None:
    assert verdict(plugin, releve(cout)) == expected


def test_no_releve_is_non_observe_and_an_incomplete_one_says_so_first() -> None:
    assert verdict(100, None) == "non_observe"
    assert verdict(100, releve(100, incompletes=1)) == "releve_incomplet"


def test_the_rapprochement_is_per_agent_with_a_pilotage_sorted_and_gives_the_gap() -> None:
    claude = claude_of([reply("a", i=1000, agent="b2"), reply("b", i=50, agent="a1",
                                                              stop=None),
                        reply("c", i=999)], V1)
    pilotages = {"z9": PilotageAgent(1, Usage(5, 0, 0, 0), 5),
                 "b2": PilotageAgent(2, Usage(900, 0, 0, 0), 900),
                 "a1": PilotageAgent(1, Usage(40, 0, 0, 0), 40)}
    entries = [e.as_dict() for e in rapprochement(pilotages, claude)]
    assert [e["agent_id"] for e in entries] == ["a1", "b2", "z9"]
    assert [e["verdict"] for e in entries] == ["releve_incomplet", "plugin_sous_releve",
                                               "non_observe"]
    assert [e["ecart"] for e in entries] == [-10, -100, None]
    assert entries[2]["releve"] is None
    assert entries[1]["plugin"] == {"tours": 2, "usage": {
        "input_tokens": 900, "output_tokens": 0, "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0}, "cout": 900}


def test_the_bilans_summary_counts_every_verdict_and_sums_the_compared_gaps() -> None:
    one = claude_of([reply("a", i=1000, agent="b2"), reply("b", i=3000)], V1)
    two = claude_of([reply("c", i=500, agent="a1", stop=None)], V1)
    assert one is not None and two is not None
    sessions = [
        SessionRapprochee(1000, one, rapprochement(
            {"b2": PilotageAgent(1, Usage(1200, 0, 0, 0), 1200),
             "c3": PilotageAgent(1, Usage(1, 0, 0, 0), 1)}, one)),
        SessionRapprochee(-200, two, rapprochement(
            {"a1": PilotageAgent(1, Usage(400, 0, 0, 0), 400)}, two)),
    ]
    summary = resume(sessions)
    assert summary == {"sessions": 2, "agents": 3, "concorde": 0,
                       "plugin_sous_releve": 0, "plugin_au_dessus": 1,
                       "releve_incomplet": 1, "non_observe": 1,
                       "ecart": 200,  # the incomplete one's -100 is left out
                       "depense_claude": 4500, "part_economisee": 800 / 5300}
    assert set(VERDICTS) <= set(summary)
    empty = resume([])
    assert empty["sessions"] == 0 and empty["part_economisee"] is None
