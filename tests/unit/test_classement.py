"""Unit tests of ``domain.classement`` (SPEC.md, "Ranking presets: the classement";
ADR-0072): the figures and intervals against a recomputation from the demandes themselves
(``statistics`` on exact fractions, ``scipy.stats`` for t), the order and flags, ties, nulls,
degenerate groups, determinism and narrowing."""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from fractions import Fraction
from math import exp, log, sqrt

import pytest
from scipy import stats

from miam_economies.domain.classement import (
    CRITERE,
    Echantillon,
    classement,
    intervalle_net_par_demande,
    intervalle_taux_reprise,
)

Rows = Sequence[tuple[int, int, int]]  # (evites, pilotage, corrections) per demande, tokens

RAPIDE: Rows = [(4900, 2000, 0), (12_000, 3_100, 1_200), (800, 1_500, 0), (30_000, 2_600, 0),
                (7_300, 900, 2_500), (2_200, 2_200, 0), (15_500, 4_000, 300), (-300, 700, 0),
                (9_000, 1_000, 0), (6_100, 2_400, 900), (3_000, 1_100, 0)]
PRECIS: Rows = [(20_000, 5_000, 4_000), (18_000, 6_500, 0), (25_000, 4_000, 8_000),
                (9_000, 3_000, 500), (40_000, 7_000, 2_000)]


def t975(n: int) -> float:
    return float(stats.t.ppf(0.975, n - 1))


def expected_net_interval(rows: Rows) -> tuple[float, float]:
    """mean ± t·s/√n from the demandes' own nets (statistics on Fractions: exact)."""
    nets = [Fraction(e - p - c) for e, p, c in rows]
    mean = statistics.mean(nets)
    half = t975(len(rows)) * sqrt(statistics.variance(nets) / len(rows))
    return float(mean) - half, float(mean) + half


def moments(rows: Rows) -> tuple[Fraction, Fraction, Fraction, Fraction, Fraction]:
    """Means of evites and corrections, their variances and covariance (exact)."""
    e = [Fraction(r[0]) for r in rows]
    c = [Fraction(r[2]) for r in rows]
    return (statistics.mean(e), statistics.mean(c), statistics.variance(e),
            statistics.variance(c),
            sum(((a - statistics.mean(e)) * (b - statistics.mean(c))
                 for a, b in zip(e, c, strict=True)), Fraction(0)) / (len(rows) - 1))


def expected_fieller(rows: Rows) -> tuple[float, float]:
    """Fieller's interval for mean(c)/mean(e), written on the means (not the sums)."""
    n = len(rows)
    me, mc, vee, vcc, vec = moments(rows)
    q = Fraction(t975(n)) ** 2 / n
    a, b, c = me * me - q * vee, me * mc - q * vec, mc * mc - q * vcc
    assert a > 0
    root = sqrt(float(b * b - a * c))
    return max(0.0, (float(b) - root) / float(a)), (float(b) + root) / float(a)


def test_figures_are_exact_sums_and_their_ratios() -> None:
    (groupe,) = classement({"rapide": Echantillon.of(RAPIDE)}, 10)
    assert groupe.demandes == 11
    assert groupe.evites == sum(r[0] for r in RAPIDE)
    assert groupe.pilotage == sum(r[1] for r in RAPIDE)
    assert groupe.corrections == sum(r[2] for r in RAPIDE)
    assert groupe.net == sum(e - p - c for e, p, c in RAPIDE)
    assert groupe.net_par_demande == groupe.net / 11
    assert groupe.taux_reprise == groupe.corrections / groupe.evites


@pytest.mark.parametrize("rows", [RAPIDE, PRECIS, RAPIDE[:2]])
def test_net_interval_is_the_t_interval_of_the_demandes(rows: Rows) -> None:
    low, high = intervalle_net_par_demande(Echantillon.of(rows)) or (None, None)
    assert (low, high) == pytest.approx(expected_net_interval(rows), rel=1e-12)


