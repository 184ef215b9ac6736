"""Unit tests of ``domain.comparaisons`` (SPEC.md, "Ranking presets: the classement";
ADR-0081): every pair's difference, Holm-adjusted interval and verdict against a
recomputation from the demandes themselves (``statistics`` and ``scipy.stats``), the size
floor, the claims held back and their reasons, and the paired comparison on common
tasks."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from fractions import Fraction

import pytest
from scipy import stats

from miam_economies.domain.appariees import Tache, comparaisons_appariees
from miam_economies.domain.comparaisons import comparaisons
from miam_economies.domain.ecarts import MIN_CORRECTIONS, NIVEAU_VERDICT, Comparaison
from miam_economies.domain.echantillon import Echantillon
from miam_economies.domain.intervalles import variance_net_par_demande
from tests.classement_reference import assert_same, expected_pairs, independent


def draw(rng: random.Random, n: int, shift: int, corrected: float) -> list[tuple[int, ...]]:
    return [(rng.randint(1_000, 30_000) + shift, rng.randint(0, 4_000),
             rng.randint(100, 6_000) if rng.random() < corrected else 0) for _ in range(n)]


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("selon", ["net", "taux"])
def test_every_pair_equals_the_recomputation(seed: int, selon: str) -> None:
    rng = random.Random(seed)
    groups = {f"g{i}": draw(rng, rng.choice([12, 40, 150]), rng.choice([0, 2_000, 9_000]),
                            rng.choice([0.0, 0.05, 0.4, 0.6]))
              for i in range(rng.randint(2, 5))}
    got = [c.as_dict() for c in comparaisons(
        [(k, Echantillon.of(v)) for k, v in groups.items()], selon)]
    assert_same(got, expected_pairs(independent(groups), selon))


def test_clearly_separated_groups_are_told_apart_both_ways() -> None:
    rng = random.Random(3)
    good = draw(rng, 200, 20_000, 0.2)
    bad = draw(rng, 200, 0, 0.9)
    groups = [("bon", Echantillon.of(good)), ("mauvais", Echantillon.of(bad))]
    (net,) = comparaisons(groups, "net")
    assert (net.verdict, net.raison) == ("a_devant", None) and net.difference > 0
    (taux,) = comparaisons(groups, "taux")
    assert taux.verdict == "a_devant" and taux.intervalle[1] < 0  # type: ignore[index,operator]
    (reversed_,) = comparaisons(groups[::-1], "taux")
    assert reversed_.verdict == "b_devant" and reversed_.difference > 0  # type: ignore[operator]


def test_a_group_without_correction_is_never_claimed_on_taux() -> None:
    rng = random.Random(4)
    clean = [(e, p, 0) for e, p, _ in draw(rng, 300, 0, 0)]
    worse = draw(rng, 300, 0, 0.9)
    (pair,) = comparaisons([("propre", Echantillon.of(clean)),
                            ("repris", Echantillon.of(worse))], "taux")
    assert pair.verdict == "indiscernable"
    assert pair.raison == "no correction yet in propre"
    assert pair.intervalle is not None and pair.intervalle[1] is None  # its taux: unbounded
    (pair,) = comparaisons([("repris", Echantillon.of(worse)),
                            ("propre", Echantillon.of(clean))], "taux")
    assert pair.intervalle is not None and pair.intervalle[0] is None
    (net,) = comparaisons([("propre", Echantillon.of(clean)),
                           ("repris", Echantillon.of(worse))], "net")
    assert net.raison is None  # net needs no correction


def test_too_few_effective_corrections_hold_a_taux_claim_back() -> None:
    # One huge correction and two tiny ones: (Σc)²/Σc² is about 1, under MIN_CORRECTIONS.
    rows = [(10_000, 0, 0)] * 297 + [(10_000, 0, 90_000), (10_000, 0, 10), (10_000, 0, 10)]
    other = [(10_000, 0, 50)] * 300
    e = Echantillon.of(rows)
    assert e.corrections_effectives < MIN_CORRECTIONS
    (pair,) = comparaisons([("x", Echantillon.of(other)), ("y", e)], "taux")
    assert pair.verdict == "indiscernable"
    assert pair.raison is not None and pair.raison.startswith("too few corrections in y")


def test_a_small_group_borrows_the_larger_ones_spread_and_says_so() -> None:
    # 12 demandes that happen to be alike against 600 that vary: alone, Welch would call
    # the small group behind; its spread floored at the larger's, it cannot.
    small = [(13_000 + 10 * i, 1_000, 0) for i in range(12)]
    rng = random.Random(5)
    large = [(rng.randint(0, 30_000), 1_000, 0) for _ in range(600)]
    eb = Echantillon.of(large)
    assert eb.net / 600 > 12_000 + 1_000  # the large group's mean is clearly higher...
    (pair,) = comparaisons([("grand", eb), ("petit", Echantillon.of(small))], "net")
    assert pair.verdict == "indiscernable"
    assert pair.raison == ("unequal sizes: petit has 12 demandes against 600, too few to "
                           "know its spread")


def test_holm_judges_after_the_first_failure_at_its_level() -> None:
    rng = random.Random(6)
    groups = {"a": draw(rng, 300, 30_000, 0.3), "b": draw(rng, 300, 10_000, 0.3),
              "c": draw(rng, 300, 9_600, 0.3), "d": draw(rng, 300, 0, 0.3)}
    got = comparaisons([(k, Echantillon.of(v)) for k, v in groups.items()], "net")
    by_pair = {(c.a, c.b): c for c in got}
    assert by_pair[("b", "c")].verdict == "indiscernable"
    assert all(c.verdict == "a_devant" for k, c in by_pair.items() if k != ("b", "c"))
    # Six pairs; five separated at α/6 ... α/2; b-c judged at the last level, α/1.
    # Six pairs; five separated at α/6 ... α/2; b-c judged at the last level, α/1: its
    # interval is the one b and c alone would get.
    bc = by_pair[("b", "c")]
    assert bc.intervalle is not None and bc.difference is not None
    half = bc.intervalle[1] - bc.difference  # type: ignore[operator]
    (alone,) = comparaisons([("b", Echantillon.of(groups["b"])),
                             ("c", Echantillon.of(groups["c"]))], "net")
    assert half == pytest.approx(alone.intervalle[1] - alone.difference,  # type: ignore
                                 rel=1e-12)
    # Each takes the larger spread of the two (skewed nets: ADR-0175).
    spread = max(statistics.variance(n[0] - n[1] - n[2] for n in groups[cle])
                 for cle in ("b", "c"))
    se = math.sqrt(2 * spread / 300)
    assert half == pytest.approx(stats.t.ppf((1 + NIVEAU_VERDICT) / 2, 598) * se, rel=1e-3)


def tasks(rng: random.Random, names: Sequence[str], count: int, quality: dict[str, float]
          ) -> dict[str, dict[str, Tache]]:
    sizes = [rng.randint(500, 40_000) for _ in range(count)]
    return {name: {f"t{t}": Tache(1, size, rng.randint(0, 2_000),
                                   int(size * quality[name] * rng.random()))
                   for t, size in enumerate(sizes)} for name in names}


@pytest.mark.parametrize("selon", ["net", "taux"])
def test_paired_comparisons_equal_the_recomputation_on_common_tasks(selon: str) -> None:
    rng = random.Random(7)
    by_group = tasks(rng, ["a", "b"], 40, {"a": 0.05, "b": 0.3})
    del by_group["b"]["t0"], by_group["a"]["t1"]  # each ran a task the other did not
    common = sorted(by_group["a"].keys() & by_group["b"].keys())
    (pair,) = comparaisons_appariees(["a", "b"], by_group, selon)
    ta = [by_group["a"][k] for k in common]
    tb = [by_group["b"][k] for k in common]
    if selon == "net":
        d = [(x.evites - x.pilotage - x.corrections) - (y.evites - y.pilotage - y.corrections)
             for x, y in zip(ta, tb, strict=True)]
        want = statistics.fmean(d)
    else:
        ra = sum(x.corrections for x in ta) / sum(x.evites for x in ta)
        rb = sum(x.corrections for x in tb) / sum(x.evites for x in tb)
        ma = statistics.fmean(x.evites for x in ta)
        mb = statistics.fmean(x.evites for x in tb)
        d = [(x.corrections - ra * x.evites) / ma - (y.corrections - rb * y.evites) / mb
             for x, y in zip(ta, tb, strict=True)]
        want = ra - rb
    half = stats.t.ppf((1 + NIVEAU_VERDICT) / 2, len(d) - 1) * statistics.stdev(d) / math.sqrt(
        len(d))
    assert pair.taches == len(common) == 38
    assert pair.difference == pytest.approx(want, rel=1e-12)
    assert pair.intervalle == pytest.approx((want - half, want + half), rel=1e-9)
    assert pair.verdict == "a_devant"


def test_paired_without_common_tasks_says_so() -> None:
    by_group = {"a": {"t1": Tache(1, 100, 0, 0)}, "b": {"t2": Tache(1, 100, 0, 0)},
                "c": {"t1": Tache(2, 300, 0, 10)}}
    got = {(c.a, c.b): c for c in comparaisons_appariees(["a", "b", "c"], by_group, "net")}
    assert got[("a", "b")] == Comparaison("a", "b", None, None, "indiscernable",
                                          "no common task", 0)
    assert got[("a", "c")].raison == "fewer than 2 common tasks"
    assert got[("a", "c")].taches == 1 and got[("a", "c")].intervalle is None
    assert got[("a", "c")].difference == pytest.approx(100 - (300 - 10) / 2)


def test_the_wire_shape_names_the_spec_fields_in_order() -> None:
    plain = Comparaison("a", "b", 1.5, (0.5, None), "indiscernable", "why", None)
    assert plain.as_dict() == {"a": "a", "b": "b", "difference": 1.5,
                               "intervalle": [0.5, None], "verdict": "indiscernable",
                               "raison": "why", "a_completer": None}
    assert list(Comparaison("a", "b", None, None, "indiscernable", None, 3).as_dict()) == [
        "a", "b", "difference", "intervalle", "verdict", "raison", "taches", "a_completer"]
    told = Comparaison("a", "b", 1.5, (0.5, 2.5), "a_devant", None, None)
    assert list(told.as_dict()) == ["a", "b", "difference", "intervalle", "verdict", "raison"]
    more = Comparaison("a", "b", 1.5, (-0.5, 3.5), "indiscernable", None, None, (40, 400))
    assert more.as_dict()["a_completer"] == {"a": 40, "b": 400}


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("selon", ["net", "taux"])
def test_with_sessions_every_pair_equals_the_clustered_recomputation(seed: int,
                                                                     selon: str) -> None:
    # Demandes in sessions of 1 to 30 sharing a shift: the variances over sessions
    # (ADR-0166), Welch on them with the sessions' degrees of freedom, the floor counted
    # in sessions, the taux holds on the sessions' corrections; groups of one session.
    rng = random.Random(100 + seed)
    groups: dict[str, list[tuple[str, int, int, int]]] = {}
    for i in range(rng.randint(2, 5)):
        rows: list[tuple[str, int, int, int]] = []
        for s in range(rng.choice([1, 2, 5, 20, 60])):
            size, shift = rng.randint(1, 30), rng.randint(-5_000, 20_000)
            rows += [(f"s{s}", *row) for row in draw(rng, size, shift, rng.random() / 2)]
        groups[f"g{i}"] = rows
    samples = [(cle, Echantillon.of_sessions(
        [[row[1:] for row in rows if row[0] == s] for s in dict.fromkeys(r[0] for r in rows)]))
        for cle, rows in groups.items()]
    got = [c.as_dict() for c in comparaisons(samples, selon)]
    assert_same(got, expected_pairs(groups, selon))


def test_effective_sessions_count_uneven_sessions_as_fewer() -> None:
    # Kish's n²/Σn_s² (ADR-0171): equal sessions count their number, one demande each
    # counts the demandes, one long session among short ones counts far less.
    def sample(sizes: Sequence[int]) -> Echantillon:
        return Echantillon.of_sessions([[(1_000 + i, 0, 0)] * n for i, n in enumerate(sizes)])

    assert sample([30] * 10).sessions_effectives == 10
    assert sample([1] * 37).sessions_effectives == 37
    assert sample([120] + [20] * 9).sessions_effectives == pytest.approx(300**2 / 18_000)
    assert sample([291] + [1] * 9).sessions_effectives < 1.1
    assert Echantillon().sessions_effectives == 0


def test_a_net_claim_waits_for_eight_effective_sessions() -> None:
    # Two groups clearly apart, in 12 sessions each: as 12 equal sessions, a claim; as
    # one long session and eleven short ones (about 3 equal ones), held, and a_completer
    # counts from the data that lifts the hold (ADR-0171).
    def group(sizes: Sequence[int], base: int) -> Echantillon:
        rng = random.Random(base)
        return Echantillon.of_sessions([[(base + rng.randint(-500, 500), 0, 0)] * n
                                        for n in sizes])

    even = [25] * 12
    (told,) = comparaisons([("haut", group(even, 20_000)), ("bas", group(even, 10_000))],
                           "net")
    assert (told.verdict, told.raison) == ("a_devant", None)
    uneven = [164] + [6] * 11
    high, low = group(uneven, 20_000), group(even, 10_000)
    assert high.sessions_effectives < 8 <= low.sessions_effectives
    (held,) = comparaisons([("haut", high), ("bas", low)], "net")
    assert held.verdict == "indiscernable"
    assert held.raison == ("too few sessions in haut to judge its net: as uneven as about "
                           f"{high.sessions_effectives:.1f} equal ones, fewer than 8")
    assert held.a_completer is not None and held.a_completer[0] >= math.floor(
        high.demandes * (8 / high.sessions_effectives - 1))
    (taux,) = comparaisons([("haut", high), ("bas", low)], "taux")
    assert taux.raison is None or not taux.raison.startswith("too few sessions")


def test_a_long_sessions_residual_weighs_by_its_leverage() -> None:
    # CR2 to first order (ADR-0175): Σr_s²·(1 + n_s/(n - 1))/n², computed here from the
    # sessions themselves, is the variance where one session of 100 sits among ten of 10
    # (CR1's S/(S - 1) is smaller there); with equal sessions CR1 stays the larger; with
    # one demande a session all three are the per-demande variance.
    def sample(sizes: Sequence[int], nets: Sequence[int]) -> Echantillon:
        return Echantillon.of_sessions([[(net, 0, 0)] * size
                                        for size, net in zip(sizes, nets, strict=True)])

    def by_hand(sizes: Sequence[int], nets: Sequence[int]) -> tuple[Fraction, Fraction]:
        n = sum(sizes)
        mu = Fraction(sum(s * x for s, x in zip(sizes, nets, strict=True)), n)
        r2 = [(s * x - mu * s) ** 2 for s, x in zip(sizes, nets, strict=True)]
        cr1 = Fraction(len(sizes), len(sizes) - 1) * sum(r2) / n**2
        cr2 = sum(r * (1 + Fraction(s, n - 1)) for r, s in zip(r2, sizes, strict=True)) / n**2
        return cr1, cr2

    uneven, nets = [100] + [10] * 10, [9_000] + [1_000 + 300 * i for i in range(10)]
    cr1, cr2 = by_hand(uneven, nets)
    assert cr2 > cr1 and variance_net_par_demande(sample(uneven, nets)) == cr2
    even = [20] * 11
    cr1, cr2 = by_hand(even, nets)
    assert cr1 > cr2 and variance_net_par_demande(sample(even, nets)) == cr1
    singles = [1] * 11
    per_demande = Fraction(statistics.variance([Fraction(x) for x in nets]), 11)
    assert by_hand(singles, nets) == (per_demande, per_demande)
    assert variance_net_par_demande(sample(singles, nets)) == per_demande


def test_on_net_the_group_that_varies_less_takes_the_others_spread() -> None:
    # Skewed nets (ADR-0175): a group that has not met its rare large values shows a low
    # mean and a low spread together. Equal sizes, one group steady, one spread out: the
    # standard error is the spread-out one's, twice; told apart without the floor, held
    # with it, and the raison says why.
    rng = random.Random(175)
    steady = [(3_050 + rng.randint(-100, 100), 0, 0) for _ in range(60)]
    spread = [(rng.choice((1_000, 1_500, 9_000)), 0, 0) for _ in range(60)]
    a, b = Echantillon.of(spread), Echantillon.of(steady)
    (pair,) = comparaisons([("spread", a), ("steady", b)], "net")
    v_spread = statistics.variance([x[0] for x in spread]) / 60
    half = stats.t.ppf(1 - (1 - NIVEAU_VERDICT) / 2, 118) * math.sqrt(2 * v_spread)
    assert pair.intervalle is not None and pair.difference is not None
    assert pair.intervalle[1] - pair.difference == pytest.approx(half, rel=1e-9)
    assert pair.verdict == "indiscernable"
    assert pair.raison == ("steady's net varies less than spread's: on skewed data a group "
                           "that has not met its rare large values yet underestimates its "
                           "spread")
    welch = math.sqrt(v_spread + statistics.variance([x[0] for x in steady]) / 60)
    assert abs(pair.difference) > stats.t.ppf(1 - (1 - NIVEAU_VERDICT) / 2, 59) * welch
