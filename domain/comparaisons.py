"""Verdicts between the classement's groups from their own demandes: "a ahead of b" or
"can't tell yet" (pure; SPEC, "Ranking presets: the classement"; ADR-0081).

For every pair of ranked groups (a ranked above b), the criterion's difference a - b and
its standard error by Welch's t from each group's sums (on the taux, the delta method on
each ratio), the variances over each group's sessions and the degrees of freedom from
their numbers (ADR-0166), judged by Holm's step-down (``domain.ecarts``). A group of at
most half the other's sessions takes the larger one's spread per demande as a floor for
its own: a small sample of
skewed costs underestimates its spread exactly when it misses its rare large values,
which is when it looks better or worse than it is; near-equal sizes need no floor, their
skews cancel in the difference. On the taux, a group needs corrections to be compared
(``ecarts.taux_hold``). The simulations of ADR-0081 (``tests/simulation/verdicts.py``)
measure how often a verdict is wrong. Paired comparisons on common tasks:
``domain.appariees``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from math import floor, sqrt

from miam_economies.domain.ecarts import (
    MIN_CORRECTIONS,
    Comparaison,
    Ecart,
    holm,
    taux_hold,
    unmeasured,
)
from miam_economies.domain.echantillon import Echantillon
from miam_economies.domain.intervalles import variance_net_par_demande, variance_taux_reprise

FLOOR_RATIO = 2
"""A group with at most 1/FLOOR_RATIO of the other's sessions takes the larger group's
spread per demande as a floor for its own (ADR-0081; counted in sessions: ADR-0166)."""


MIN_SESSIONS_NET = 8
"""The effective sessions (``Echantillon.sessions_effectives``) each group needs before
a claim on net: below, a session or two of heavy costs can carry a group's mean further
than its spread over so few shows (the independent audit of issue 30: 2 % of runs wrong
at 300 demandes in sessions of ~30, 0 with this hold; ADR-0171)."""


UNCLUSTERED = "its demandes' sessions are not kept: no claim on it (ADR-0166)"
"""Why a pair with a group of ``comparaisons``' ``unclustered`` is held back."""


def comparaisons(groupes: Sequence[tuple[str, Echantillon]], selon: str,
                 unclustered: Collection[str] = ()) -> list[Comparaison]:
    """The verdicts between ``groupes`` (in rank order: each pair's ``a`` is the higher
    ranked) on ``selon`` (``"taux"``: taux de reprise, less is ahead; ``"net"``: net per
    demande, more is ahead), from each group's own demandes (ADR-0081). A pair with a
    group of ``unclustered`` (whose sessions are not kept: ``(inconnu)``) is held back,
    its difference shown without an interval (ADR-0166)."""
    stats = {cle: _stats(e, selon) for cle, e in groupes}
    ecarts = []
    for i, (a, ea) in enumerate(groupes):
        for b, eb in groupes[i + 1:]:
            if a in unclustered or b in unclustered:
                # No interval either: one over demandes is what ADR-0166 rejects.
                held = a if a in unclustered else b
                ecarts.append(unmeasured(a, b, stats[a][0] - stats[b][0],
                                         f"{held}: {UNCLUSTERED}"))
                continue
            ecarts.append(_welch(a, ea, stats[a], b, eb, stats[b], selon))
    return holm(ecarts, selon)


def ecart(a: str, ea: Echantillon, b: str, eb: Echantillon, selon: str) -> Ecart:
    """Two samples' pair before Holm (``Ecart``): the criterion's difference a - b, its
    Welch standard error over sessions, the size floor and the taux holds, as every pair
    of the classement is formed (``domain.derive`` compares a group's recent period with
    the rest of its history this way)."""
    return _welch(a, ea, _stats(ea, selon), b, eb, _stats(eb, selon), selon)


def _stats(e: Echantillon, selon: str) -> tuple[float, float, float]:
    """A group's figure, its variance (``domain.intervalles``: over its sessions, never
    below the per-demande one; 0.0 below 2 sessions), exact before one conversion to
    float, and on the taux its effective corrections (``Echantillon``'s, 0.0 on net):
    once a group, not once a pair (an exact fraction each time)."""
    if selon == "net":
        figure, variance = e.net / e.demandes, variance_net_par_demande(e)
        return figure, 0.0 if variance is None else float(variance), 0.0
    figure, variance = e.corrections / e.evites, variance_taux_reprise(e)
    return (figure, 0.0 if variance is None else float(variance),
            float(e.corrections_effectives))