@pytest.mark.parametrize("rows", [RAPIDE, PRECIS])
def test_taux_interval_is_fiellers_when_evites_are_clearly_positive(rows: Rows) -> None:
    interval = intervalle_taux_reprise(Echantillon.of(rows))
    assert interval == pytest.approx(expected_fieller(rows), rel=1e-9)


def test_taux_interval_falls_back_to_the_log_ratio_when_fieller_is_unbounded() -> None:
    # Evites barely above zero for their spread: Fieller's set is the whole line.
    rows = [(50_000, 0, 900), (-48_000, 0, 100), (1_000, 0, 400), (-2_000, 0, 50)]
    me, mc, vee, vcc, vec = moments(rows)
    assert me * me <= Fraction(t975(4)) ** 2 * vee / 4
    ratio = float(mc / me)
    half = t975(4) * sqrt(float((vcc / mc**2 + vee / me**2 - 2 * vec / (me * mc)) / 4))
    low, high = intervalle_taux_reprise(Echantillon.of(rows)) or (None, None)
    assert (low, high) == pytest.approx((ratio * exp(-half), ratio * exp(half)), rel=1e-9)
    assert log(high / ratio) == pytest.approx(log(ratio / low))  # symmetric on the log scale


def test_sufficient_groups_lead_by_net_per_demande_and_only_they_are_ranked() -> None:
    groupes = {
        "rapide": Echantillon.of(RAPIDE),                         # 11 demandes, net 5,827/d
        "precis": Echantillon.of(PRECIS * 2),                     # 10, 14,400/d
        "lent": Echantillon.of([(1_000, 900, 0)] * 12),           # 12, 100/d
        "nouveau": Echantillon.of([(90_000, 1_000, 0)] * 3),      # 3, best but few
        "vide": Echantillon.of([(500, 100, 0)]),                  # 1
    }
    out = classement(groupes, 10)
    assert [(g.cle, g.suffisant, g.rang) for g in out] == [
        ("precis", True, 1), ("rapide", True, 2), ("lent", True, 3),
        ("nouveau", False, None), ("vide", False, None)]
    assert CRITERE == "net_par_demande"
    assert [g.cle for g in classement(groupes, 1)][:2] == ["nouveau", "precis"]
    assert all(g.suffisant for g in classement(groupes, 1))


def test_ties_keep_the_order_of_the_keys() -> None:
    same = Echantillon.of([(1_000, 0, 0), (3_000, 0, 0)])
    out = classement({"b": same, "c": same, "a": same, "z": Echantillon.of([(2_000, 0, 0)])},
                     2)
    assert [(g.cle, g.rang) for g in out] == [("a", 1), ("b", 2), ("c", 3), ("z", None)]


def test_order_compares_exact_means_where_floats_are_equal() -> None:
    big = 2**60
    lower = Echantillon.of([(big, 0, 0)])                               # mean 2^60
    higher = Echantillon.of([(big, 0, 0), (big, 0, 0), (big + 1, 0, 0)])  # 2^60 + 1/3
    assert higher.net / higher.demandes == lower.net / lower.demandes  # as floats
    assert [g.cle for g in classement({"a": lower, "b": higher}, 1)] == ["b", "a"]


def test_sums_past_two_to_the_63_stay_exact() -> None:
    rows = [(2**62 + 1, 3, 1), (2**62 + 7, 5, 2), (2**53 - 1, 0, 0)]
    (groupe,) = classement({"x": Echantillon.of(rows)}, 1)
    assert groupe.evites == 2**63 + 2**53 + 7 and groupe.net == 2**63 + 2**53 - 4
    assert groupe.intervalle_net_par_demande is not None


def test_intervals_are_null_below_two_demandes_and_taux_without_evites() -> None:
    (one,) = classement({"x": Echantillon.of([(5_000, 100, 10)])}, 1)
    assert one.taux_reprise == 0.002
    assert one.intervalle_net_par_demande is None and one.intervalle_taux_reprise is None
    for evites in ([0, 0], [100, -100], [-50, 20]):
        rows = [(e, 10, 5) for e in evites]
        (groupe,) = classement({"x": Echantillon.of(rows)}, 1)
        assert groupe.taux_reprise is None and groupe.intervalle_taux_reprise is None
        assert groupe.intervalle_net_par_demande is not None


