"""Laws of ``domain.classement`` and ``domain.comparaisons`` over any demandes (SPEC.md,
"Ranking presets: the classement"; ADR-0081): a group's sums depend neither on the order
of its demandes nor on how they are split; every interval is finite where given, holds its
figure, and stays at or above 0 for the taux de reprise; a bound is absent only where the
data cannot give it; every pair of ranked groups gets one verdict, which a claim backs
with an interval excluding 0."""

from __future__ import annotations

from math import isfinite

from hypothesis import given, settings
from hypothesis import strategies as st

from miam_economies.domain.classement import CRITERES, classement
from miam_economies.domain.comparaisons import comparaisons
from miam_economies.domain.echantillon import Echantillon

EVITES = st.integers(min_value=-(2**53), max_value=2**53)  # estimation.evites may be < 0
COST = st.integers(min_value=0, max_value=2**53)
DEMANDE = st.tuples(EVITES, COST, COST)
SMALL = st.tuples(st.integers(-3, 40), st.integers(0, 5), st.integers(0, 3))  # many ties
DEMANDES = st.lists(DEMANDE | SMALL, max_size=30)


@given(DEMANDES.flatmap(lambda rows: st.tuples(st.just(rows), st.permutations(rows))))
def test_sums_do_not_depend_on_the_order_of_the_demandes(
        rows_and_shuffled: tuple[list[tuple[int, int, int]], list[tuple[int, int, int]]]
) -> None:
    rows, shuffled = rows_and_shuffled
    assert Echantillon.of(shuffled) == Echantillon.of(rows)


@given(DEMANDES, DEMANDES)
def test_sums_add_and_subtract_as_groups_of_demandes(a: list[tuple[int, int, int]],
                                                     b: list[tuple[int, int, int]]) -> None:
    assert Echantillon.of(a + b) == Echantillon.of(a) + Echantillon.of(b)
    assert Echantillon.of(a + b) - Echantillon.of(b) == Echantillon.of(a)
    assert sum((Echantillon.demande(*row) for row in a), Echantillon()) == Echantillon.of(a)


@settings(deadline=None)
@given(st.dictionaries(st.text(max_size=3), DEMANDES.filter(bool), max_size=5),
       st.integers(1, 12), st.sampled_from(sorted(CRITERES)))
def test_every_interval_holds_its_figure_and_every_ranked_pair_has_a_verdict(
        groupes: dict[str, list[tuple[int, int, int]]], minimum: int, selon: str) -> None:
    samples = {cle: Echantillon.of(rows) for cle, rows in groupes.items()}
    out = classement(samples, minimum, selon)
    assert sorted(g.cle for g in out) == sorted(groupes)
    for groupe in out:
        interval = groupe.intervalle_net_par_demande
        nets = {e - p - c for e, p, c in groupes[groupe.cle]}
        # No interval below 2 sessions (here each demande is one), nor while every net is
        # the same: never a zero-width one (SPEC; ADR-0166).
        assert (interval is None) == (groupe.demandes < 2 or len(nets) == 1)
        if interval is not None:
            low, high = interval
            assert low is not None and high is not None and isfinite(low) and isfinite(high)
            assert low <= groupe.net_par_demande <= high
        interval = groupe.intervalle_taux_reprise
        rows = groupes[groupe.cle]
        # Corrections exactly proportional to evites (none spread): no interval either.
        proportional = groupe.corrections > 0 and all(
            c * groupe.evites == groupe.corrections * e for e, _, c in rows)
        assert (interval is None) == (groupe.demandes < 2 or groupe.evites <= 0
                                      or proportional)
        if interval is not None:
            low, high = interval
            assert groupe.taux_reprise is not None and low is not None and isfinite(low)
            assert 0 <= low <= groupe.taux_reprise
            assert high is None or groupe.taux_reprise <= high < float("inf")
            if groupe.corrections == 0:
                assert interval == (0.0, None)  # no zero-width claim
    ranked = [g for g in out if g.rang is not None]
    assert [g.rang for g in ranked] == list(range(1, len(ranked) + 1))
    assert out[:len(ranked)] == ranked
    assert all(g.suffisant for g in ranked)
    verdicts = comparaisons([(g.cle, samples[g.cle]) for g in ranked], selon)
    assert [(v.a, v.b) for v in verdicts] == [
        (a.cle, b.cle) for i, a in enumerate(ranked) for b in ranked[i + 1:]]
    for v in verdicts:
        assert v.verdict in ("a_devant", "b_devant", "indiscernable")
        if v.verdict != "indiscernable":
            assert v.raison is None and v.intervalle is not None
            low, high = v.intervalle
            assert low is not None and high is not None
            assert low > 0 or high < 0
            ahead = (low > 0) == (selon == "net")
            assert v.verdict == ("a_devant" if ahead else "b_devant")
        elif v.raison is None and v.intervalle is not None:
            low, high = v.intervalle  # not held back: the interval holds 0
            assert (low is None or low <= 0) and (high is None or high >= 0)
