"""Demandes clustered by Claude Code session, and how often the classement's verdicts and
intervals are wrong on them (ADR-0166; the audit's §1, ``shared/reviews/
2026-12-03-classement-audit-2.md``, drawn again with a generator of our own).

A session holds 1 + Poisson(m - 1) demandes (m about 10 or 30). Its demandes share a
repository factor R (lognormal of mean 1, sigma ``repo``) on the task's size and on the
steering turn, and a difficulty type B (easy / normal / hard, weights 0.5 / 0.35 / 0.15,
correction chance x0.4 / x1 / x2.5, rescaled to mean 1) and a severity D (lognormal of
mean 1, sigma ``severity``) on the corrections' size. Each factor has mean 1 and is
independent of the rest, so a preset's true net per demande and taux are those of its
``shapes.Preset`` (closed form); only the spread between sessions grows. A group is whole
consecutive sessions until it holds at least n demandes, one preset per session (as a user
trying a preset does: the audit's worst case).

``python -m tests.simulation.sessions`` prints the ADR's tables; ``tests/unit/
test_sessions_verdicts.py`` holds the targets.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace
from math import log

import numpy as np

from miam_economies.domain.classement import DEFAULT_MIN, ordre
from miam_economies.domain.comparaisons import comparaisons
from miam_economies.domain.echantillon import Echantillon
from miam_economies.domain.intervalles import (
    intervalle_net_par_demande,
    intervalle_taux_reprise,
)
from tests.simulation.shapes import PRESETS, Preset

_TYPES = np.array([0.4, 1.0, 2.5])
_TYPE_WEIGHTS = np.array([0.5, 0.35, 0.15])
_TYPES = _TYPES / float((_TYPES * _TYPE_WEIGHTS).sum())  # mean 1: the truths stay
_TURN_K = np.array([1, 2, 3])
_TURN_P = np.array([0.6, 0.25, 0.15]) * _TURN_K / float((np.array([0.6, 0.25, 0.15])
                                                         * _TURN_K).sum())


@dataclass(frozen=True)
class Clustering:
    """How a preset's demandes cluster: ``m`` the mean demandes a session, ``repo`` and
    ``severity`` the sigmas of the log of the session's shared factors (0: none)."""

    name: str
    m: float
    repo: float
    severity: float


CLUSTERINGS = {
    "independent": Clustering("independent", 1, 0.0, 0.0),
    "mild ~10": Clustering("mild ~10", 10, 0.3, 0.3),
    "strong ~10": Clustering("strong ~10", 10, 0.85, 0.6),
    "strong ~30": Clustering("strong ~30", 30, 0.85, 0.6),
    "extreme ~30": Clustering("extreme ~30", 30, 1.1, 0.8),
}
"""The shapes of the ADR's table: the intra-session correlation of net they give is
measured by ``icc`` (about 0.014 mild, 0.064-0.070 strong, 0.092 extreme)."""


