"""The classement's 95 % intervals hold the true figure as often as ADR-0081 says, on data
shaped like the plugin's (``tests.simulation``): fixed seeds, 1,000 groups a row, the
ADR's coverage less about three standard errors, and misses mostly below the truth (a
small group looks better on taux and worse on net than it is). They also fail if the
intervals become uselessly wide (over 0.99 where the ADR measures less). A few seconds;
``python -m tests.simulation.coverage`` prints the ADR's whole table."""

from __future__ import annotations

import pytest

from tests.simulation.coverage import coverage

GROUPS = 1_000


@pytest.mark.parametrize(("shape", "n", "net_at_least", "taux_at_least"), [
    ("plausible", 10, 0.79, 0.89),
    ("plausible", 30, 0.83, 0.79),
    ("plausible", 100, 0.87, 0.83),
    ("plausible", 1000, 0.91, 0.90),
    ("heavy", 30, 0.67, 0.73),
    ("heavy", 1000, 0.86, 0.78),
])
def test_intervals_hold_the_truth_as_often_as_the_adr_says(
        shape: str, n: int, net_at_least: float, taux_at_least: float) -> None:
    measured = coverage(shape, n, GROUPS)
    net, taux = measured["net"], measured["taux"]
    assert net_at_least <= net.holds <= 0.99
    assert taux_at_least <= taux.holds <= 0.99
    assert net.below > net.above and taux.below > taux.above  # misses are one-sided


def test_a_taux_without_a_high_end_is_common_only_below_the_default_min() -> None:
    # No correction yet, or evites not clearly above 0: no upper bound, never [0, 0].
    assert coverage("plausible", 10, GROUPS)["taux"].open_high > 0.3
    assert coverage("plausible", 30, GROUPS)["taux"].open_high < 0.06
    assert coverage("plausible", 100, GROUPS)["taux"].open_high < 0.01
