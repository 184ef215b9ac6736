"""Verdicts between the classement's groups on the tasks both ran (pure; SPEC, "Ranking
presets: the classement", ``apparier``; ADR-0081).

MIAM's tests run the same tasks under several presets and write the task on the journal
line (a field such as ``test_id``). Compared task by task, the tasks' own sizes (most of
a demande's spread) cancel in the differences. Each pair is judged by Holm's step-down
with the other pairs (``domain.ecarts``), with ``taches`` the number of common tasks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from math import fsum, sqrt
from typing import NamedTuple

from miam_economies.domain.ecarts import (
    MIN_CORRECTIONS,
    Comparaison,
    Ecart,
    holm,
    taux_hold,
    unmeasured,
)


class Tache(NamedTuple):
    """One group's demandes on one task: their count and sums (tokens)."""

    demandes: int
    evites: int
    pilotage: int
    corrections: int


Means = tuple[float, float, float]
"""One group's means on one task: net, corrections and evites per demande (tokens)."""


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
    return holm(ecarts, selon)


def _paired(a: str, ta: Sequence[Means], b: str, tb: Sequence[Means], selon: str) -> Ecart:
    count = len(ta)
    if count == 0:
        return unmeasured(a, b, None, "no common task", 0)
    if selon == "net":
        return _mean_of(a, b, [x[0] - y[0] for x, y in zip(ta, tb, strict=True)])
    sca, sea = fsum(x[1] for x in ta), fsum(x[2] for x in ta)
    scb, seb = fsum(y[1] for y in tb), fsum(y[2] for y in tb)
    if sea <= 0 or seb <= 0:
        return unmeasured(a, b, None, "evites not above 0 on the common tasks", count)
    ra, rb = sca / sea, scb / seb
    # z_t = (C_t - R·E_t) / mean(E) per side; the pair's u_t = z_a,t - z_b,t.
    wa, wb = count / sea, count / seb
    ecart = _mean_of(a, b, [(x[1] - ra * x[2]) * wa - (y[1] - rb * y[2]) * wb
                            for x, y in zip(ta, tb, strict=True)], ra - rb)
    if not ecart.measured:
        return ecart
    squares_a, squares_b = fsum(x[1] * x[1] for x in ta), fsum(y[1] * y[1] for y in tb)
    where = " on the common tasks"
    ma = sca * sca / squares_a if sca else 0.0
    mb = scb * scb / squares_b if scb else 0.0
    hold_a, open_high = taux_hold(a, sca, ma, where)
    hold_b, open_low = taux_hold(b, scb, mb, where)
    k_min = MIN_CORRECTIONS / min(ma, mb) if min(ma, mb) > 0 else float("inf")
    return Ecart(a, b, ecart.difference, ecart.se, ecart.df, hold_a or hold_b, open_low,
                 open_high, taches=count, sizes=(count, count), k_min=k_min)


def _mean_of(a: str, b: str, diffs: Sequence[float], difference: float | None = None
             ) -> Ecart:
    """The pair judged by the mean of its per-task ``diffs`` (``difference``: the figure
    to report, by default that mean), t with T - 1 degrees of freedom."""
    count = len(diffs)
    mean = fsum(diffs) / count
    difference = mean if difference is None else difference
    if count < 2:
        return unmeasured(a, b, difference, "fewer than 2 common tasks", count)
    se = sqrt(fsum((d - mean) ** 2 for d in diffs) / (count - 1) / count)
    if se == 0:
        return unmeasured(a, b, difference, "no spread to judge by yet", count)
    return Ecart(a, b, difference, se, count - 1, taches=count, sizes=(count, count))
