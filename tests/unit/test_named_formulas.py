"""Unit tests of the named formulas (``domain.formulas``: ``FORMULES``, ``V1``,
``V1_SERVEUR``, ``PONDERE``, ``evites_serveur``, ``js_round_div``), of the price table
(``domain.tarifs``) and of the anomalies (``domain.anomalies``). Issue 4, "Formulas".

Events are built with ``from_payload`` from deep copies of the contract's example batch and
of the README's correction, then modified: the shared examples are never mutated.
"""

from __future__ import annotations

import copy
import math
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from miam_economies.domain.anomalies import anomalies
from miam_economies.domain.events import Correction, Delegation, Pilotage, from_payload
from miam_economies.domain.formulas import (
    FORMULES,
    PONDERE,
    V1,
    V1_SERVEUR,
    evites_serveur,
    js_round_div,
    poids,
)
from miam_economies.domain.tarifs import RATIOS_PAR_DEFAUT, TARIFS, Tarif, ratios, tarif
from tests.conftest import EXAMPLE_BATCH, EXAMPLE_CORRECTION

KINDS = ("evites", "estimation", "par_subagent", "cout", "id")
"""The anomaly kinds of the wire format, in the order the SPEC reports them."""


def math_round(value: Fraction) -> int:
    """JavaScript's ``Math.round`` of an exact fraction, the tests' own statement: halves
    toward +infinity (ADR-0005)."""
    return math.floor(value + Fraction(1, 2))

# --- Builders -----------------------------------------------------------------------------
#
# The contract's example delegation: agent_id "a1", par_subagent true, retour "complet",
# tokens_entree 4100, tokens_sortie 900, estimation lus 4000, ecrits 900, consigne 100,
# rendus 900, evites 4900. Its pilotage: model "claude-haiku-5-5", usage input 800,
# output 200, cache_read 10000, cache_creation 0, cout 2000. The README's correction:
# tokens_lus 0, tokens_ecrits 490, cout 490.


def delegation(estimation: dict[str, Any] | None = None, **fields: Any) -> Delegation:
    """The contract's example delegation with ``fields`` and ``estimation`` fields changed."""
    payload = copy.deepcopy(EXAMPLE_BATCH["evenements"][0])
    payload.update(fields)
    payload["estimation"].update(estimation or {})
    event = from_payload(payload)
    assert isinstance(event, Delegation)
    return event


def main_agent_delegation(estimation: dict[str, Any] | None = None,
                          **fields: Any) -> Delegation:
    """The example delegation made by the main agent, with a consistent plugin estimate:
    evites = 4000 + 900 - (100 + 900) = 3900."""
    return delegation({"evites": 3900, **(estimation or {})},
                      **{"agent_id": None, "par_subagent": False, **fields})


def pilotage(usage: dict[str, Any] | None = None, **fields: Any) -> Pilotage:
    """The contract's example pilotage with ``fields`` and ``usage`` counters changed."""
    payload = copy.deepcopy(EXAMPLE_BATCH["evenements"][1])
    payload.update(fields)
    payload["usage"].update(usage or {})
    event = from_payload(payload)
    assert isinstance(event, Pilotage)
    return event


def correction(**fields: Any) -> Correction:
    """The README's correction with ``fields`` changed."""
    payload = copy.deepcopy(EXAMPLE_CORRECTION)
    payload.update(fields)
    event = from_payload(payload)
    assert isinstance(event, Correction)
    return event


def test_builders_leave_the_shared_examples_untouched() -> None:
    delegation({"evites": 1}, agent_id=None)
    pilotage({"input_tokens": 1}, cout=1)
    correction(cout=1)

    assert EXAMPLE_BATCH["evenements"][0]["agent_id"] == "a1"
    assert EXAMPLE_BATCH["evenements"][0]["estimation"]["evites"] == 4900
    assert EXAMPLE_BATCH["evenements"][1]["usage"]["input_tokens"] == 800
    assert EXAMPLE_BATCH["evenements"][1]["cout"] == 2000
    assert EXAMPLE_CORRECTION["cout"] == 490


# --- Registry -----------------------------------------------------------------------------


def test_registry_holds_v1_v1_serveur_and_pondere_v1() -> None:
    assert {"v1", "v1-serveur", "pondere-v1"} <= set(FORMULES)
    assert FORMULES["v1"] is V1
    assert FORMULES["v1-serveur"] is V1_SERVEUR
    assert FORMULES["pondere-v1"] is PONDERE


