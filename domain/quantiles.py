"""The distribution functions the classement's intervals and verdicts need, from the
standard library (pure; ADR-0081): Student's t quantiles and two-sided tail probabilities
for whole degrees of freedom, and the gamma distribution's quantiles.

No numerical stack: a base install for MIAM brings none (SPEC, "Installed as a library").
The t quantile follows the classement audit's appendix (exact finite sums of Abramowitz &
Stegun 26.7.3/26.7.4 and Newton up to 1,000 degrees of freedom, the Cornish-Fisher series
26.7.5 above); ``tests/unit/test_quantiles.py`` holds it to ``scipy.stats`` (within 1e-12
for the 0.975 quantile over df 1 to 10^6).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from statistics import NormalDist

_NORMAL = NormalDist()

EXACT_DF = 1_000
"""Up to this many degrees of freedom, t is computed from the exact finite sums; above,
the Cornish-Fisher series is exact to about an ulp (audit, appendix)."""


def _central(t: float, nu: int) -> float:
    """P(|T| <= t) for Student's t with ``nu`` degrees of freedom: the finite sums of
    A&S 26.7.3 (odd nu) and 26.7.4 (even nu), every term positive."""
    th = math.atan(t / math.sqrt(nu))
    s, c2 = math.sin(th), math.cos(th) ** 2
    if nu % 2 == 0:
        term = total = 1.0
        for k in range(1, nu // 2):
            term *= (2 * k - 1) / (2 * k) * c2
            total += term
        return s * total
    if nu == 1:
        return 2 * th / math.pi
    term = total = math.cos(th)
    for k in range(1, (nu - 1) // 2):
        term *= (2 * k) / (2 * k + 1) * c2
        total += term
    return 2 / math.pi * (th + s * total)


def _density(t: float, nu: int) -> float:
    return math.exp(math.lgamma((nu + 1) / 2) - math.lgamma(nu / 2)
                    - 0.5 * math.log(nu * math.pi) - (nu + 1) / 2 * math.log1p(t * t / nu))


def _cornish_fisher(z: float, nu: int) -> float:
    """The t quantile whose normal quantile is ``z`` (A&S 26.7.5, four terms)."""
    g1 = (z ** 3 + z) / 4
    g2 = (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96
    g3 = (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384
    g4 = (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / 92160
    return z + g1 / nu + g2 / nu ** 2 + g3 / nu ** 3 + g4 / nu ** 4


@lru_cache(maxsize=8192)
def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t with ``df`` >= 1 degrees of freedom, for
    0.5 < ``p`` < 1 (a two-sided interval at level 2p - 1 uses ±this). Raises
    ``ValueError`` outside those ranges."""
    if not 0.5 < p < 1 or df < 1:
        raise ValueError(f"t_quantile needs 0.5 < p < 1 and df >= 1, not p={p}, df={df}")
    level = 2 * p - 1  # P(|T| <= t) sought
    if df == 1:
        return math.tan(math.pi * (p - 0.5))
    if df == 2:
        return level * math.sqrt(2 / (1 - level * level))
    z = _NORMAL.inv_cdf(p)
    if df > EXACT_DF:
        return _cornish_fisher(z, df)
    start = _cornish_fisher(z, df) if df > 4 else max(z, 1.0)
    # Newton on P(|T| <= t) = level.
    return _solve(lambda t: _central(t, df) - level,
                  lambda t, gap: gap / (2 * _density(t, df)), start, 1e-15)


def _solve(gap: Callable[[float], float], step: Callable[[float, float], float],
           x: float, tolerance: float) -> float:
    """The root in (0, inf) of an increasing ``gap``, from ``x``: each round moves by
    ``step(x, gap(x))`` (Newton's or Halley's), kept inside the bracket the signs of the
    gap have shown (bisection, or doubling while unbounded, when a step leaves it), until
    a move is under ``tolerance`` relative."""
    low, high = 0.0, math.inf
    for _ in range(200):
        g = gap(x)
        if g == 0:
            return x
        if g > 0:
            high = x
        else:
            low = x
        nxt = x - step(x, g)
        if not low < nxt < high:  # also a NaN step
            nxt = (low + high) / 2 if high < math.inf else 2 * x
        if abs(nxt - x) <= tolerance * x:
            return nxt
        x = nxt
    return x


