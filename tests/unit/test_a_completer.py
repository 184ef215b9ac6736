"""``a_completer`` (issue 30, item 3; ADR-0167): for a pair held ``indiscernable``, about
how many more demandes each group needs for a difference of the size observed to be told
at the verdicts' level. The factor solves t(level; df·k)·se/√k = |difference| (no
smaller one tells it), taux holds lift first, and none is given where no size tells it;
in words for the CLI and the report. The simulation that measures how often it is
within a factor of two: ``tests.simulation.more_data`` (the ADR's table)."""

from __future__ import annotations

import random
from math import floor, sqrt

import pytest

from miam_economies.domain.comparaisons import comparaisons
from miam_economies.domain.ecarts import Ecart, a_completer
from miam_economies.domain.echantillon import Echantillon
from miam_economies.domain.quantiles import t_quantile
from miam_economies.domain.verdict_words import about, more_words, phrases


def told(e: Ecart, k: float, level: float) -> bool:
    assert e.difference is not None
    return t_quantile(level, max(1, floor(e.df * k))) * e.se / sqrt(k) <= abs(e.difference)


@pytest.mark.parametrize(("difference", "se", "df", "sizes"), [
    (100.0, 80.0, 29, (30, 30)), (-0.05, 0.04, 9, (100, 40)), (3.0, 10.0, 199, (200, 800)),
    (1.0, 1.0, 1, (4, 4))])
def test_the_factor_is_the_smallest_that_tells_the_difference(
        difference: float, se: float, df: int, sizes: tuple[int, int]) -> None:
    level = 0.995
    ecart = Ecart("a", "b", difference, se, df, sizes=sizes)
    more = a_completer(ecart, level)
    assert more is not None
    # Rounded up: the more demandes tell it, one fewer does not.
    assert told(ecart, 1 + more[0] / sizes[0], level)
    assert not told(ecart, 1 + (more[0] - 1) / sizes[0], level)
    k = 1 + more[0] / sizes[0]
    assert more[1] == pytest.approx(sizes[1] * (k - 1), abs=1 + sizes[1] / sizes[0])


def test_none_where_no_size_tells_it() -> None:
    assert a_completer(Ecart("a", "b", 0.0, 1.0, 9, sizes=(10, 10)), 0.995) is None
    assert a_completer(Ecart("a", "b", 1e-9, 1.0, 9, sizes=(10, 10)), 0.995) is None
    assert a_completer(Ecart("a", "b", 1.0, 1.0, 9, sizes=(10, 10),
                             k_min=float("inf")), 0.995) is None
    assert a_completer(Ecart("a", "b", 1.0, 0.0, 9, sizes=(10, 10)), 0.995) is None


def test_a_taux_hold_lifts_before_the_difference_can_be_told() -> None:
    # Few corrections: the data must grow until each group has MIN_CORRECTIONS effective
    # ones, even where the spread alone would tell the difference sooner.
    ecart = Ecart("a", "b", 0.5, 0.01, 50, sizes=(40, 40), k_min=6.0)
    assert a_completer(ecart, 0.995) == (200, 200)


def test_told_pairs_have_none_and_held_pairs_say_it_in_words() -> None:
    rng = random.Random(4)
    close = [(rng.randint(1_000, 9_000), 500, 0) for _ in range(40)]
    far = [(e + 200, p, c) for e, p, c in close[::-1]]
    apart = [(rng.randint(1_000, 9_000) + 50_000, 500, 0) for _ in range(40)]
    got = comparaisons([("x", Echantillon.of(apart)), ("y", Echantillon.of(far)),
                        ("z", Echantillon.of(close))], "net")
    by_pair = {(c.a, c.b): c for c in got}
    assert by_pair[("x", "y")].verdict == "a_devant" and by_pair[("x", "y")].a_completer is None
    held = by_pair[("y", "z")]
    assert held.verdict == "indiscernable" and held.a_completer is not None
    assert "a_completer" not in by_pair[("x", "y")].as_dict()
    words = more_words(held.as_dict())
    assert words == (f"about {about(held.a_completer[0])} more demandes of y and "
                     f"{about(held.a_completer[1])} of z would tell a difference of this "
                     "size (99 %)")
    assert f"y / z : {words}" in phrases(["x", "y", "z"], [c.as_dict() for c in got])