@pytest.mark.parametrize("name", sorted(FORMULES))
def test_every_registered_formula_is_named_by_its_key(name: str) -> None:
    assert FORMULES[name].name == name


# --- js_round_div of fractions ------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (Fraction(5, 2), 3),  # Math.round(2.5) == 3 (Python's round gives 2)
        (Fraction(-5, 2), -2),  # Math.round(-2.5) == -2 (Python's round gives -2 too)
        (Fraction(1, 2), 1),  # Math.round(0.5) == 1 (Python's round gives 0)
        (Fraction(-1, 2), 0),  # Math.round(-0.5) == -0
        (Fraction(7, 2), 4),
        (Fraction(-7, 2), -3),
        (Fraction(12, 5), 2),  # 2.4
        (Fraction(13, 5), 3),  # 2.6
        (Fraction(-13, 5), -3),  # -2.6
        (Fraction(-12, 5), -2),  # -2.4
        (Fraction(4), 4),
    ],
)
def test_js_round_div_rounds_fractions_like_math_round(value: Fraction, expected: int
                                                        ) -> None:
    result = js_round_div(value.numerator, value.denominator)

    assert result == expected == math_round(value)
    assert type(result) is int


def test_js_round_div_of_5_by_2_is_3_where_python_round_gives_2() -> None:
    assert round(Fraction(5, 2)) == 2
    assert js_round_div(5, 2) == 3


# --- evites_serveur -----------------------------------------------------------------------


def test_evites_serveur_of_the_contract_example_is_4900() -> None:
    # agent_id "a1": lus = max(0, 4100 - 100) = 4000; ecrits = 900; evites = 4900.
    assert evites_serveur(delegation()) == 4900


def test_evites_serveur_under_a_subagent_is_lus_plus_ecrits_from_the_raw_counters() -> None:
    # The plugin's lus, ecrits and evites are wrong; the server recomputes from the
    # counters: lus = max(0, 3100 - 100) = 3000; ecrits = tokens_sortie = 700;
    # agent_id "a1": evites = 3000 + 700 = 3700.
    d = delegation({"lus": 1, "ecrits": 2, "evites": 3}, tokens_entree=3100, tokens_sortie=700)

    assert evites_serveur(d) == 3700


def test_evites_serveur_clamps_lus_at_zero_when_the_consigne_exceeds_the_input() -> None:
    # lus = max(0, 50 - 100) = 0; ecrits = 900; agent_id "a1": evites = 0 + 900 = 900.
    d = delegation(tokens_entree=50)

    assert evites_serveur(d) == 900


def test_evites_serveur_of_the_main_agent_subtracts_consigne_and_rendus() -> None:
    # agent_id null, complet: lus = 4000; ecrits = rendus = 900; consigne = 100;
    # evites = 4000 + 900 - (100 + 900) = 3900.
    assert evites_serveur(main_agent_delegation()) == 3900


def test_evites_serveur_complet_reads_back_ecrits_whatever_the_plugins_rendus() -> None:
    # agent_id null, complet, plugin rendus 50 (wrong): rendus = ecrits = 900;
    # evites = 4000 + 900 - (100 + 900) = 3900 (with the plugin's 50 it would be 4750).
    d = main_agent_delegation({"rendus": 50})

    assert evites_serveur(d) == 3900


def test_evites_serveur_apercu_uses_the_plugins_rendus() -> None:
    # agent_id null, apercu, plugin rendus 50: evites = 4000 + 900 - (100 + 50) = 4750.
    d = main_agent_delegation({"rendus": 50}, retour="apercu")

    assert evites_serveur(d) == 4750


def test_evites_serveur_of_the_main_agent_may_be_negative() -> None:
    # agent_id null, tokens_entree 50, tokens_sortie 30, consigne 100:
    # lus = max(0, 50 - 100) = 0; ecrits = rendus = 30; evites = 0 + 30 - (100 + 30) = -100.
    d = main_agent_delegation(tokens_entree=50, tokens_sortie=30)

    assert evites_serveur(d) == -100