@lru_cache(maxsize=8192)
def t_two_sided(t: float, df: int) -> float:
    """P(|T| >= |t|) for Student's t with ``df`` >= 1 degrees of freedom (a two-sided
    p-value). Consistent with ``t_quantile``: above ``EXACT_DF`` the Cornish-Fisher series
    is inverted, so |t| > t_quantile(p, df) exactly when this is below 2(1 - p)."""
    t = abs(t)
    if math.isinf(t):
        return 0.0
    if df <= EXACT_DF:
        return max(0.0, 1.0 - _central(t, df))
    z = t * (1 - 1 / (4 * df))
    for _ in range(50):  # Newton on the series, which rises steeply in z
        step = (_cornish_fisher(z, df) - t) / _cornish_fisher_slope(z, df)
        z -= step
        if abs(step) <= 1e-15 * max(1.0, z):
            break
    return math.erfc(z / math.sqrt(2))


def _cornish_fisher_slope(z: float, nu: int) -> float:
    """d/dz of ``_cornish_fisher``."""
    d1 = (3 * z ** 2 + 1) / 4
    d2 = (25 * z ** 4 + 48 * z ** 2 + 3) / 96
    d3 = (21 * z ** 6 + 95 * z ** 4 + 51 * z ** 2 - 15) / 384
    d4 = (711 * z ** 8 + 5432 * z ** 6 + 7410 * z ** 4 - 5760 * z ** 2 - 945) / 92160
    return 1 + d1 / nu + d2 / nu ** 2 + d3 / nu ** 3 + d4 / nu ** 4


def _lower_gamma(a: float, x: float) -> float:
    """The regularized lower incomplete gamma P(a, x): its series below a + 1, its
    continued fraction (modified Lentz) above (Numerical Recipes, 6.2)."""
    if x <= 0:
        return 0.0
    log_front = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1:
        term = total = 1.0 / a
        k = a
        for _ in range(100_000):
            k += 1
            term *= x / k
            total += term
            if term < total * 1e-16:
                break
        return min(1.0, total * math.exp(log_front))
    tiny = 1e-300
    b = x + 1 - a
    c, d = 1 / tiny, 1 / b
    h = d
    for i in range(1, 100_000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-16:
            break
    return max(0.0, 1.0 - math.exp(log_front) * h)


LARGE_SHAPE = 1e4
"""The shape past which ``gamma_quantile`` is the Wilson-Hilferty cube root: its relative
error there is under 1e-7 (invisible in a taux to 0.1 %), and Newton's series would take
thousands of terms."""


@lru_cache(maxsize=8192)
def gamma_quantile(p: float, shape: float) -> float:
    """The ``p`` quantile (0 < p < 1) of the gamma distribution of shape ``shape`` > 0 and
    scale 1 (within 1e-12 of ``scipy.stats.gamma.ppf``, relative, up to ``LARGE_SHAPE``;
    1e-7 past it). Raises ``ValueError`` outside those ranges."""
    if not 0 < p < 1 or not shape > 0 or math.isinf(shape):
        raise ValueError(f"gamma_quantile needs 0 < p < 1 and shape > 0, not {p}, {shape}")
    z = _NORMAL.inv_cdf(p)
    # Wilson-Hilferty: (X/a)^(1/3) is nearly normal, mean 1 - 1/(9a), variance 1/(9a).
    # It starts Halley's iterations, and is the answer past LARGE_SHAPE.
    wh = shape * (1 - 1 / (9 * shape) + z / (3 * math.sqrt(shape))) ** 3
    if shape > LARGE_SHAPE:
        return wh
    start = wh if wh > 0 else math.exp((math.log(p) + math.lgamma(shape + 1)) / shape)
    log_norm = math.lgamma(shape)

    def halley(x: float, gap: float) -> float:
        density = math.exp((shape - 1) * math.log(x) - x - log_norm)
        if density <= 0:
            return math.nan
        newton = gap / density
        # f''/f' = (a - 1)/x - 1 for the gamma density: the cubic step.
        return newton / (1 + min(1.0, max(-0.9, newton * ((shape - 1) / x - 1) / 2)))

    return _solve(lambda x: _lower_gamma(shape, x) - p, halley, start, 1e-13)
