"""Laws of ``domain.classement`` over any demandes (SPEC.md, "Ranking presets: the
classement"; ADR-0072): a group's sums depend neither on the order of its demandes nor on
how they are split, and every interval is finite, holds its figure, and stays at or above
0 for the taux de reprise."""

from __future__ import annotations

from math import isfinite

from hypothesis import given, settings
from hypothesis import strategies as st

from miam_economies.domain.classement import Echantillon, classement

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


@settings(deadline=None)  # the first example imports SciPy (domain.classement.quantile_t)
@given(st.dictionaries(st.text(max_size=3), DEMANDES.filter(bool), max_size=5),
       st.integers(1, 12))
def test_every_interval_is_finite_and_holds_its_figure(
        groupes: dict[str, list[tuple[int, int, int]]], minimum: int) -> None:
    out = classement({cle: Echantillon.of(rows) for cle, rows in groupes.items()}, minimum)
    assert sorted(g.cle for g in out) == sorted(groupes)
    for groupe in out:
        interval = groupe.intervalle_net_par_demande
        assert (interval is None) == (groupe.demandes < 2)
        if interval is not None:
            assert all(map(isfinite, interval))
            assert interval[0] <= groupe.net_par_demande <= interval[1]
        interval = groupe.intervalle_taux_reprise
        assert (interval is None) == (groupe.demandes < 2 or groupe.evites <= 0)
        if interval is not None:
            assert groupe.taux_reprise is not None and all(map(isfinite, interval))
            assert 0 <= interval[0] <= groupe.taux_reprise <= interval[1]
    ranks = [g.rang for g in out if g.suffisant]
    assert ranks == list(range(1, len(ranks) + 1))
    assert all(g.rang is None for g in out if not g.suffisant)