def test_evites_serveur_follows_agent_id_not_par_subagent_when_a_subagent_claims_main() -> None:
    # agent_id "a1" but par_subagent false: still a subagent, evites = 4000 + 900 = 4900.
    d = delegation(par_subagent=False)

    assert evites_serveur(d) == 4900


def test_evites_serveur_follows_agent_id_not_par_subagent_when_main_claims_subagent() -> None:
    # agent_id null but par_subagent true: still the main agent,
    # evites = 4000 + 900 - (100 + 900) = 3900.
    d = main_agent_delegation(par_subagent=True)

    assert evites_serveur(d) == 3900


# --- V1_SERVEUR ---------------------------------------------------------------------------


def test_v1_serveur_evites_recomputes_instead_of_taking_the_plugins_evites() -> None:
    # Plugin says 1; the counters give 4000 + 900 = 4900.
    assert V1_SERVEUR.evites(delegation({"evites": 1})) == 4900


def test_v1_serveur_cout_pilotage_of_the_contract_example_is_2000() -> None:
    # 800 + 0 + 200 + Math.round(10000 / 10) = 2000.
    assert V1_SERVEUR.cout_pilotage(pilotage()) == 2000


def test_v1_serveur_cout_pilotage_recomputes_from_usage_whatever_the_plugins_cout() -> None:
    # Plugin says 7; 800 + 0 + 200 + 1000 = 2000.
    assert V1_SERVEUR.cout_pilotage(pilotage(cout=7)) == 2000


def test_v1_serveur_cout_pilotage_rounds_a_cache_read_of_25_up_to_3() -> None:
    # 800 + 0 + 200 + Math.round(2.5) = 800 + 200 + 3 = 1003 (Python's round: 1002).
    p = pilotage({"cache_read_input_tokens": 25}, cout=1002)

    assert V1_SERVEUR.cout_pilotage(p) == 1003


def test_v1_serveur_cout_pilotage_counts_cache_creation_in_full() -> None:
    # 800 + 300 + 200 + 1000 = 2300.
    assert V1_SERVEUR.cout_pilotage(pilotage({"cache_creation_input_tokens": 300})) == 2300


def test_v1_serveur_cout_correction_is_lus_plus_ecrits_whatever_the_plugins_cout() -> None:
    # Plugin says 1; 30 + 490 = 520.
    c = correction(tokens_lus=30, cout=1)

    assert V1_SERVEUR.cout_correction(c) == 520


# --- V1 -----------------------------------------------------------------------------------


def test_v1_returns_the_plugins_wrong_evites_unchanged() -> None:
    # The counters give 4900; the plugin says 1234.
    assert V1.evites(delegation({"evites": 1234})) == 1234


def test_v1_returns_the_plugins_wrong_pilotage_cout_unchanged() -> None:
    # The usage gives 2000; the plugin says 7.
    assert V1.cout_pilotage(pilotage(cout=7)) == 7


def test_v1_returns_the_plugins_wrong_correction_cout_unchanged() -> None:
    # tokens_lus + tokens_ecrits = 490; the plugin says 1.
    assert V1.cout_correction(correction(cout=1)) == 1


# --- PONDERE ------------------------------------------------------------------------------


def test_pondere_evites_of_the_contract_example_weights_written_tokens_five_times() -> None:
    # Subagent a1, lus 4000, ecrits 900: 4000 * 1 + 900 * 5 = 8500.
    assert PONDERE.evites(delegation()) == 8500


def test_pondere_evites_of_the_main_agent_subtracts_five_consigne_and_rendus() -> None:
    # agent_id null: 4000 + 5 * 900 - (5 * 100 + 900) = 8500 - 1400 = 7100.
    assert PONDERE.evites(main_agent_delegation()) == 7100


def test_pondere_evites_of_the_main_agent_apercu_subtracts_its_rendus_once() -> None:
    # agent_id null, apercu, rendus 50: 4000 + 4500 - (500 + 50) = 7950.
    d = main_agent_delegation({"rendus": 50, "evites": 4750}, retour="apercu")

    assert PONDERE.evites(d) == 7950


def test_pondere_pilotage_of_an_unknown_model_uses_the_default_ratios() -> None:
    # "claude-haiku-5-5" is not in the table: 800 + 5 * 200 + 0.1 * 10000 = 2800.
    assert tarif("claude-haiku-5-5") is None
    assert PONDERE.cout_pilotage(pilotage()) == 2800


