"""The classement: groups of demandes ranked by net per demande, with 95 % intervals (pure).

Source: SPEC.md, "Ranking presets: the classement"; the method of the intervals, its
assumptions and its measured coverage: ADR-0072. The unit is a demande whose delegation has
arrived, with the per-demande view's figures (tokens): its delegation's ``evites``, its
pilotage share, its corrections, and ``net = evites - pilotage - corrections``
(``domain.bilan.Figures.net``).

A group is kept as an ``Echantillon``: eight exact integer sums over its demandes, sums of
squares and of products included. They are all the intervals need (variances follow from
sums exactly), and sums add, so a projection can keep them incrementally and read a
classement without the demandes. Sums stay exact ints; only the ratios and the intervals
are floats, computed at read time (ADR-0005, ADR-0051).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import astuple, dataclass, fields
from fractions import Fraction
from functools import lru_cache
from math import exp, log, sqrt
from typing import Any

CRITERE = "net_par_demande"
"""The figure the sufficient groups are ranked on, descending (SPEC)."""

NIVEAU = 0.95
"""The confidence level of every interval: two-sided, so t is the 0.975 quantile."""

Intervalle = tuple[float, float]
"""``(low, high)``, the figure's unit; ``low <= figure <= high``."""

_LOG_MAX = 709.0
"""Just under log(max float): the log-ratio interval's high end is capped there (ADR-0072)."""


@dataclass(frozen=True, slots=True)
class Echantillon:
    """The exact sums over one group's demandes (tokens; squares in tokens²).

    ``demandes`` counts them; ``evites``, ``pilotage`` and ``corrections`` sum their
    figures; ``evites_squared``, ``corrections_squared``, ``evites_times_corrections`` and
    ``net_squared`` sum e², c², e·c and (e - p - c)² per demande. ``a + b`` is the sample
    of both groups of demandes; ``a - b`` takes ``b``'s demandes out again: a demande's
    figures change as its pilotages and corrections arrive, so a fold replaces its
    contribution, ``groupe - Echantillon.demande(*old) + Echantillon.demande(*new)``.
    """

    demandes: int = 0
    evites: int = 0
    pilotage: int = 0
    corrections: int = 0
    evites_squared: int = 0
    corrections_squared: int = 0
    evites_times_corrections: int = 0
    net_squared: int = 0

    @staticmethod
    def demande(evites: int, pilotage: int, corrections: int) -> Echantillon:
        """The sample of one demande with these figures (tokens)."""
        return Echantillon(*Echantillon.sums_of(evites, pilotage, corrections))

    @staticmethod
    def sums_of(evites: int, pilotage: int, corrections: int) -> tuple[int, ...]:
        """The eight sums of one demande with these figures, in field order, as a plain
        tuple: what a projection adds per demande without building a sample object."""
        net = evites - pilotage - corrections
        return (1, evites, pilotage, corrections, evites * evites,
                corrections * corrections, evites * corrections, net * net)

    @staticmethod
    def of(rows: Iterable[tuple[int, int, int]]) -> Echantillon:
        """The sample of demandes given as ``(evites, pilotage, corrections)`` (tokens)."""
        n = e = p = c = ee = cc = ec = nn = 0
        for evites, pilotage, corrections in rows:  # local sums: no object per demande
            net = evites - pilotage - corrections
            n += 1
            e += evites
            p += pilotage
            c += corrections
            ee += evites * evites
            cc += corrections * corrections
            ec += evites * corrections
            nn += net * net
        return Echantillon(n, e, p, c, ee, cc, ec, nn)

    def __add__(self, other: Echantillon) -> Echantillon:
        return Echantillon(*(a + b for a, b in zip(astuple(self), astuple(other), strict=True)))

    def __sub__(self, other: Echantillon) -> Echantillon:
        return Echantillon(*(a - b for a, b in zip(astuple(self), astuple(other), strict=True)))

    @property
    def net(self) -> int:
        """evites - pilotage - corrections, tokens."""
        return self.evites - self.pilotage - self.corrections


