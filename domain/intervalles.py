"""The 95 % intervals of one group's figures, from its exact sums (pure; ADR-0081, which
supersedes the interval part of ADR-0072).

* ``intervalle_net_par_demande``: Student's t on the mean net per demande (tokens).
* ``intervalle_taux_reprise``: the taux de reprise (corrections / evites, a ratio of sums)
  as a gamma interval on the corrections, the shape of zero-inflated costs (most demandes
  never corrected, a few heavily), widened by the evites' own uncertainty.

A bound the data cannot give yet is None, never a zero-width claim: a group without any
correction has no upper taux bound (SPEC, "Ranking presets: the classement"). Variances
come from the sums exactly (``Fraction``) before the one conversion to float.
"""

from __future__ import annotations

from fractions import Fraction
from math import exp, log, sqrt

from miam_economies.domain.echantillon import Echantillon
from miam_economies.domain.quantiles import gamma_quantile, t_quantile

NIVEAU = 0.95
"""The confidence level of every interval and of the verdicts: two-sided."""

UPPER = (1 + NIVEAU) / 2
"""The quantile of a two-sided ``NIVEAU`` interval's high end (0.975)."""

Intervalle = tuple[float | None, float | None]
"""``(low, high)`` in the figure's unit, ``low <= figure <= high``; None where the data
cannot bound the figure on that side yet."""

_LOG_MAX = 709.0
"""Just under log(max float): a log-scale high end is capped there."""


def intervalle_net_par_demande(e: Echantillon) -> Intervalle | None:
    """The 95 % Student t interval of the mean net per demande (tokens): mean ± t·s/√n,
    t the 0.975 quantile with n - 1 degrees of freedom, s² the sample variance from the
    exact sums. None below 2 demandes (no variance). All-equal demandes: zero width."""
    n = e.demandes
    if n < 2:
        return None
    mean = e.net / n
    # Var(mean) = (n·Σx² - (Σx)²) / (n²(n-1)), exact before the one conversion to float.
    variance = Fraction(n * e.net_squared - e.net * e.net, n * n * (n - 1))
    half = t_quantile(UPPER, n - 1) * sqrt(float(variance))
    return _around(mean - half, mean, mean + half)


def intervalle_taux_reprise(e: Echantillon) -> Intervalle | None:
    """The 95 % interval of the taux de reprise, corrections / evites (ADR-0081).

    The corrections' sum Y is read as a weighted sum of rare events, as Fay and Feuer read
    a directly standardized rate: m = Y²/Σc² "equal corrections"
    (``Echantillon.corrections_effectives``) of mean weight w = Σc²/Y, bounded by the
    gamma interval [w·G⁻¹(0.025; m), w·G⁻¹(0.975; m + 1)], with the mean weight in the
    high end (Tiwari, Clegg and Zou's modification; Fay and Feuer take the largest weight,
    which a sum does not keep). With k equal corrections it is Garwood's exact Poisson
    interval for k events; while few corrections carry the sum, the high end is pushed
    far out. The evites' sum X adds its own t interval, X(1 ± t·s_X/X), as a factor on
    1/X, in quadrature on the log scale (their covariance left out: corrections grow with
    the task, so this errs wide). ``(0.0, None)`` when no demande has a correction yet
    (nothing bounds their size); a high end None when X is not clearly above 0
    (t·s_X >= X); None below 2 demandes or when evites <= 0 (no ratio).
    """
    n, x, y = e.demandes, e.evites, e.corrections
    if n < 2 or x <= 0:
        return None
    if y == 0:
        return (0.0, None)
    ratio = y / x
    vxx = Fraction(n * e.evites_squared - x * x, n - 1)  # Var(X), exact
    spread_e = t_quantile(UPPER, n - 1) * sqrt(float(vxx)) / x
    count = float(e.corrections_effectives)  # >= 1: corrections are never negative
    weight = e.corrections_squared / y
    log_low = log(y / (weight * gamma_quantile(1 - UPPER, count)))
    log_high = log(weight * gamma_quantile(UPPER, count + 1) / y)
    # X's own interval X(1 ± spread_e), taken as a factor on 1/X: asymmetric on the log.
    low = ratio * exp(-sqrt(log_low ** 2 + log(1 + spread_e) ** 2))
    if spread_e >= 1:
        return _around(low, ratio, None)
    widen = sqrt(log_high ** 2 + log(1 - spread_e) ** 2)
    return _around(low, ratio, ratio * exp(min(widen, _LOG_MAX - log(ratio))))


def _around(low: float, figure: float, high: float | None) -> Intervalle:
    # Mathematically low <= figure <= high; the floats may miss by an ulp (a zero-width
    # interval computed two ways), so the interval is widened to its figure, never more.
    return (min(low, figure), None if high is None else max(high, figure))
