"""Unit tests of ``domain.classement`` and ``domain.intervalles`` (SPEC.md, "Ranking
presets: the classement"; ADR-0081): the figures and intervals against a recomputation
from the demandes themselves (``statistics`` on exact fractions, ``scipy.stats`` for t and
the gamma distribution), the order by either criterion and the flags, ties, nulls,
degenerate groups, the parameters' rules, determinism and narrowing."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from fractions import Fraction
from math import exp, log, sqrt

import pytest
from scipy import stats

from miam_economies.domain.classement import (
    CRITERES,
    DEFAULT_MIN,
    ClassementError,
    check_parametres,
    classement,
    parse_min,
)
from miam_economies.domain.echantillon import Echantillon
from miam_economies.domain.errors import MiamEconomiesError
from miam_economies.domain.intervalles import (
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


def expected_taux_interval(rows: Rows) -> tuple[float, float | None]:
    """ADR-0081's taux interval written on the demandes: the corrections' sum Y as m =
    Y²/Σc² equal events of weight Σc²/Y, gamma bounds by scipy.stats; the evites' sum X
    within X(1 ± t·s_X/X), as a factor on 1/X; the two relative spreads added in
    quadrature on the log scale."""
    n = len(rows)
    e = [Fraction(r[0]) for r in rows]
    c = [Fraction(r[2]) for r in rows]
    x, y = sum(e), sum(c)
    v = sum(k * k for k in c)
    m, w = float(y * y / v), float(v / y)
    log_low = log(float(y) / (w * stats.gamma.ppf(0.025, m)))
    log_high = log(w * stats.gamma.ppf(0.975, m + 1) / float(y))
    spread = t975(n) * sqrt(float(n * statistics.variance(e))) / float(x)
    ratio = float(y / x)
    low = ratio * exp(-sqrt(log_low ** 2 + log(1 + spread) ** 2))
    if spread >= 1:
        return low, None
    return low, ratio * exp(sqrt(log_high ** 2 + log(1 - spread) ** 2))


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


@pytest.mark.parametrize("rows", [RAPIDE, PRECIS, PRECIS[:3]])
def test_taux_interval_is_the_gamma_interval_widened_by_the_evites(rows: Rows) -> None:
    low, high = intervalle_taux_reprise(Echantillon.of(rows)) or (None, None)
    expected_low, expected_high = expected_taux_interval(rows)
    assert low == pytest.approx(expected_low, rel=1e-9)
    assert high == pytest.approx(expected_high, rel=1e-9)


def test_taux_interval_has_no_high_end_while_evites_are_not_clearly_positive() -> None:
    # Evites barely above zero for their spread: the ratio is not bounded above.
    rows = [(50_000, 0, 900), (-48_000, 0, 100), (1_000, 0, 400), (-2_000, 0, 50)]
    low, high = intervalle_taux_reprise(Echantillon.of(rows)) or (None, None)
    assert high is None and expected_taux_interval(rows)[1] is None
    assert low == pytest.approx(expected_taux_interval(rows)[0], rel=1e-9)
    assert 0 < low <= 1450 / 1000


def test_a_few_corrections_leave_much_more_room_above_the_figure_than_below() -> None:
    # One correction in twenty demandes: rare large reworks may not have shown yet.
    rows = [(5_000, 1_000, 0)] * 19 + [(5_000, 1_000, 2_000)]
    low, high = intervalle_taux_reprise(Echantillon.of(rows)) or (0.0, 0.0)
    ratio = 2_000 / 100_000
    assert high is not None and high - ratio > 3 * (ratio - low) > 0


def test_by_net_sufficient_groups_lead_by_net_per_demande_and_only_they_are_ranked() -> None:
    groupes = {
        "rapide": Echantillon.of(RAPIDE),                         # 11 demandes, net 5,827/d
        "precis": Echantillon.of(PRECIS * 2),                     # 10, 14,400/d
        "lent": Echantillon.of([(1_000, 900, 0)] * 12),           # 12, 100/d
        "nouveau": Echantillon.of([(90_000, 1_000, 0)] * 3),      # 3, best but few
        "vide": Echantillon.of([(500, 100, 0)]),                  # 1
    }
    out = classement(groupes, 10, "net")
    assert [(g.cle, g.suffisant, g.rang) for g in out] == [
        ("precis", True, 1), ("rapide", True, 2), ("lent", True, 3),
        ("nouveau", False, None), ("vide", False, None)]
    assert CRITERES["net"] == "net_par_demande"
    assert [g.cle for g in classement(groupes, 1, "net")][:2] == ["nouveau", "precis"]
    assert all(g.suffisant for g in classement(groupes, 1, "net"))


def test_by_taux_the_least_rework_ranks_first_and_a_null_taux_is_unranked() -> None:
    groupes = {
        "rapide": Echantillon.of(RAPIDE),                         # taux 5,400 / 99,400
        "precis": Echantillon.of(PRECIS * 2),                     # 29,000 / 224,000
        "lent": Echantillon.of([(1_000, 900, 0)] * 12),           # 0
        "perdu": Echantillon.of([(-1_000, 0, 10)] * 12),          # evites < 0: no taux
        "nouveau": Echantillon.of([(90_000, 1_000, 0)] * 3),      # 0, but few
    }
    out = classement(groupes, 10)
    assert [(g.cle, g.suffisant, g.rang) for g in out] == [
        ("lent", True, 1), ("rapide", True, 2), ("precis", True, 3),
        ("nouveau", False, None), ("perdu", True, None)]
    assert CRITERES["taux"] == "taux_reprise" and DEFAULT_MIN == 30
    assert [g.cle for g in classement(groupes, 1)] == [
        "lent", "nouveau", "rapide", "precis", "perdu"]


def test_ties_keep_the_order_of_the_keys() -> None:
    same = Echantillon.of([(1_000, 0, 0), (3_000, 0, 0)])
    for selon in CRITERES:
        out = classement({"b": same, "c": same, "a": same,
                          "z": Echantillon.of([(2_000, 0, 0)])}, 2, selon)
        assert [(g.cle, g.rang) for g in out] == [("a", 1), ("b", 2), ("c", 3), ("z", None)]


def test_order_compares_exact_means_where_floats_are_equal() -> None:
    big = 2**60
    lower = Echantillon.of([(big, 0, 0)])                               # mean 2^60
    higher = Echantillon.of([(big, 0, 0), (big, 0, 0), (big + 1, 0, 0)])  # 2^60 + 1/3
    assert higher.net / higher.demandes == lower.net / lower.demandes  # as floats
    assert [g.cle for g in classement({"a": lower, "b": higher}, 1, "net")] == ["b", "a"]
    low_taux = Echantillon.of([(3 * big + 1, 0, big)])  # taux just under 1/3
    third = Echantillon.of([(3 * big, 0, big)])
    assert low_taux.corrections / low_taux.evites == third.corrections / third.evites
    assert [g.cle for g in classement({"a": third, "b": low_taux}, 1)] == ["b", "a"]


def test_sums_past_two_to_the_63_stay_exact() -> None:
    rows = [(2**62 + 1, 3, 1), (2**62 + 7, 5, 2), (2**53 - 1, 0, 0)]
    (groupe,) = classement({"x": Echantillon.of(rows)}, 1)
    assert groupe.evites == 2**63 + 2**53 + 7 and groupe.net == 2**63 + 2**53 - 4
    assert groupe.intervalle_net_par_demande is not None


def test_intervals_are_null_below_two_demandes_and_taux_without_evites() -> None:
    (one,) = classement({"x": Echantillon.of([(5_000, 100, 10)])}, 1)
    assert one.taux_reprise == 0.002
    assert one.intervalle_net_par_demande is None and one.intervalle_taux_reprise is None
    for evites in ([2, -2], [100, -100], [-50, 20]):
        rows = [(e, 10, 5) for e in evites]
        (groupe,) = classement({"x": Echantillon.of(rows)}, 1)
        assert groupe.taux_reprise is None and groupe.intervalle_taux_reprise is None
        assert groupe.intervalle_net_par_demande is not None


def test_a_group_whose_figures_are_all_alike_has_no_interval_yet() -> None:
    # SPEC: "a bound the data cannot give yet is null, never a zero-width interval".
    (alike,) = classement({"x": Echantillon.of([(7_000, 1_000, 700)] * 5)}, 1)
    assert alike.intervalle_net_par_demande is None
    assert alike.intervalle_taux_reprise is None  # corrections proportional to evites
    proportional = [(1_000 * k, 10 * k, 100 * k) for k in range(1, 6)]
    (groupe,) = classement({"x": Echantillon.of(proportional)}, 1)
    assert groupe.intervalle_taux_reprise is None
    assert groupe.intervalle_net_par_demande is not None  # net differs: it has a spread
    # Sessions whose demandes differ but whose means are alike: no spread between them.
    sessions = [[(5_000, 0, 0), (3_000, 0, 0)], [(4_000, 0, 0)] * 2, [(6_000, 0, 0),
                                                                     (2_000, 0, 0)]]
    (same,) = classement({"x": Echantillon.of_sessions(sessions)}, 1)
    assert same.intervalle_net_par_demande is not None  # the per-demande spread bounds it


def test_equal_corrections_on_equal_evites_give_garwoods_interval() -> None:
    # Five equal corrections among ten equal evites: the taux is known up to how many
    # corrections ten demandes happen to hold, Garwood's exact Poisson interval for 5.
    rows = [(7_000, 1_000, 700)] * 5 + [(7_000, 1_000, 0)] * 5
    (groupe,) = classement({"x": Echantillon.of(rows)}, 1)
    assert groupe.intervalle_taux_reprise == pytest.approx(
        (0.05 * stats.gamma.ppf(0.025, 5) / 5, 0.05 * stats.gamma.ppf(0.975, 6) / 5),
        rel=1e-12)


def test_no_correction_yet_gives_taux_zero_and_no_high_end() -> None:
    # Nothing bounds the size of corrections not seen yet: no zero-width claim.
    rows = [(4_000, 0, 0), (60_000, 0, 0), (-59_000, 0, 0)]
    assert intervalle_taux_reprise(Echantillon.of(rows)) == (0.0, None)
    assert intervalle_taux_reprise(Echantillon.of([RAPIDE[0], RAPIDE[2]])) == (0.0, None)


def test_a_group_with_no_demande_is_left_out_and_min_must_be_positive() -> None:
    emptied = Echantillon.of(RAPIDE) - Echantillon.of(RAPIDE)
    assert emptied == Echantillon()
    assert classement({"x": emptied, "y": Echantillon.of(PRECIS)}, 1)[0].cle == "y"
    assert len(classement({"x": emptied}, 1)) == 0
    with pytest.raises(ClassementError, match="min"):
        classement({}, 0)
    with pytest.raises(ClassementError, match="selon"):
        classement({}, 1, "prix")
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
        "cle", "demandes", "sessions", "evites", "pilotage", "corrections", "net",
        "net_par_demande",
        "taux_reprise", "intervalle_net_par_demande", "intervalle_taux_reprise",
        "suffisant", "rang", "derive"]
    assert isinstance(document["intervalle_net_par_demande"], list)
    assert json.loads(json.dumps(document, allow_nan=False)) == document


def test_intervals_narrow_as_a_group_gathers_demandes() -> None:
    widths_net, widths_taux = [], []
    for copies in (2, 4, 8, 32, 128, 512):
        e = Echantillon.of(list(RAPIDE) * copies)
        low, high = intervalle_net_par_demande(e) or (0.0, 0.0)
        widths_net.append(high - low)
        low, high = intervalle_taux_reprise(e) or (0.0, 0.0)
        widths_taux.append(math.inf if high is None else high - low)
    for widths in (widths_net, widths_taux):
        assert all(a > b > 0 for a, b in zip(widths, widths[1:], strict=False)), widths
    # Past a few dozen demandes the width goes as 1/√n.
    assert widths_net[-2] / widths_net[-1] == pytest.approx(2, rel=0.01)


def test_one_demande_replaced_by_its_new_figures() -> None:
    # A pilotage arrives for a demande already counted: the fold swaps its contribution.
    before = Echantillon.of(RAPIDE)
    after = before - Echantillon.demande(4_900, 2_000, 0) + Echantillon.demande(4_900, 2_500, 0)
    assert after == Echantillon.of([(4_900, 2_500, 0), *RAPIDE[1:]])


@pytest.mark.parametrize(("par", "selon", "apparier", "minimum", "message"), [
    ("jour", "taux", None, 1, "par must be"), ("modele", "taux", None, 1, "par must be"),
    ("demande", "net", None, 1, "par must be"), ("", "taux", None, 1, "par must be"),
    ("journal.", "taux", None, 1, "par must be"),
    ("preset", "prix", None, 1, "selon must be taux or net"),
    ("preset", "", None, 1, "selon must be"),
    ("preset", "taux", "preset", 1, "apparier must differ from par"),
    ("preset", "taux", "journal.preset", 1, "apparier must differ"),
    ("journal.preset", "taux", "preset", 1, "apparier must differ"),
    *((("preset", "taux", field, 1, "apparier must be a journal field"))
      for field in ("client", "jour", "modele", "demande", "", "journal.")),
    ("preset", "taux", None, 0, "min must be"),
])
def test_refused_parameters_name_the_parameter(par: str, selon: str, apparier: str | None,
                                               minimum: int, message: str) -> None:
    with pytest.raises(ClassementError, match=message) as refused:
        check_parametres(par, selon, apparier, minimum)
    assert refused.value.parametre == message.split()[0]  # what an edge points at
    assert isinstance(refused.value, MiamEconomiesError)


@pytest.mark.parametrize(("text", "minimum"), [("1", 1), ("30", 30), ("007", 7), ("0", 0),
                                               ("000", 0), ("9" * 18, 10**18 - 1)])
def test_parse_min_reads_an_integer_written_in_digits(text: str, minimum: int) -> None:
    assert parse_min(text) == minimum


@pytest.mark.parametrize(("text", "message"), [
    ("-1", "min must be an integer >= 1, not '-1'"), ("", "min must be an integer >= 1, not ''"),
    ("1.5", "min must be an integer >= 1, not '1.5'"),
    ("٣", "min must be an integer >= 1, not '٣'"),  # a digit, not an ASCII one
    ("9" * 19, f"min must be an integer >= 1, not '{'9' * 19}'"),
    ("9" * 30, f"min must be an integer >= 1, not '{'9' * 20}'")])
def test_parse_min_refuses_anything_else_naming_min(text: str, message: str) -> None:
    with pytest.raises(ClassementError) as refused:
        parse_min(text)
    assert (refused.value.parametre, str(refused.value)) == ("min", message)


@pytest.mark.parametrize(("par", "apparier"), [
    ("preset", None), ("client", "test_id"), ("preset", "test_id"),
    ("journal.client", "journal.jour"), ("format", "journal.test_id")])
def test_sound_parameters_pass(par: str, apparier: str | None) -> None:
    for selon in CRITERES:
        check_parametres(par, selon, apparier, 1)


def test_a_host_catches_the_refusals_by_a_public_name() -> None:
    import miam_economies

    assert miam_economies.ClassementError is ClassementError
    assert issubclass(ClassementError, ValueError)
    assert "ClassementError" in miam_economies.__all__