@dataclass(frozen=True, slots=True)
class Groupe:
    """One group of the classement, the SPEC's fields in the SPEC's order (tokens; the
    ratios and intervals as floats; ``rang`` None for a group that is not ``suffisant``)."""

    cle: str
    demandes: int
    evites: int
    pilotage: int
    corrections: int
    net: int
    net_par_demande: float
    taux_reprise: float | None
    intervalle_net_par_demande: Intervalle | None
    intervalle_taux_reprise: Intervalle | None
    suffisant: bool
    rang: int | None

    def as_dict(self) -> dict[str, Any]:
        """The wire shape: the fields in order, each interval a ``[low, high]`` list."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in ("intervalle_net_par_demande", "intervalle_taux_reprise"):
            out[name] = None if out[name] is None else list(out[name])
        return out


def classement(groupes: Mapping[str, Echantillon], minimum: int) -> list[Groupe]:
    """The groups ranked as the SPEC says: those with at least ``minimum`` demandes
    (``suffisant``) first, by net per demande descending, ``rang`` 1, 2, 3...; then the
    others by the same criterion, ``rang`` None. Ties keep the order of ``cle``.

    The order compares exact fractions, not the emitted floats. A group with no demande
    (every one taken out again) is left out: it has no figure to rank. Raises
    ``ValueError`` when ``minimum`` < 1 or a group has a negative count of demandes.
    """
    if minimum < 1:
        raise ValueError(f"min must be an integer >= 1, not {minimum}")
    for cle, e in groupes.items():
        if e.demandes < 0:
            raise ValueError(f"group {cle!r} has {e.demandes} demandes")
    present = sorted((cle, e) for cle, e in groupes.items() if e.demandes > 0)
    # Stable sort on (not sufficient, -mean) over the cle order: ties keep the cle order.
    present.sort(key=lambda item: (item[1].demandes < minimum,
                                   -Fraction(item[1].net, item[1].demandes)))
    out = []
    for rang, (cle, e) in enumerate(present, start=1):
        suffisant = e.demandes >= minimum
        out.append(Groupe(
            cle=cle, demandes=e.demandes, evites=e.evites, pilotage=e.pilotage,
            corrections=e.corrections, net=e.net, net_par_demande=e.net / e.demandes,
            taux_reprise=e.corrections / e.evites if e.evites > 0 else None,
            intervalle_net_par_demande=intervalle_net_par_demande(e),
            intervalle_taux_reprise=intervalle_taux_reprise(e),
            suffisant=suffisant, rang=rang if suffisant else None))
    return out


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
    half = quantile_t(n - 1) * sqrt(float(variance))
    return _around(mean - half, mean, mean + half)


def intervalle_taux_reprise(e: Echantillon) -> Intervalle | None:
    """The 95 % interval of the taux de reprise, corrections / evites as a ratio of sums.

    Fieller's interval when it is bounded (evites clearly above zero); otherwise the delta
    method on log(ratio); otherwise (no corrections at all) the delta method on the ratio,
    which is then [0, 0]. The low end is at least 0: corrections are costs, never negative,
    so no true ratio lies below. None below 2 demandes or when evites <= 0 (no ratio).
    """
    n, x, y = e.demandes, e.evites, e.corrections
    if n < 2 or x <= 0:
        return None
    ratio = y / x
    # Variances and covariance of the sums Y and X (n times those of one demande), exact.
    vxx = Fraction(n * e.evites_squared - x * x, n - 1)
    vyy = Fraction(n * e.corrections_squared - y * y, n - 1)
    vxy = Fraction(n * e.evites_times_corrections - x * y, n - 1)
    t = quantile_t(n - 1)
    t2 = Fraction(t) ** 2
    # Fieller: {θ : (Y - θX)² <= t²·Var(Y - θX)} is a·θ² - 2b·θ + c <= 0.
    a = x * x - t2 * vxx
    if a > 0:  # bounded; it holds θ = Y/X, where the left side is 0
        b = x * y - t2 * vxy
        c = y * y - t2 * vyy
        centre = float(b / a)
        half = sqrt(max(0.0, float((b * b - a * c) / (a * a))))
        return _around(max(0.0, centre - half), ratio, centre + half)
    if y > 0:  # log-delta: Var(log Y - log X) ≈ Vyy/Y² + Vxx/X² - 2Vxy/(XY)
        variance = vyy / (y * y) + vxx / (x * x) - 2 * vxy / (x * y)
        half = t * sqrt(max(0.0, float(variance)))
        centre = log(ratio)
        return _around(exp(centre - half), ratio, exp(min(centre + half, _LOG_MAX)))
    # No corrections (each is >= 0, so all are 0): the delta method on the ratio itself,
    # t·sqrt(Var(Y - θX))/X at θ = 0, is t·sqrt(Var(Y))/X = 0: zero width at 0.
    half = t * sqrt(max(0.0, float(vyy))) / x
    return _around(max(0.0, ratio - half), ratio, ratio + half)


def _around(low: float, figure: float, high: float) -> Intervalle:
    # Mathematically low <= figure <= high; the floats may miss by an ulp (a zero-width
    # interval computed two ways), so the interval is widened to its figure, never more.
    return (min(low, figure), max(high, figure))


@lru_cache(maxsize=4096)
def quantile_t(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` >= 1 degrees of freedom (for a 95 %
    two-sided interval). SciPy is imported here, not with the module: importing the domain
    (the routes, the fold) stays light until a classement is computed."""
    from scipy.special import stdtrit

    return float(stdtrit(df, 0.975))
