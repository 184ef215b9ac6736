"""Verdicts between the classement's groups: "a ahead of b (95 %)" or "can't tell yet"
(pure; SPEC, "Ranking presets: the classement"; ADR-0081).

For every pair of ranked groups (a ranked above b), the criterion's difference a - b, its
95 % interval adjusted for the number of pairs by Holm's step-down, and a verdict:
``a_devant``, ``b_devant`` or ``indiscernable``, with the ``raison`` when a claim is held
back. Two ways to form a pair's difference:

* ``comparaisons``: the groups' own demandes (Welch's t from each group's sums). A group
  much smaller than the other takes the larger one's spread as a floor for its own: a
  small sample of skewed costs underestimates its spread exactly when it misses its rare
  large values, which is when it looks better or worse than it is.
* ``comparaisons_appariees``: the tasks both groups ran (MIAM's tests: a journal field such
  as ``test_id``), per-task means and paired differences, so the tasks' own sizes cancel.

On the taux de reprise, a group needs corrections to be compared: with none yet, or with
fewer than ``MIN_CORRECTIONS`` effective ones, the claim is held back. The simulations of
ADR-0081 (``tests/verdicts.py``) measure how often a verdict is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from math import floor, fsum, sqrt
from typing import Any, NamedTuple

from miam_economies.domain.echantillon import Echantillon
from miam_economies.domain.intervalles import NIVEAU, Intervalle
from miam_economies.domain.quantiles import t_quantile, t_two_sided

MIN_CORRECTIONS = 3
"""Effective corrections, (Σc)²/Σc², each group needs before a taux verdict: fewer, and the
sample cannot tell rare large reworks from none (ADR-0081)."""


@dataclass(frozen=True, slots=True)
class Comparaison:
    """One pair's verdict, the SPEC's fields: ``a`` ranked above ``b``; ``difference`` =
    the criterion of a minus that of b (tokens per demande, or a taux); ``intervalle`` its
    Holm-adjusted 95 % interval (a bound None where the data cannot give it); ``verdict``;
    ``raison`` (why a claim is held back, else None); ``taches`` the common tasks of a
    paired comparison (None otherwise)."""

    a: str
    b: str
    difference: float | None
    intervalle: Intervalle | None
    verdict: str
    raison: str | None
    taches: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """The wire shape: the fields in order, the interval a list, ``taches`` only for a
        paired comparison."""
        out: dict[str, Any] = {"a": self.a, "b": self.b, "difference": self.difference,
                               "intervalle": None if self.intervalle is None
                               else list(self.intervalle),
                               "verdict": self.verdict, "raison": self.raison}
        if self.taches is not None:
            out["taches"] = self.taches
        return out


class Tache(NamedTuple):
    """One group's demandes on one task: their count and sums (tokens)."""

    demandes: int
    evites: int
    pilotage: int
    corrections: int


@dataclass(frozen=True, slots=True)
class _Ecart:
    """A pair before Holm: difference and standard error; ``df`` degrees of freedom;
    ``hold`` the reason no claim may be made; ``open_low``/``open_high`` the bounds the
    data cannot give; ``floor_se``/``floor_df`` the same pair without the size floor
    (None when the floor did not bind) and ``floor_note`` the reason to give if the floor
    alone holds a claim back; ``measured`` False when there is no spread to judge by
    (fewer than 2 demandes or common tasks): no interval, judged last."""

    a: str
    b: str
    difference: float | None
    se: float
    df: int
    hold: str | None = None
    open_low: bool = False
    open_high: bool = False
    floor_se: float | None = None
    floor_df: int = 1
    floor_note: str | None = None
    taches: int | None = None
    measured: bool = True


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
    return _holm(ecarts, selon)


