"""Unit tests of ``domain.formulas`` (SPEC.md, "The plugin's formulas") and of
``domain.bilan.Figures`` (SPEC.md, "The bilan")."""

from __future__ import annotations

import math
from typing import Any

import pytest

from miam_economies.domain.bilan import Figures
from miam_economies.domain.events import (
    Correction,
    Delegation,
    Pilotage,
    Usage,
    from_payload,
)
from miam_economies.domain.formulas import (
    FORMULES,
    V1,
    cout_correction,
    cout_pilotage,
    js_round_div,
)
from tests.conftest import EXAMPLE_BATCH, EXAMPLE_CORRECTION

# The contract's example batch, and the README's correction.
EXAMPLE_DELEGATION, EXAMPLE_PILOTAGE = EXAMPLE_BATCH["evenements"]
A_CORRECTION = EXAMPLE_CORRECTION


def example_usage(**changes: int) -> Usage:
    counters = dict(EXAMPLE_PILOTAGE["usage"]) | changes
    return Usage(**counters)


# --- js_round_div -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("numerator", "expected"),
    [(5, 1), (15, 2), (25, 3), (35, 4), (4, 0), (6, 1), (0, 0), (10000, 1000), (10004, 1000),
     (10005, 1001)],
)
def test_js_round_div_by_ten_rounds_halves_up_like_math_round(
    numerator: int, expected: int
) -> None:
    assert js_round_div(numerator, 10) == expected


def test_js_round_div_of_25_by_10_is_3_where_python_round_gives_2() -> None:
    assert round(25 / 10) == 2
    assert js_round_div(25, 10) == 3


@pytest.mark.parametrize(
    ("numerator", "expected"),
    # Math.round(-2.5) == -2, Math.round(-1.5) == -1, Math.round(-2.6) == -3.
    [(-25, -2), (-15, -1), (-26, -3), (-24, -2), (-5, 0)],
)
def test_js_round_div_of_negative_halves_goes_toward_plus_infinity(
    numerator: int, expected: int
) -> None:
    assert js_round_div(numerator, 10) == expected


@pytest.mark.parametrize("numerator", range(-60, 61))
def test_js_round_div_matches_floor_of_quotient_plus_half(numerator: int) -> None:
    # Math.round(x) is floor(x + 0.5); exact on these small values.
    assert js_round_div(numerator, 10) == math.floor(numerator / 10 + 0.5)


def test_js_round_div_is_exact_beyond_float_precision() -> None:
    big = 2**53 - 1
    assert js_round_div(big * 10 + 5, 10) == big + 1


# --- cout_pilotage / cout_correction ------------------------------------------------------


def test_cout_pilotage_of_the_contract_example_is_2000() -> None:
    # 800 input + 0 cache_creation + 200 output + round(10000 / 10) = 2000.
    assert cout_pilotage(example_usage()) == 2000


def test_cout_pilotage_rounds_a_cache_read_of_25_up_to_3() -> None:
    # 800 + 0 + 200 + Math.round(2.5) = 1003.
    assert cout_pilotage(example_usage(cache_read_input_tokens=25)) == 1003


def test_cout_pilotage_counts_cache_creation_in_full() -> None:
    assert cout_pilotage(example_usage(cache_creation_input_tokens=300)) == 2300


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (Usage(0, 0, 0, 0), 0),
        (Usage(1, 0, 0, 0), 1),
        (Usage(0, 1, 0, 0), 1),
        (Usage(0, 0, 4, 0), 0),
        (Usage(0, 0, 5, 0), 1),
        (Usage(0, 0, 0, 1), 1),
        (Usage(7, 11, 15, 13), 7 + 11 + 2 + 13),
    ],
)
def test_cout_pilotage_is_input_plus_output_plus_creation_plus_a_tenth_of_reads(
    usage: Usage, expected: int
) -> None:
    assert cout_pilotage(usage) == expected


def test_cout_correction_of_ten_read_and_five_written_is_15() -> None:
    assert cout_correction(10, 5) == 15


@pytest.mark.parametrize(("lus", "ecrits", "expected"), [(0, 0, 0), (0, 7, 7), (120, 0, 120)])
def test_cout_correction_is_read_plus_written(lus: int, ecrits: int, expected: int) -> None:
    assert cout_correction(lus, ecrits) == expected


# --- V1 -----------------------------------------------------------------------------------