def draw_group(rng: np.random.Generator, preset: Preset, c: Clustering, n: int
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One group of whole sessions with at least ``n`` demandes: evites, pilotage and
    corrections per demande (whole tokens, floats) and each demande's session index."""
    if c.m <= 1:
        sizes = np.ones(n, dtype=np.int64)
    else:
        sizes = 1 + rng.poisson(c.m - 1, size=int(n / c.m * 2) + 8)
        while sizes.sum() < n:
            sizes = np.concatenate([sizes, 1 + rng.poisson(c.m - 1, size=8)])
        sizes = sizes[:int(np.searchsorted(np.cumsum(sizes), n)) + 1]
    k = len(sizes)
    session = np.repeat(np.arange(k), sizes)
    total = int(sizes.sum())
    repo = rng.lognormal(-c.repo ** 2 / 2, c.repo, k)[session] if c.repo else 1.0
    severity = rng.lognormal(-c.severity ** 2 / 2, c.severity, k)[session] if c.severity \
        else 1.0
    kind = _TYPES[rng.choice(3, size=k, p=_TYPE_WEIGHTS)][session] if c.severity else 1.0
    size = rng.lognormal(log(preset.l_median), preset.l_sigma, total) * repo
    sub = rng.random(total) < preset.p_sub
    other = rng.lognormal(log(preset.o_median), preset.o_sigma, total)
    turn = rng.lognormal(log(preset.t_median), preset.t_sigma, total) * repo
    turn_k = rng.choice(_TURN_K, size=total, p=_TURN_P)
    fraction = rng.lognormal(log(preset.f_median), preset.f_sigma, total) * severity
    corrected = rng.random(total) < preset.p_c * kind
    return (np.rint(np.where(sub, size, size - other)), np.rint(np.where(sub, turn / turn_k, 0)),
            np.rint(size * fraction * corrected), session)


def echantillon(e: np.ndarray, p: np.ndarray, c: np.ndarray, session: np.ndarray
                ) -> Echantillon:
    """The group's exact-enough sums (floats rounded: a simulation's, not the product's)."""
    net = e - p - c
    starts = np.flatnonzero(np.r_[True, session[1:] != session[:-1]])
    n_s = np.diff(np.r_[starts, len(session)]).astype(float)
    e_s, c_s, net_s = (np.add.reduceat(x, starts) for x in (e, c, net))
    sums = [len(e), e.sum(), p.sum(), c.sum(), (e * e).sum(), (c * c).sum(), (e * c).sum(),
            (net * net).sum(), len(starts), (n_s * n_s).sum(), (net_s * net_s).sum(),
            (n_s * net_s).sum(), (e_s * e_s).sum(), (c_s * c_s).sum(), (e_s * c_s).sum(),
            (n_s ** 3).sum(), (n_s * n_s * net_s).sum(), (n_s * net_s * net_s).sum()]
    return Echantillon(*(int(round(float(x))) for x in sums))


def icc(preset: Preset, c: Clustering, demandes: int = 400_000, seed: int = 7) -> float:
    """The intra-session correlation of net per demande this clustering gives (one-way
    ANOVA estimator over about ``demandes`` demandes)."""
    if c.m <= 1:
        return 0.0  # one demande a session: nothing shared, by construction
    rng = np.random.default_rng(seed)
    e, p, k, session = draw_group(rng, preset, c, demandes)
    net = e - p - k
    starts = np.flatnonzero(np.r_[True, session[1:] != session[:-1]])
    n_s = np.diff(np.r_[starts, len(session)]).astype(float)
    means = np.add.reduceat(net, starts) / n_s
    grand, groups, total = net.mean(), len(n_s), len(net)
    msb = float((n_s * (means - grand) ** 2).sum()) / (groups - 1)
    msw = float(((net - np.repeat(means, n_s.astype(int))) ** 2).sum()) / (total - groups)
    n0 = (total - float((n_s * n_s).sum()) / total) / (groups - 1)
    return (msb - msw) / (msb + (n0 - 1) * msw)


@dataclass(frozen=True)
class Outcome:
    """One cell on one criterion: the share of runs with a wrong claim, the claims made
    and how many were wrong, the share of true differences found, and the group
    intervals' coverage: held, wholly below the truth, wholly above (shares of groups
    with an interval)."""

    wrong_runs: float
    claims: int
    wrong_claims: int
    found: float
    held: float
    below: float
    above: float


def measure(clustering: str, presets: list[Preset], n: int, runs: int, seed: int,
            blind: bool = False) -> dict[str, Outcome]:
    """``{"taux": Outcome, "net": Outcome}`` of ``runs`` classements of ``presets`` (one
    group each, at least ``n`` demandes) clustered as ``CLUSTERINGS[clustering]``, ranked
    and compared by the product's own functions at the default ``min``. ``blind``: the
    samples say every demande is a session of its own (the classement before ADR-0166),
    the control that shows what the sessions change."""
    rng = np.random.default_rng(seed)
    c = CLUSTERINGS[clustering]
    names = [f"{chr(65 + i)}" for i in range(len(presets))]
    truth = dict(zip(names, presets, strict=True))
    draws = [{name: echantillon(*draw_group(rng, preset, c, n))
              for name, preset in truth.items()} for _ in range(runs)]
    if blind:
        draws = [{name: _blind(e) for name, e in run.items()} for run in draws]
    out = {}
    for selon in ("taux", "net"):
        wrong_runs = claims = wrong_claims = found = true_pairs = 0
        held = below = above = intervals = 0
        for run in draws:
            ranked = [cle for cle, _, ok in ordre(run, DEFAULT_MIN, selon) if ok]
            run_wrong = False
            for v in comparaisons([(cle, run[cle]) for cle in ranked], selon):
                better = _better(truth[v.a], truth[v.b], selon)
                claim = {"a_devant": "a", "b_devant": "b"}.get(v.verdict)
                true_pairs += better is not None
                claims += claim is not None
                found += claim is not None and claim == better
                bad = claim is not None and claim != better
                wrong_claims += bad
                run_wrong |= bad
            wrong_runs += run_wrong
            for cle, e in run.items():
                figure = truth[cle].net if selon == "net" else truth[cle].taux
                got = (intervalle_net_par_demande(e) if selon == "net"
                       else intervalle_taux_reprise(e))
                if got is None:
                    continue
                intervals += 1
                low, high = got
                if low is not None and low > figure:
                    above += 1
                elif high is not None and high < figure:
                    below += 1
                else:
                    held += 1
        out[selon] = Outcome(wrong_runs / runs, claims, wrong_claims,
                             found / true_pairs if true_pairs else 0.0,
                             held / max(intervals, 1), below / max(intervals, 1),
                             above / max(intervals, 1))
    return out


def _blind(e: Echantillon) -> Echantillon:
    return replace(e, sessions=e.demandes, session_demandes_squared=e.demandes,
                   session_net_squared=e.net_squared,
                   session_demandes_times_net=e.net, session_evites_squared=e.evites_squared,
                   session_corrections_squared=e.corrections_squared,
                   session_evites_times_corrections=e.evites_times_corrections,
                   session_demandes_cubed=e.demandes, session_demandes_squared_times_net=e.net,
                   session_demandes_times_net_squared=e.net_squared)


def _better(a: Preset, b: Preset, selon: str) -> str | None:
    ka, kb = (a.net, b.net) if selon == "net" else (-a.taux, -b.taux)
    return None if abs(ka - kb) < 1e-9 else "a" if ka > kb else "b"


EQUAL = [PRESETS[2]] * 5
"""Five truly equal presets: any claim is wrong."""

GRADED = list(PRESETS)
"""Five presets that truly differ (``shapes.PRESETS``: taux 2.8 to 21.8 %)."""

SIZES = (30, 100, 300, 1_000)


def main() -> None:
    """Print the ADR-0166 tables (Markdown)."""
    parser = argparse.ArgumentParser(description="The ADR-0166 tables of the verdicts.")
    parser.add_argument("runs", nargs="?", type=int, default=1000, help="runs a cell")
    runs = parser.parse_args().runs
    print("| clustering | ICC of net |")
    print("|---|---:|")
    for name, c in CLUSTERINGS.items():
        print(f"| {name} | {icc(PRESETS[2], c):.3f} |", flush=True)
    print(f"\n({runs:,} runs a cell; wrong runs %, wrong claims / claims made, found %,"
          " interval held % (below / above))\n")
    print("| presets | clustering | n | taux | net |")
    print("|---|---|---:|---|---|")
    for label, presets in (("equal", EQUAL), ("graded", GRADED)):
        for name in CLUSTERINGS:
            for n in SIZES:
                o = measure(name, presets, n, runs if n < 1000 else runs // 2, seed=n)
                row = [f"{x.wrong_runs:.2%}; {x.wrong_claims}/{x.claims}; {x.found:.1%}; "
                       f"{x.held:.0%} ({x.below:.1%} / {x.above:.1%})"
                       for x in (o["taux"], o["net"])]
                print(f"| {label} | {name} | {n:,} | {row[0]} | {row[1]} |", flush=True)


if __name__ == "__main__":
    main()