def test_pondere_pilotage_weights_cache_writes_a_quarter_more_by_default() -> None:
    # Unknown model, cache_creation 400: 800 + 1000 + 1.25 * 400 + 1000 = 3300.
    assert PONDERE.cout_pilotage(pilotage({"cache_creation_input_tokens": 400})) == 3300


def test_pondere_pilotage_of_a_known_model_weighs_at_its_prices_in_reference_tokens() -> None:
    # claude-3-haiku: 0.25, 1.25, 0.30, 0.03 USD/MTok; the unit is a claude-sonnet-4-5 input
    # token (3 USD/MTok): weights 1/12, 5/12, 1/10, 1/100. Usage 800 / 200 / 10000 read /
    # 100 written: 800/12 + 1000/12 + 10 + 100 = 150 + 110 = 260.
    p = pilotage({"cache_creation_input_tokens": 100}, modele="claude-3-haiku-20240307")

    assert PONDERE.cout_pilotage(p) == 260


def test_an_opus_turn_weighs_five_times_a_sonnet_turn() -> None:
    usage = {"cache_creation_input_tokens": 100}
    sonnet = PONDERE.cout_pilotage(pilotage(usage, modele="claude-sonnet-4-5"))
    opus = PONDERE.cout_pilotage(pilotage(usage, modele="claude-opus-4-1-20250805"))

    assert opus == 5 * sonnet


def test_pondere_pilotage_of_claude_sonnet_4_5_uses_its_own_price_ratios() -> None:
    # claude-sonnet-4-5: 3, 15, 3.75, 0.30 USD/MTok, ratios 1, 5, 1.25, 0.1:
    # 800 + 5 * 200 + 1.25 * 100 + 0.1 * 10000 = 2925 (raw USD prices would give far more).
    p = pilotage({"cache_creation_input_tokens": 100}, modele="claude-sonnet-4-5-20250929")

    assert PONDERE.cout_pilotage(p) == 2925


def test_pondere_pilotage_ignores_the_plugins_cout() -> None:
    assert PONDERE.cout_pilotage(pilotage(cout=1)) == 2800


def test_pondere_correction_costs_read_plus_five_times_written() -> None:
    # README correction: 0 + 5 * 490 = 2450.
    assert PONDERE.cout_correction(correction()) == 2450