def _with(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    payload = {**base, **changes}
    return payload


def test_v1_is_registered_under_its_name() -> None:
    assert V1.name == "v1"
    assert FORMULES["v1"] is V1


def test_v1_takes_the_plugins_evites_as_sent_even_when_its_counters_disagree() -> None:
    estimation = dict(EXAMPLE_DELEGATION["estimation"], evites=7)
    delegation = from_payload(_with(EXAMPLE_DELEGATION, estimation=estimation))
    assert isinstance(delegation, Delegation)

    assert V1.evites(delegation) == 7


def test_v1_takes_negative_evites_as_sent() -> None:
    estimation = dict(EXAMPLE_DELEGATION["estimation"], evites=-250)
    delegation = from_payload(_with(EXAMPLE_DELEGATION, estimation=estimation))
    assert isinstance(delegation, Delegation)

    assert V1.evites(delegation) == -250


def test_v1_takes_the_plugins_pilotage_cout_as_sent_not_recomputed_from_usage() -> None:
    pilotage = from_payload(_with(EXAMPLE_PILOTAGE, cout=1234))
    assert isinstance(pilotage, Pilotage)

    assert cout_pilotage(pilotage.usage) == 2000
    assert V1.cout_pilotage(pilotage) == 1234


def test_v1_takes_the_plugins_correction_cout_as_sent() -> None:
    correction = from_payload(_with(A_CORRECTION, cout=99))
    assert isinstance(correction, Correction)

    assert V1.cout_correction(correction) == 99


def test_v1_on_the_contract_example_gives_4900_and_2000() -> None:
    delegation = from_payload(EXAMPLE_DELEGATION)
    pilotage = from_payload(EXAMPLE_PILOTAGE)
    assert isinstance(delegation, Delegation)
    assert isinstance(pilotage, Pilotage)

    assert V1.evites(delegation) == 4900
    assert V1.cout_pilotage(pilotage) == 2000


# --- Figures ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("figures", "net"),
    [
        (Figures(), 0),
        (Figures(delegations=1, evites=4900, pilotage=2000, corrections=0), 2900),
        (Figures(delegations=2, evites=1000, pilotage=300, corrections=200), 500),
        (Figures(delegations=1, evites=100, pilotage=300, corrections=50), -250),
        (Figures(delegations=1, evites=-500, pilotage=0, corrections=15), -515),
    ],
)
def test_net_is_evites_minus_pilotage_minus_corrections(figures: Figures, net: int) -> None:
    assert figures.net == net


def test_taux_reprise_is_zero_when_nothing_was_corrected_and_something_saved() -> None:
    taux = Figures(delegations=1, evites=4900, pilotage=2000, corrections=0).taux_reprise

    assert taux is not None
    assert taux == 0.0
    assert isinstance(taux, float)


@pytest.mark.parametrize(
    ("corrections", "evites", "taux"),
    [(490, 4900, 0.1), (15, 60, 0.25), (200, 100, 2.0), (1, 3, 1 / 3)],
)
def test_taux_reprise_is_corrections_over_evites(
    corrections: int, evites: int, taux: float
) -> None:
    assert Figures(evites=evites, corrections=corrections).taux_reprise == pytest.approx(taux)


@pytest.mark.parametrize("evites", [0, -1, -500])
@pytest.mark.parametrize("corrections", [0, 15])
def test_taux_reprise_is_null_when_evites_is_zero_or_negative(
    evites: int, corrections: int
) -> None:
    assert Figures(evites=evites, corrections=corrections).taux_reprise is None


def test_as_dict_lists_the_six_figures_in_the_contracts_order() -> None:
    figures = Figures(delegations=1, evites=4900, pilotage=2000, corrections=0)

    as_dict = figures.as_dict()

    assert list(as_dict) == [
        "delegations", "evites", "pilotage", "corrections", "net", "taux_reprise",
    ]
    assert as_dict == {
        "delegations": 1, "evites": 4900, "pilotage": 2000, "corrections": 0, "net": 2900,
        "taux_reprise": 0.0,
    }


def test_as_dict_of_no_events_is_zeros_and_null_taux() -> None:
    assert Figures().as_dict() == {
        "delegations": 0, "evites": 0, "pilotage": 0, "corrections": 0, "net": 0,
        "taux_reprise": None,
    }


def test_figures_add_figure_by_figure() -> None:
    total = Figures(1, 4900, 0, 0) + Figures(0, 0, 2000, 0) + Figures(0, 0, 0, 15)

    assert total == Figures(delegations=1, evites=4900, pilotage=2000, corrections=15)