def comparaisons_appariees(groupes: Sequence[str],
                           taches: Mapping[str, Mapping[str, Tache]], selon: str
                           ) -> list[Comparaison]:
    """The verdicts between ``groupes`` (rank order) on ``selon``, each pair compared on
    the tasks both ran: ``taches[group][task]`` holds a group's demandes on a task.

    Net: the mean of the per-task differences of net per demande, t with T - 1 degrees of
    freedom over the T common tasks. Taux: Ra - Rb, each R the ratio of the per-task mean
    corrections to the per-task mean evites over the common tasks, its standard error from
    the paired linearised differences (the delta method), T - 1 degrees of freedom.
    """
    # Each group's per-task means once: (net, corrections, evites) per demande.
    means = {g: {task: ((x.evites - x.pilotage - x.corrections) / x.demandes,
                        x.corrections / x.demandes, x.evites / x.demandes)
                 for task, x in taches.get(g, {}).items()} for g in groupes}
    ecarts = []
    for i, a in enumerate(groupes):
        for b in groupes[i + 1:]:
            ma, mb = means[a], means[b]
            common = sorted(ma.keys() & mb.keys())
            ecarts.append(_paired(a, [ma[k] for k in common], b, [mb[k] for k in common],
                                  selon))
    return _holm(ecarts, selon)


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
           sb: tuple[float, float], selon: str) -> _Ecart:
    na, nb = ea.demandes, eb.demandes
    difference = sa[0] - sb[0]
    small = min((ea, a), (eb, b), key=lambda item: item[0].demandes)[1]
    if min(na, nb) < 2:
        return _Ecart(a, b, difference, 0.0, 1, hold=f"fewer than 2 demandes in {small}",
                      measured=False)
    va, vb = sa[1] / na, sb[1] / nb
    se, df = _welch_se_df(va, na, vb, nb)
    floor_se = floor_df = None
    note = (f"unequal sizes: {small} has {min(na, nb):,} demandes against "
            f"{max(na, nb):,}, too few to know its spread")
    if na != nb:  # the smaller group's spread is at least the larger one's
        if na < nb and sa[1] < sb[1]:
            floor_se, floor_df = se, df
            se, df = _welch_se_df(sb[1] / na, na, vb, nb)
        elif nb < na and sb[1] < sa[1]:
            floor_se, floor_df = se, df
            se, df = _welch_se_df(va, na, sa[1] / nb, nb)
    hold, open_low, open_high = None, False, False
    if selon == "taux":
        for cle, e, side in ((a, ea, "high"), (b, eb, "low")):
            if e.corrections == 0:
                hold = hold or f"no correction yet in {cle}"
                open_high, open_low = open_high or side == "high", open_low or side == "low"
            elif e.corrections ** 2 < MIN_CORRECTIONS * e.corrections_squared:
                hold = hold or (f"too few corrections in {cle} to bound its taux_reprise "
                                f"(fewer than {MIN_CORRECTIONS:g} equal ones)")
    return _Ecart(a, b, difference, se, df, hold, open_low, open_high,
                  floor_se, floor_df or 1, note)


def _welch_se_df(va: float, na: int, vb: float, nb: int) -> tuple[float, int]:
    """Welch's standard error and Satterthwaite's degrees of freedom, rounded down."""
    v = va + vb
    if v == 0:
        return 0.0, na + nb - 2
    df = v * v / (va * va / (na - 1) + vb * vb / (nb - 1))
    return sqrt(v), max(1, floor(df))


Means = tuple[float, float, float]
"""One group's means on one task: net, corrections and evites per demande (tokens)."""


def _paired(a: str, ta: Sequence[Means], b: str, tb: Sequence[Means], selon: str) -> _Ecart:
    count = len(ta)
    if count == 0:
        return _Ecart(a, b, None, 0.0, 1, hold="no common task", taches=0, measured=False)
    if selon == "net":
        diffs = [x[0] - y[0] for x, y in zip(ta, tb, strict=True)]
        return _paired_ecart(a, b, fsum(diffs) / count, diffs, count)
    sca, sea = fsum(x[1] for x in ta), fsum(x[2] for x in ta)
    scb, seb = fsum(y[1] for y in tb), fsum(y[2] for y in tb)
    if sea <= 0 or seb <= 0:
        return _Ecart(a, b, None, 0.0, 1, hold="evites not above 0 on the common tasks",
                      taches=count, measured=False)
    ra, rb = sca / sea, scb / seb
    # z_t = (C_t - R·E_t) / mean(E) per side; the pair's u_t = z_a,t - z_b,t.
    wa, wb = count / sea, count / seb
    diffs = [(x[1] - ra * x[2]) * wa - (y[1] - rb * y[2]) * wb
             for x, y in zip(ta, tb, strict=True)]
    ecart = _paired_ecart(a, b, ra - rb, diffs, count)
    hold, open_low, open_high = None, False, False
    for cle, side, total, squares in ((a, "high", sca, fsum(x[1] * x[1] for x in ta)),
                                      (b, "low", scb, fsum(y[1] * y[1] for y in tb))):
        if total == 0:
            hold = hold or f"no correction yet in {cle} on the common tasks"
            open_high, open_low = open_high or side == "high", open_low or side == "low"
        elif total * total < MIN_CORRECTIONS * squares:
            hold = hold or (f"too few corrections in {cle} on the common tasks to bound its "
                            f"taux_reprise (fewer than {MIN_CORRECTIONS:g} equal ones)")
    if ecart.measured and hold is not None:
        return _Ecart(a, b, ecart.difference, ecart.se, ecart.df, hold, open_low,
                      open_high, taches=count)
    return ecart


