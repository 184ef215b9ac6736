"""The 95 % intervals of one group's figures, from its exact sums (pure; ADR-0081, which
supersedes the interval part of ADR-0072).

* ``intervalle_net_par_demande``: Student's t on the mean net per demande (tokens).
* ``intervalle_taux_reprise``: the taux de reprise (corrections / evites, a ratio of sums)
  as a gamma interval on the corrections, the shape of zero-inflated costs (most demandes
  never corrected, a few heavily), widened by the evites' own uncertainty.
* Variances over the group's sessions (cluster-robust: a session's demandes share a
  repository, a difficulty and a subagent's turns), never below the per-demande ones,
  with degrees of freedom from the number of sessions (ADR-0166).

A bound the data cannot give yet is None, never a zero-width claim: a group without any
correction has no upper taux bound (SPEC, "Ranking presets: the classement"). Variances
come from the sums exactly (``Fraction``) before the one conversion to float.
"""

from __future__ import annotations

from fractions import Fraction
from math import exp, floor, log, sqrt

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
    """The 95 % Student t interval of the mean net per demande (tokens): mean ± t·√V, t
    the 0.975 quantile with its effective sessions less one degrees of freedom
    (``degres_net``; S - 1 where the S sessions are alike in size), V the
    variance of the mean (``variance_net_par_demande``: over sessions, never below the
    per-demande one; ADR-0166). None below 2 sessions (no variance), and None when every
    demande has the same net (no spread yet: never a zero-width interval; SPEC)."""
    variance = variance_net_par_demande(e)
    if variance is None or variance == 0:
        return None
    mean = e.net / e.demandes
    half = t_quantile(UPPER, degres_net(e)) * sqrt(float(variance))
    return _around(mean - half, mean, mean + half)


def degres_net(e: Echantillon) -> int:
    """The degrees of freedom of a group's mean net per demande: its effective sessions
    less one (``Echantillon.sessions_effectives``: Kish's n²/Σn_s², at most S), rounded
    down, at least 1; S - 1 where the sessions hold as many demandes each (ADR-0171)."""
    return max(1, floor(e.sessions_effectives - 1))


def variance_net_par_demande(e: Echantillon) -> Fraction | None:
    """The variance of a group's mean net per demande μ = N/n (tokens²), exact: the
    largest of the cluster-robust one over its S sessions,
    S/(S - 1)·Σr_s²/n² (r_s = net_s - μ·n_s, net_s and n_s a session's net and
    demandes), the same with each session's leverage h_s = n_s/n corrected to first
    order, Σr_s²·(1 + n_s/(n - 1))/n² (Bell and McCaffrey's CR2, r_s²/(1 - h_s), whose
    series it starts: a long session's residual is pulled toward the mean it weighs on;
    ADR-0175), and the per-demande one, (nΣx² - N²)/(n²(n - 1)); the three are equal when
    every session holds one demande. Taking the largest, nothing is less cautious than
    the per-demande answer (ADR-0166). None below 2 sessions (or 2 demandes). Raises
    ``ValueError`` for a sample with demandes but without its sessions' sums."""
    n, s, total = e.demandes, _sessions(e), e.net
    if n < 2 or s < 2:
        return None
    # Σr_s²·n² = n²Σnet_s² - 2n·N·Σn_s·net_s + N²Σn_s²; Σn_s·r_s²·n² likewise, a power
    # of n_s higher.
    spread = (n * n * e.session_net_squared - 2 * n * total * e.session_demandes_times_net
              + total * total * e.session_demandes_squared)
    leveraged = (n * n * e.session_demandes_times_net_squared
                 - 2 * n * total * e.session_demandes_squared_times_net
                 + total * total * e.session_demandes_cubed)
    clustered = _larger(s * spread, (s - 1) * n ** 4,
                        (n - 1) * spread + leveraged, (n - 1) * n ** 4)
    return max(clustered, Fraction(n * e.net_squared - total * total, n * n * (n - 1)))