def test_all_equal_demandes_give_zero_width_intervals_at_the_figures() -> None:
    (groupe,) = classement({"x": Echantillon.of([(7_000, 1_000, 700)] * 5)}, 1)
    assert groupe.intervalle_net_par_demande == (5_300.0, 5_300.0)
    assert groupe.intervalle_taux_reprise == (0.1, 0.1)


def test_no_correction_at_all_gives_taux_zero_and_a_zero_interval() -> None:
    rows = [(4_000, 0, 0), (60_000, 0, 0), (-59_000, 0, 0)]  # Fieller unbounded too
    assert intervalle_taux_reprise(Echantillon.of(rows)) == (0.0, 0.0)
    assert intervalle_taux_reprise(Echantillon.of([RAPIDE[0], RAPIDE[2]])) == (0.0, 0.0)


def test_a_group_with_no_demande_is_left_out_and_min_must_be_positive() -> None:
    emptied = Echantillon.of(RAPIDE) - Echantillon.of(RAPIDE)
    assert emptied == Echantillon()
    assert classement({"x": emptied, "y": Echantillon.of(PRECIS)}, 1)[0].cle == "y"
    assert len(classement({"x": emptied}, 1)) == 0
    with pytest.raises(ValueError, match="min"):
        classement({}, 0)
    with pytest.raises(ValueError, match="demandes"):
        classement({"x": Echantillon(demandes=-1)}, 1)


def test_same_sums_same_document_whatever_the_insertion_order() -> None:
    groupes = {"rapide": Echantillon.of(RAPIDE), "precis": Echantillon.of(PRECIS)}
    first = [g.as_dict() for g in classement(groupes, 3)]
    again = [g.as_dict() for g in classement(dict(reversed(groupes.items())), 3)]
    shuffled = {"precis": Echantillon.of(PRECIS[::-1]), "rapide": Echantillon.of(RAPIDE[::-1])}
    assert first == again == [g.as_dict() for g in classement(shuffled, 3)]


def test_the_wire_shape_has_the_spec_fields_in_order_and_is_strict_json() -> None:
    (groupe,) = classement({"rapide": Echantillon.of(RAPIDE)}, 10)
    document = groupe.as_dict()
    assert list(document) == [
        "cle", "demandes", "evites", "pilotage", "corrections", "net", "net_par_demande",
        "taux_reprise", "intervalle_net_par_demande", "intervalle_taux_reprise",
        "suffisant", "rang"]
    assert isinstance(document["intervalle_net_par_demande"], list)
    assert json.loads(json.dumps(document, allow_nan=False)) == document


def test_intervals_narrow_as_a_group_gathers_demandes() -> None:
    widths_net, widths_taux = [], []
    for copies in (1, 2, 4, 8, 32, 128):
        e = Echantillon.of(list(RAPIDE) * copies)
        low, high = intervalle_net_par_demande(e) or (0.0, 0.0)
        widths_net.append(high - low)
        low, high = intervalle_taux_reprise(e) or (0.0, 0.0)
        widths_taux.append(high - low)
    for widths in (widths_net, widths_taux):
        assert all(a > b > 0 for a, b in zip(widths, widths[1:], strict=False)), widths
    # Past a few dozen demandes the width goes as 1/√n.
    assert widths_net[-2] / widths_net[-1] == pytest.approx(2, rel=0.01)


def test_one_demande_replaced_by_its_new_figures() -> None:
    # A pilotage arrives for a demande already counted: the fold swaps its contribution.
    before = Echantillon.of(RAPIDE)
    after = before - Echantillon.demande(4_900, 2_000, 0) + Echantillon.demande(4_900, 2_500, 0)
    assert after == Echantillon.of([(4_900, 2_500, 0), *RAPIDE[1:]])