def _paired_ecart(a: str, b: str, difference: float, diffs: Sequence[float],
                  count: int) -> _Ecart:
    if count < 2:
        return _Ecart(a, b, difference, 0.0, 1, hold="fewer than 2 common tasks",
                      taches=count, measured=False)
    mean = fsum(diffs) / count
    variance = fsum((d - mean) ** 2 for d in diffs) / (count - 1)
    return _Ecart(a, b, difference, sqrt(variance / count), count - 1, taches=count)


def _holm(ecarts: Sequence[_Ecart], selon: str) -> list[Comparaison]:
    """Holm's step-down over the pairs: the pair of smallest p-value is judged at level
    α/m, the next at α/(m - 1), ...; at the first pair not separated the steps stop, and it
    and every pair after it are judged (and their intervals drawn) at its level. A claim
    is a verdict only where no ``hold`` stands."""
    alpha, m = 1 - NIVEAU, len(ecarts)
    order = sorted(range(m), key=lambda i: (_p_value(ecarts[i]), i))
    out: list[Comparaison | None] = [None] * m
    stopped_at: int | None = None
    for step, i in enumerate(order):
        ecart = ecarts[i]
        k = m - step if stopped_at is None else stopped_at
        level = 1 - alpha / (2 * k)
        bounds = _bounds(ecart, ecart.se, ecart.df, level)
        separated = (stopped_at is None and bounds is not None
                     and (bounds[0] > 0 or bounds[1] < 0))
        if stopped_at is None and not separated:
            stopped_at = k
        out[i] = _verdict(ecart, bounds, separated, level, selon)
    return [c for c in out if c is not None]


def _p_value(ecart: _Ecart) -> float:
    if not ecart.measured or ecart.difference is None or (
            ecart.se == 0 and ecart.difference == 0):
        return 1.0
    if ecart.se == 0:
        return 0.0
    return t_two_sided(ecart.difference / ecart.se, ecart.df)


def _bounds(ecart: _Ecart, se: float, df: int, level: float) -> tuple[float, float] | None:
    if not ecart.measured or ecart.difference is None:
        return None
    half = t_quantile(level, df) * se
    return ecart.difference - half, ecart.difference + half


def _verdict(ecart: _Ecart, bounds: tuple[float, float] | None, separated: bool,
             level: float, selon: str) -> Comparaison:
    intervalle: Intervalle | None = None
    if bounds is not None:
        intervalle = (None if ecart.open_low else bounds[0],
                      None if ecart.open_high else bounds[1])
    verdict, raison = "indiscernable", ecart.hold
    if separated and raison is None:
        assert bounds is not None
        a_ahead = bounds[0] > 0 if selon == "net" else bounds[1] < 0
        verdict = "a_devant" if a_ahead else "b_devant"
    elif raison is None and ecart.floor_se is not None:
        unfloored = _bounds(ecart, ecart.floor_se, ecart.floor_df, level)
        if unfloored is not None and (unfloored[0] > 0 or unfloored[1] < 0):
            raison = ecart.floor_note
    return Comparaison(ecart.a, ecart.b, ecart.difference, intervalle, verdict, raison,
                       ecart.taches)

