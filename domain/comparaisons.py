"""Verdicts between the classement's groups from their own demandes: "a ahead of b" or
"can't tell yet" (pure; SPEC, "Ranking presets: the classement"; ADR-0081).

For every pair of ranked groups (a ranked above b), the criterion's difference a - b and
its standard error by Welch's t from each group's sums (on the taux, the delta method on
each ratio), judged by Holm's step-down (``domain.ecarts``). A group at most half the size
of the other takes the larger one's spread as a floor for its own: a small sample of
skewed costs underestimates its spread exactly when it misses its rare large values,
which is when it looks better or worse than it is; near-equal sizes need no floor, their
skews cancel in the difference. On the taux, a group needs corrections to be compared
(``ecarts.taux_hold``). The simulations of ADR-0081 (``tests/simulation/verdicts.py``)
measure how often a verdict is wrong. Paired comparisons on common tasks:
``domain.appariees``.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from math import floor, sqrt

from miam_economies.domain.ecarts import Comparaison, Ecart, holm, taux_hold, unmeasured
from miam_economies.domain.echantillon import Echantillon

FLOOR_RATIO = 2
"""A group with at most 1/FLOOR_RATIO of the other's demandes takes the larger group's
spread as a floor for its own (ADR-0081)."""


def comparaisons(groupes: Sequence[tuple[str, Echantillon]], selon: str
                 ) -> list[Comparaison]:
    """The verdicts between ``groupes`` (in rank order: each pair's ``a`` is the higher
    ranked) on ``selon`` (``"taux"``: taux de reprise, less is ahead; ``"net"``: net per
    demande, more is ahead), from each group's own demandes (ADR-0081)."""
    stats = {cle: _stats(e, selon) for cle, e in groupes}
    ecarts = []
    for i, (a, ea) in enumerate(groupes):
        for b, eb in groupes[i + 1:]:
            ecarts.append(_welch(a, ea, stats[a], b, eb, stats[b], selon))
    return holm(ecarts, selon)


def _stats(e: Echantillon, selon: str) -> tuple[float, float]:
    """A group's figure and the variance of one demande's contribution to it (computed
    exactly from the sums, then one conversion to float)."""
    n = e.demandes
    if n < 2:
        return (e.net / n if selon == "net" else e.corrections / e.evites), 0.0
    if selon == "net":
        return e.net / n, float(Fraction(n * e.net_squared - e.net * e.net, n * (n - 1)))
    # The linearised ratio: z = c - R·e per demande, Σz = 0; Var(R̂) = s_z² / (n·ē²),
    # with R = C/E: n²·Σz² / (E²·(n - 1)) = n²(E²Σc² - 2CEΣec + C²Σe²) / (E⁴(n - 1)).
    c, x = e.corrections, e.evites
    spread = c * c * e.evites_squared - 2 * c * x * e.evites_times_corrections \
        + x * x * e.corrections_squared
    return c / x, float(Fraction(n * n * spread, x ** 4 * (n - 1)))


def _welch(a: str, ea: Echantillon, sa: tuple[float, float], b: str, eb: Echantillon,
           sb: tuple[float, float], selon: str) -> Ecart:
    na, nb = ea.demandes, eb.demandes
    difference = sa[0] - sb[0]
    if min(na, nb) < 2:
        small = a if na < nb else b
        return unmeasured(a, b, difference, f"fewer than 2 demandes in {small}")
    va, vb = sa[1] / na, sb[1] / nb
    se, df = _welch_se_df(va, na, vb, nb)
    unfloored = note = None
    if max(na, nb) >= FLOOR_RATIO * min(na, nb):
        # The smaller group's spread is at least the larger one's.
        small, large = (a, b) if na < nb else (b, a)
        note = (f"unequal sizes: {small} has {min(na, nb):,} demandes against "
                f"{max(na, nb):,}, too few to know its spread")
        if na < nb and sa[1] < sb[1]:
            unfloored, (se, df) = (se, df), _welch_se_df(sb[1] / na, na, vb, nb)
        elif nb < na and sb[1] < sa[1]:
            unfloored, (se, df) = (se, df), _welch_se_df(va, na, sa[1] / nb, nb)
    if se == 0:
        return unmeasured(a, b, difference, "no spread to judge by yet")
    hold, open_low, open_high = None, False, False
    if selon == "taux":
        hold_a, open_high = taux_hold(a, ea.corrections, float(ea.corrections_effectives))
        hold_b, open_low = taux_hold(b, eb.corrections, float(eb.corrections_effectives))
        hold = hold_a or hold_b
    return Ecart(a, b, difference, se, df, hold, open_low, open_high, unfloored, note)


def _welch_se_df(va: float, na: int, vb: float, nb: int) -> tuple[float, int]:
    """Welch's standard error and Satterthwaite's degrees of freedom, rounded down."""
    v = va + vb
    if v == 0:
        return 0.0, na + nb - 2
    df = v * v / (va * va / (na - 1) + vb * vb / (nb - 1))
    return sqrt(v), max(1, floor(df))