def variance_taux_reprise(e: Echantillon) -> Fraction | None:
    """The variance of a group's taux de reprise R = C/E by the delta method (a ratio of
    sums; tokens cancel), exact: the larger of the cluster-robust one over its S sessions,
    S/(S - 1)·Σ(C_s - R·E_s)²/E², and the per-demande one, n/(n - 1)·Σ(c - R·e)²/E²;
    equal when every session holds one demande (ADR-0166). None below 2 sessions or when
    E <= 0. Raises ``ValueError`` for a sample with demandes but without its sessions'
    sums."""
    n, s, x, c = e.demandes, _sessions(e), e.evites, e.corrections
    if n < 2 or s < 2 or x <= 0:
        return None
    # Σ(c - R·e)²·E² = E²Σc² - 2CEΣec + C²Σe², per demande and per session alike.
    per_demande = (x * x * e.corrections_squared - 2 * c * x * e.evites_times_corrections
                   + c * c * e.evites_squared)
    per_session = (x * x * e.session_corrections_squared
                   - 2 * c * x * e.session_evites_times_corrections
                   + c * c * e.session_evites_squared)
    return _larger(n * per_demande, (n - 1) * x ** 4, s * per_session, (s - 1) * x ** 4)


def variance_evites(e: Echantillon) -> Fraction | None:
    """The variance of a group's evites sum X (tokens²), exact: the larger of the one
    over its S sessions, (SΣE_s² - X²)/(S - 1), and the per-demande one,
    (nΣe² - X²)/(n - 1) (ADR-0166). None below 2 sessions."""
    n, s, x = e.demandes, _sessions(e), e.evites
    if n < 2 or s < 2:
        return None
    return _larger(n * e.evites_squared - x * x, n - 1,
                   s * e.session_evites_squared - x * x, s - 1)


def _larger(a: int, b: int, c: int, d: int) -> Fraction:
    # The larger of a/b and c/d (b, d > 0), compared in integers: one Fraction made, not
    # two (the classement's read computes some forty variances).
    return Fraction(a, b) if a * d >= c * b else Fraction(c, d)


def _sessions(e: Echantillon) -> int:
    if e.demandes > 0 and e.sessions <= 0:
        raise ValueError(f"a sample of {e.demandes} demandes without its sessions' sums "
                         "(ADR-0166)")
    return e.sessions


def intervalle_taux_reprise(e: Echantillon) -> Intervalle | None:
    """The 95 % interval of the taux de reprise, corrections / evites (ADR-0081, its
    units sessions since ADR-0166).

    The corrections' sum Y is read as a weighted sum of rare events, as Fay and Feuer read
    a directly standardized rate: m = Y²/ΣC_s² "equal corrections", one per session
    (``Echantillon.corrections_effectives``) of mean weight w = Σc²/Y, bounded by the
    gamma interval [w·G⁻¹(0.025; m), w·G⁻¹(0.975; m + 1)], with the mean weight in the
    high end (Tiwari, Clegg and Zou's modification; Fay and Feuer take the largest weight,
    which a sum does not keep). With k equal corrections it is Garwood's exact Poisson
    interval for k events; while few sessions carry the sum, the high end is pushed
    far out. The evites' sum X adds its own t interval (``variance_evites``, t with S - 1
    degrees of freedom), X(1 ± t·s_X/X), as a factor on
    1/X, in quadrature on the log scale (their covariance left out: corrections grow with
    the task, so this errs wide). ``(0.0, None)`` when no demande has a correction yet
    (nothing bounds their size); a high end None when X is not clearly above 0
    (t·s_X >= X); None below 2 sessions or when evites <= 0 (no ratio), and None when
    the corrections are exactly proportional to the evites (no spread yet: SPEC).
    """
    x, y = e.evites, e.corrections
    vxx = variance_evites(e)
    if vxx is None or x <= 0:
        return None
    if y == 0:
        return (0.0, None)
    if variance_taux_reprise(e) == 0:  # corrections exactly proportional to evites
        return None
    ratio = y / x
    spread_e = t_quantile(UPPER, e.sessions - 1) * sqrt(float(vxx)) / x
    count = float(e.corrections_effectives)  # >= 1: corrections are never negative
    weight = y / count  # the mean weight Σc²/Y, Σc² counted over sessions
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