def test_pondere_correction_counts_read_tokens_once_whatever_the_plugins_cout() -> None:
    # 30 + 5 * 490 = 2480; the plugin's cout (1) plays no part.
    assert PONDERE.cout_correction(correction(tokens_lus=30, cout=1)) == 2480


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        # Unknown model, only 25 cache reads: 0.1 * 25 = 2.5 -> 3 (Python's round: 2).
        ({"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 25}, 3),
        # 800 + 5 * 200 + 0.1 * 25 = 1802.5 -> 1803 (Python's round: 1802).
        ({"cache_read_input_tokens": 25}, 1803),
        # 0 + 0 + 1.25 * 2 + 0 = 2.5 -> 3.
        ({"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0,
          "cache_creation_input_tokens": 2}, 3),
        # 1.25 * 6 = 7.5 -> 8 (Python's round also 8: checks the other parity).
        ({"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0,
          "cache_creation_input_tokens": 6}, 8),
        # 0.1 * 24 = 2.4 -> 2.
        ({"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 24}, 2),
    ],
)
def test_pondere_pilotage_is_an_int_rounding_halves_up(
    usage: dict[str, int], expected: int
) -> None:
    result = PONDERE.cout_pilotage(pilotage(usage))

    assert result == expected
    assert type(result) is int


def test_pondere_figures_are_ints() -> None:
    for result in (PONDERE.evites(delegation()), PONDERE.evites(main_agent_delegation()),
                   PONDERE.cout_pilotage(pilotage()), PONDERE.cout_correction(correction())):
        assert type(result) is int


# --- tarifs -------------------------------------------------------------------------------


def test_tarif_matches_the_longest_prefix_opus_4_1_not_opus_4() -> None:
    # Both rows carry the same prices, so identity tells them apart.
    row = tarif("claude-opus-4-1-20250805")

    assert row is TARIFS["claude-opus-4-1"]
    assert row is not TARIFS["claude-opus-4"]


def test_tarif_matches_the_longest_prefix_opus_4_5_not_opus_4() -> None:
    row = tarif("claude-opus-4-5-20251101")

    assert row is TARIFS["claude-opus-4-5"]
    assert row == Tarif.of("5", "25", "6.25", "0.50")


def test_tarif_of_a_dated_opus_4_is_the_opus_4_row() -> None:
    assert tarif("claude-opus-4-20250514") is TARIFS["claude-opus-4"]


def test_tarif_of_a_dated_sonnet_4_5_is_the_sonnet_4_5_row() -> None:
    assert tarif("claude-sonnet-4-5-20250929") is TARIFS["claude-sonnet-4-5"]


def test_tarif_of_claude_3_haiku_is_not_claude_3_5_haiku() -> None:
    assert tarif("claude-3-haiku-20240307") == Tarif.of("0.25", "1.25", "0.30", "0.03")
    assert tarif("claude-3-5-haiku-20241022") == Tarif.of("0.80", "4", "1", "0.08")


@pytest.mark.parametrize("modele", ["claude-haiku-5-5", "unknown", "", "gpt-4o", "opus-4"])
def test_tarif_of_an_unknown_model_is_none(modele: str) -> None:
    assert tarif(modele) is None


@pytest.mark.parametrize("modele", [None, "unknown", "claude-haiku-5-5"])
def test_ratios_of_no_or_an_unknown_model_are_the_default_ratios(modele: str | None) -> None:
    w = ratios(modele)

    assert w == RATIOS_PAR_DEFAUT
    assert (w.input, w.output, w.cache_write, w.cache_read) == (
        Fraction(1), Fraction(5), Fraction(5, 4), Fraction(1, 10))


@pytest.mark.parametrize("modele", sorted(TARIFS))
def test_ratios_of_a_known_model_are_its_prices_in_reference_input_tokens(modele: str) -> None:
    row, unit = TARIFS[modele], TARIFS["claude-sonnet-4-5"].input
    w = ratios(modele + "-20990101")

    assert w == Tarif(row.input / unit, row.output / unit, row.cache_write / unit,
                      row.cache_read / unit)


def test_a_model_name_with_another_suffix_is_unknown() -> None:
    assert tarif("claude-opus-4-6") is None
    assert tarif("claude-opus-4-latest") is TARIFS["claude-opus-4"]
    assert ratios("claude-opus-4-6") == RATIOS_PAR_DEFAUT


def _all_price_rows() -> list[Tarif]:
    return [*TARIFS.values(), RATIOS_PAR_DEFAUT, ratios(None),
            *(ratios(modele) for modele in TARIFS)]


@pytest.mark.parametrize("row", _all_price_rows())
def test_prices_and_ratios_are_exact_fractions_never_floats(row: Tarif) -> None:
    for value in (row.input, row.output, row.cache_write, row.cache_read):
        assert type(value) is Fraction


def test_a_decimal_price_is_read_exactly() -> None:
    # 0.30 as a float is not 3/10; as a Fraction from the string it is.
    assert TARIFS["claude-sonnet-4-5"].cache_read == Fraction(3, 10)
    assert Tarif.of("0.30", "0.08", "18.75", "1.50") == Tarif(
        Fraction(3, 10), Fraction(2, 25), Fraction(75, 4), Fraction(3, 2))


# --- anomalies: clean events --------------------------------------------------------------


def test_the_contract_example_delegation_has_no_anomaly() -> None:
    assert anomalies(delegation()) == ()


def test_the_contract_example_pilotage_has_no_anomaly() -> None:
    assert anomalies(pilotage()) == ()


def test_the_readme_correction_has_no_anomaly() -> None:
    assert anomalies(correction()) == ()


def test_a_consistent_main_agent_delegation_has_no_anomaly() -> None:
    # agent_id null, par_subagent false, evites 4000 + 900 - (100 + 900) = 3900.
    assert anomalies(main_agent_delegation()) == ()


def test_an_apercu_with_rendus_other_than_ecrits_has_no_anomaly() -> None:
    # apercu: rendus is the answer's length (50), not ecrits; subagent evites = 4900.
    assert anomalies(delegation({"rendus": 50}, retour="apercu")) == ()


def test_a_main_agent_apercu_with_consistent_evites_has_no_anomaly() -> None:
    # agent_id null, apercu, rendus 50: evites = 4000 + 900 - (100 + 50) = 4750.
    d = main_agent_delegation({"rendus": 50, "evites": 4750}, retour="apercu")

    assert anomalies(d) == ()


# --- anomalies: one thing wrong -----------------------------------------------------------


@pytest.mark.parametrize("evites", [4899, 4901])
def test_evites_off_by_one_is_an_evites_anomaly_alone(evites: int) -> None:
    assert anomalies(delegation({"evites": evites})) == ("evites",)


def test_main_agent_evites_off_by_one_is_an_evites_anomaly_alone() -> None:
    assert anomalies(main_agent_delegation({"evites": 3901})) == ("evites",)


def test_a_wrong_lus_is_an_estimation_anomaly_alone() -> None:
    # max(0, 4100 - 100) = 4000, not 3999; evites is recomputed from the counters.
    assert anomalies(delegation({"lus": 3999})) == ("estimation",)


def test_an_unclamped_negative_lus_is_an_estimation_anomaly_alone() -> None:
    # tokens_entree 50: lus = max(0, 50 - 100) = 0, not -50; evites = 0 + 900 = 900.
    d = delegation({"lus": -50, "evites": 900}, tokens_entree=50)

    assert anomalies(d) == ("estimation",)


def test_ecrits_other_than_tokens_sortie_is_an_estimation_anomaly_alone() -> None:
    # ecrits 899 with tokens_sortie 900; rendus follows ecrits (899) so only ecrits is off.
    assert anomalies(delegation({"ecrits": 899, "rendus": 899})) == ("estimation",)


def test_ecrits_other_than_tokens_sortie_in_an_apercu_is_an_estimation_anomaly() -> None:
    # apercu: rendus (50) need not equal ecrits, but ecrits must still be tokens_sortie.
    assert anomalies(delegation({"ecrits": 899, "rendus": 50}, retour="apercu")) == (
        "estimation",)


def test_rendus_other_than_ecrits_with_retour_complet_is_an_estimation_anomaly_alone() -> None:
    # Subagent: evites 4000 + 900 does not involve rendus.
    assert anomalies(delegation({"rendus": 899})) == ("estimation",)


def test_par_subagent_true_with_agent_id_null_is_a_par_subagent_anomaly_alone() -> None:
    # agent_id null: evites = 4000 + 900 - (100 + 900) = 3900, as sent.
    assert anomalies(main_agent_delegation(par_subagent=True)) == ("par_subagent",)


def test_par_subagent_false_with_agent_id_set_is_a_par_subagent_anomaly_alone() -> None:
    # agent_id "a1": evites = 4000 + 900 = 4900, as sent.
    assert anomalies(delegation(par_subagent=False)) == ("par_subagent",)


@pytest.mark.parametrize("cout", [1999, 2001, 0])
def test_a_pilotage_cout_other_than_the_formula_is_a_cout_anomaly_alone(cout: int) -> None:
    assert anomalies(pilotage(cout=cout)) == ("cout",)


def test_a_pilotage_cout_rounded_the_python_way_is_a_cout_anomaly() -> None:
    # cache_read 25: the formula gives 800 + 200 + Math.round(2.5) = 1003; 1002 is wrong.
    assert anomalies(pilotage({"cache_read_input_tokens": 25}, cout=1002)) == ("cout",)
    assert anomalies(pilotage({"cache_read_input_tokens": 25}, cout=1003)) == ()


def test_a_correction_cout_other_than_lus_plus_ecrits_is_a_cout_anomaly_alone() -> None:
    assert anomalies(correction(cout=491)) == ("cout",)
    assert anomalies(correction(tokens_lus=30, cout=490)) == ("cout",)
    assert anomalies(correction(tokens_lus=30, cout=520)) == ()


@pytest.mark.parametrize(
    "event_id",
    ["claude-code:dem-other", "dem-9c8a4d0189", "other-client:dem-9c8a4d0189",
     "claude-code:dem-9c8a4d0189:x", ""],
)
def test_a_delegation_id_not_client_colon_demande_id_is_an_id_anomaly_alone(
    event_id: str
) -> None:
    assert anomalies(delegation(id=event_id)) == ("id",)


@pytest.mark.parametrize(
    "event_id",
    [
        "claude-code:c009a419-e17b-4036-9531-ac29eaa481d4:a1:other-turn",
        "claude-code:c009a419-e17b-4036-9531-ac29eaa481d4:a2:t",
        "claude-code:other-session:a1:t",
        "other-client:c009a419-e17b-4036-9531-ac29eaa481d4:a1:t",
        "claude-code:c009a419-e17b-4036-9531-ac29eaa481d4:a1",
    ],
)
def test_a_pilotage_id_not_client_session_agent_turn_is_an_id_anomaly_alone(
    event_id: str
) -> None:
    assert anomalies(pilotage(id=event_id)) == ("id",)


@pytest.mark.parametrize(
    "event_id",
    [
        "claude-code:c009a419-e17b-4036-9531-ac29eaa481d4:toolu_02",
        "claude-code:other-session:toolu_01",
        "other-client:c009a419-e17b-4036-9531-ac29eaa481d4:toolu_01",
        "claude-code:toolu_01",
        "claude-code:dem-9c8a4d0189",
    ],
)
def test_a_correction_id_not_client_session_tool_use_is_an_id_anomaly_alone(
    event_id: str
) -> None:
    assert anomalies(correction(id=event_id)) == ("id",)


def test_an_id_following_changed_fields_is_not_an_anomaly() -> None:
    # The pattern is built from the event's own fields, not from the example's values.
    d = delegation(id="other:dem-1", client="other", demande_id="dem-1")
    p = pilotage(id="other:s:a9:t9", client="other", session_id="s", agent_id="a9",
                 turn_id="t9")
    c = correction(id="other:s:toolu_9", client="other", session_id="s",
                   tool_use_id="toolu_9")

    assert (anomalies(d), anomalies(p), anomalies(c)) == ((), (), ())


# --- anomalies: several at once -----------------------------------------------------------


def test_every_wrong_thing_of_a_delegation_is_reported_in_kinds_order() -> None:
    # evites 1 (should be 4900), lus 1 (should be 4000), par_subagent false with agent_id
    # "a1", id without the demande_id.
    d = delegation({"evites": 1, "lus": 1}, par_subagent=False, id="claude-code:x")

    found = anomalies(d)

    assert found == ("evites", "estimation", "par_subagent", "id")
    assert found == tuple(kind for kind in KINDS if kind in found)


def test_every_wrong_thing_of_a_pilotage_is_reported_in_kinds_order() -> None:
    assert anomalies(pilotage(cout=1, id="claude-code:x")) == ("cout", "id")


def test_every_wrong_thing_of_a_correction_is_reported_in_kinds_order() -> None:
    assert anomalies(correction(cout=1, id="claude-code:x")) == ("cout", "id")


@pytest.mark.parametrize(
    "not_an_event",
    [copy.deepcopy(EXAMPLE_BATCH["evenements"][0]), None, "delegation", 42],
)
def test_anomalies_of_something_that_is_not_an_event_raises_type_error(
    not_an_event: Any
) -> None:
    with pytest.raises(TypeError):
        anomalies(not_an_event)


def test_a_model_name_matches_a_price_row_only_up_to_a_dash() -> None:
    from miam_economies.domain.tarifs import tarif

    assert tarif("claude-opus-40") is None
    assert tarif("claude-opus-4") is not None
    assert tarif("claude-opus-4-20250514") == tarif("claude-opus-4")


def test_pondere_recomputes_the_delegations_counts_from_the_raw_counters() -> None:
    from miam_economies.domain.formulas import PONDERE

    payload = copy.deepcopy(EXAMPLE_BATCH["evenements"][0])
    payload["estimation"]["lus"] = 1  # a wrong plugin figure: lus is 4100 - 100 = 4000
    assert PONDERE.evites(from_payload(payload)) == 4000 + 5 * 900


_TOKENS = st.integers(min_value=-(2**53), max_value=2**53)


@given(modele=st.sampled_from([None, "inconnu", *TARIFS]), input=_TOKENS, output=_TOKENS,
       cache_write=_TOKENS, cache_read=_TOKENS)
def test_integer_weights_round_exactly_as_the_price_fractions(
        modele: str | None, input: int, output: int, cache_write: int,
        cache_read: int) -> None:
    w = ratios(modele)
    exact = math_round(input * w.input + output * w.output + cache_write * w.cache_write
                     + cache_read * w.cache_read)
    assert poids(modele).arrondi(input, output, cache_write, cache_read) == exact