def _welch(a: str, ea: Echantillon, sa: tuple[float, float, float], b: str,
           eb: Echantillon, sb: tuple[float, float, float], selon: str) -> Ecart:
    na, nb = ea.demandes, eb.demandes
    ka, kb = ea.sessions, eb.sessions
    difference = sa[0] - sb[0]
    if min(na, nb) < 2:
        small = a if na < nb else b
        return unmeasured(a, b, difference, f"fewer than 2 demandes in {small}")
    if min(ka, kb) < 2:
        small = a if ka < kb else b
        return unmeasured(a, b, difference, f"fewer than 2 sessions in {small}")
    va, vb = sa[1], sb[1]
    # The net's degrees of freedom count effective sessions (ADR-0171); the taux's, the
    # sessions (its corrections' unevenness is in its holds: ADR-0166).
    da, db = ((ea.sessions_effectives, eb.sessions_effectives) if selon == "net"
              else (ka, kb))
    se, df = _welch_se_df(va, da, vb, db)
    unfloored = note = floored = None
    low, high = (a, b) if va * na < vb * nb else (b, a)  # by spread per demande
    if max(ka, kb) >= FLOOR_RATIO * min(ka, kb):
        # The group of fewer sessions has a spread per demande at least the other's: a
        # variance of its figure at least the other's scaled by their demandes.
        small = a if ka < kb else b
        note = f"unequal sizes: {_sizes(small, ea, eb) if small == a else _sizes(small, eb, ea)}"
        floored = small if small == low and va * na != vb * nb else None
    elif selon == "net" and va * na != vb * nb:
        # Skewed nets (a rare session of huge reads): a group that has not met one yet
        # shows a low mean and a low spread together, so the spread per demande of the
        # two is taken as the larger one's (ADR-0175, decision 3).
        note = (f"{low}'s net varies less than {high}'s: on skewed data a group that has "
                "not met its rare large values yet underestimates its spread")
        floored = low
    if floored is not None:
        unfloored, (se, df) = (se, df), (_welch_se_df(vb * nb / na, da, vb, db)
                                         if floored == a
                                         else _welch_se_df(va, da, va * na / nb, db))
    if se == 0:
        return unmeasured(a, b, difference, "no spread to judge by yet")
    hold, open_low, open_high, k_min = None, False, False, 1.0
    if selon == "net" and min(da, db) < MIN_SESSIONS_NET:
        # A few long sessions carry the mean: its spread over them is not yet known
        # (ADR-0171). k times the sessions lift the hold once k·min reaches the minimum.
        few, cle = (da, a) if da <= db else (db, b)
        hold = (f"too few sessions in {cle} to judge its net: as uneven as about "
                f"{few:.1f} equal ones, fewer than {MIN_SESSIONS_NET}")
        k_min = MIN_SESSIONS_NET / few
    if selon == "taux":
        ma, mb = sa[2], sb[2]
        hold_a, open_high = taux_hold(a, ea.corrections, ma)
        hold_b, open_low = taux_hold(b, eb.corrections, mb)
        hold = hold_a or hold_b
        # Corrections come in proportion to the data: k times the sessions lift a hold
        # of too few once k·m reaches the minimum; none yet, no size can be told.
        k_min = MIN_CORRECTIONS / min(ma, mb) if min(ma, mb) > 0 else float("inf")
    return Ecart(a, b, difference, se, df, hold, open_low, open_high, unfloored, note,
                 sizes=(na, nb), k_min=k_min)


def _sizes(cle: str, small: Echantillon, large: Echantillon) -> str:
    """Why the floor binds, in words: the smaller group's size against the larger's, in
    demandes where every session holds one, else in sessions."""
    if small.sessions == small.demandes and large.sessions == large.demandes:
        return (f"{cle} has {small.demandes:,} demandes against {large.demandes:,}, too few "
                "to know its spread")
    return (f"{cle} has {small.demandes:,} demandes in {small.sessions:,} sessions against "
            f"{large.sessions:,} sessions, too few to know its spread")


def _welch_se_df(va: float, ka: float, vb: float, kb: float) -> tuple[float, int]:
    """Welch's standard error from the two figures' variances and Satterthwaite's degrees
    of freedom from their sessions, ka and kb (ka - 1, kb - 1; effective sessions may
    be fractions), rounded down, at least 1."""
    v = va + vb
    if v == 0:
        return 0.0, max(1, floor(ka + kb - 2))
    # An effective count just above 1 (one session holding nearly every demande) leaves
    # about one degree of freedom, never a division by zero.
    df = v * v / (va * va / max(ka - 1, _TINY) + vb * vb / max(kb - 1, _TINY))
    # Equal variances give a whole df that floats may land a hair below.
    return sqrt(v), max(1, floor(df + _TINY))


_TINY = 1e-9
"""The least ``k - 1`` Satterthwaite divides by."""
