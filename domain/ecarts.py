"""From pairs' differences to verdicts: Holm's step-down, the intervals drawn at each
step's level, and the claims held back (pure; SPEC, "Ranking presets: the classement";
ADR-0081). ``domain.comparaisons`` and ``domain.appariees`` form the pairs' ``Ecart``s;
this module judges them all alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import ceil, floor, sqrt
from typing import Any

from miam_economies.domain.intervalles import Intervalle
from miam_economies.domain.quantiles import t_quantile, t_two_sided

NIVEAU_VERDICT = 0.99
"""The family-wise confidence of the verdicts and of their intervals, two-sided: where
nothing differs, any verdict of a classement is wrong at most 1 - 0.99 = 1 % of the time,
the SPEC's target, and a claim between two groups that do differ names the wrong one at
most 0.5 % of the time (95 % would allow 5 % and 2.5 %; ADR-0081)."""

MIN_CORRECTIONS = 3
"""Effective corrections, (Σc)²/Σc² (``Echantillon.corrections_effectives``), each group
needs before a taux verdict: fewer, and the sample cannot tell rare large reworks from
none (ADR-0081)."""


@dataclass(frozen=True, slots=True)
class Comparaison:
    """One pair's verdict, the SPEC's fields: ``a`` ranked above ``b``; ``difference`` =
    the criterion of a minus that of b (tokens per demande, or a taux); ``intervalle`` its
    interval at ``NIVEAU_VERDICT`` adjusted for the number of pairs (a bound None where the
    data cannot give it); ``verdict``; ``raison`` (why a claim is held back, else None);
    ``taches`` the common tasks of a paired comparison (None otherwise)."""

    a: str
    b: str
    difference: float | None
    intervalle: Intervalle | None
    verdict: str
    raison: str | None
    taches: int | None = None
    a_completer: tuple[int, int] | None = None

    def as_dict(self) -> dict[str, Any]:
        """The wire shape: the fields in order, the interval a list, ``taches`` only for a
        paired comparison, ``a_completer`` (``{"a": n, "b": m}`` or null) only for an
        ``indiscernable`` one."""
        out: dict[str, Any] = {"a": self.a, "b": self.b, "difference": self.difference,
                               "intervalle": None if self.intervalle is None
                               else list(self.intervalle),
                               "verdict": self.verdict, "raison": self.raison}
        if self.taches is not None:
            out["taches"] = self.taches
        if self.verdict == "indiscernable":
            out["a_completer"] = (None if self.a_completer is None else
                                  {"a": self.a_completer[0], "b": self.a_completer[1]})
        return out


@dataclass(frozen=True, slots=True)
class Ecart:
    """A pair before Holm: ``difference`` (a - b) and its standard error ``se``, ``df``
    degrees of freedom; ``hold`` the reason no claim may be made (None: none);
    ``open_low``/``open_high`` the bounds the data cannot give; ``unfloored`` the
    (se, df) the pair would have without the size floor, when the floor bound, and
    ``floor_note`` the reason to give if the floor alone holds a claim back;
    ``measured`` False when there is no spread to judge by (no interval); ``taches`` the
    common tasks of a paired comparison; ``sizes`` the demandes (or, paired, the common
    tasks) of a and b that ``se`` was measured on, which ``a_completer`` scales, at least
    by ``k_min`` (what lifts a taux hold: ``MIN_CORRECTIONS`` effective corrections)."""

    a: str
    b: str
    difference: float | None
    se: float = 0.0
    df: int = 1
    hold: str | None = None
    open_low: bool = False
    open_high: bool = False
    unfloored: tuple[float, int] | None = None
    floor_note: str | None = None
    measured: bool = True
    taches: int | None = None
    sizes: tuple[int, int] | None = None
    k_min: float = 1.0


def unmeasured(a: str, b: str, difference: float | None, why: str,
               taches: int | None = None) -> Ecart:
    """A pair with nothing to judge its difference by: no interval, judged last."""
    return Ecart(a, b, difference, hold=why, measured=False, taches=taches)


def taux_hold(cle: str, corrections: float, effectives: float, where: str = ""
              ) -> tuple[str | None, bool]:
    """Why group ``cle`` holds a taux claim back, and whether its taux has no upper bound:
    no correction yet (unbounded), or fewer than ``MIN_CORRECTIONS`` effective ones."""
    if corrections == 0:
        return f"no correction yet in {cle}{where}", True
    if effectives < MIN_CORRECTIONS:
        return (f"too few corrections in {cle}{where} to bound its taux_reprise (fewer than "
                f"{MIN_CORRECTIONS} equal ones)"), False
    return None, False


def holm(ecarts: Sequence[Ecart], selon: str) -> list[Comparaison]:
    """Holm's step-down over the pairs, in their order: the pair of smallest p-value is
    judged at level α/m, the next at α/(m - 1)... (α = 1 - ``NIVEAU_VERDICT``); at the
    first pair not separated the steps stop, and it and every later pair are judged, and
    their intervals drawn, at its level, so the intervals are compatible with the steps
    (not simultaneous). A pair held back, or without a spread, is judged last (p = 1):
    it never opens a looser level for the others. A pair is claimed exactly when its
    interval excludes 0 and no ``hold`` stands."""
    alpha, m = 1 - NIVEAU_VERDICT, len(ecarts)
    order = sorted(range(m), key=lambda i: (_p_value(ecarts[i]), i))
    out: list[Comparaison | None] = [None] * m
    stopped_at: int | None = None
    for step, i in enumerate(order):
        ecart = ecarts[i]
        k = m - step if stopped_at is None else stopped_at
        level = 1 - alpha / (2 * k)
        got = bounds(ecart, ecart.se, ecart.df, level)
        separated = (stopped_at is None and got is not None
                     and (got[0] > 0 or got[1] < 0))
        if stopped_at is None and not separated:
            stopped_at = k
        out[i] = _verdict(ecart, got, separated, level, selon)
    return [c for c in out if c is not None]


def _p_value(ecart: Ecart) -> float:
    if not ecart.measured or ecart.hold is not None or ecart.difference is None:
        return 1.0
    return t_two_sided(ecart.difference / ecart.se, ecart.df)


def bounds(ecart: Ecart, se: float, df: int, level: float) -> tuple[float, float] | None:
    """The interval difference ± t(level; df)·se of a measured pair, else None."""
    if not ecart.measured or ecart.difference is None:
        return None
    half = t_quantile(level, df) * se
    return ecart.difference - half, ecart.difference + half


def _verdict(ecart: Ecart, got: tuple[float, float] | None, separated: bool,
             level: float, selon: str) -> Comparaison:
    intervalle: Intervalle | None = None
    if got is not None:
        intervalle = (None if ecart.open_low else got[0],
                      None if ecart.open_high else got[1])
    verdict, raison = "indiscernable", ecart.hold
    if separated and raison is None:
        assert got is not None
        a_ahead = got[0] > 0 if selon == "net" else got[1] < 0
        verdict = "a_devant" if a_ahead else "b_devant"
    elif raison is None and ecart.unfloored is not None:
        unfloored = bounds(ecart, *ecart.unfloored, level)
        if unfloored is not None and (unfloored[0] > 0 or unfloored[1] < 0):
            raison = ecart.floor_note
    # A pair held back (too few corrections yet) still says what its spread so far asks.
    more = a_completer(ecart, level) if verdict == "indiscernable" else None
    return Comparaison(ecart.a, ecart.b, ecart.difference, intervalle, verdict, raison,
                       ecart.taches, more)


def a_completer(ecart: Ecart, level: float) -> tuple[int, int] | None:
    """About how many more demandes a and b need (``ecart.sizes`` scaled alike: new
    sessions like the old ones) for a true difference of the size observed to be told at
    ``level``: the smallest factor k, at least ``ecart.k_min``, with
    t(level; df·k)·se/√k <= |difference| (by bisection), the standard error shrinking as
    1/√k and the degrees of freedom growing with the sessions; then
    (n_a·(k - 1), n_b·(k - 1)), rounded up. At k, such a
    difference is told about half the time (``tests.simulation.more_data`` measures how
    often within a factor of two; ADR-0167). None when the difference is 0 or
    unmeasured, or past a million times the data (no size tells it)."""
    d = ecart.difference
    if (not ecart.measured or d is None or d == 0 or ecart.se <= 0 or ecart.sizes is None
            or ecart.k_min == float("inf")):
        return None
    se, df, size = ecart.se, ecart.df, abs(d)

    def told(k: float) -> bool:
        # The standard error shrinks as 1/√k; the degrees of freedom grow with the data.
        return t_quantile(level, max(1, floor(df * k))) * se / sqrt(k) <= size

    def root(t: float) -> float:
        # The k at which t·se/√k = |difference|.
        return (t * se / size) ** 2

    low = max(1.0, ecart.k_min)
    if told(low):
        high = low
    else:
        # The root's bracket (ADR-0167): t never falls below the normal quantile, so
        # nothing below root(z) tells it; t at df·k falls as k grows, so root(t at the
        # bracket's low end) tells it. Usually within a few per cent: a few halvings
        # instead of a doubling search (the classement's read computes every pair's).
        low = max(low, root(t_quantile(level, _NORMAL_DF)))
        high = max(low, root(t_quantile(level, max(1, floor(df * low)))))
        while not told(high):  # only by rounding: t only falls as k grows
            low, high = high, high * 2
        if high > _MAX_FACTOR:
            return None
        while high - low > 1e-4 * low:
            middle = (low + high) / 2
            low, high = (low, middle) if told(middle) else (middle, high)
    k = high
    na, nb = ecart.sizes
    return ceil(max(0.0, na * (k - 1))), ceil(max(0.0, nb * (k - 1)))


_MAX_FACTOR = 1e6
"""Past this factor on the data a difference is taken as one no size tells."""

_NORMAL_DF = 10**9
"""Degrees of freedom at which Student's t is the normal quantile (``quantiles``'
Cornish-Fisher expansion's limit)."""
