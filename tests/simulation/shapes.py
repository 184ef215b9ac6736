"""Demandes shaped as the contract's events are, with known true figures (the classement
audit's data model, ``shared/reviews/2026-12-01-classement-audit.md``, §1).

Per demande: a task of size L = lus + ecrits, lognormal (median 5,000 tokens); 70 % of
delegations by a subagent (evites = L, and a share T/k of a steering turn T, lognormal,
over the k = 1, 2 or 3 demandes of its turn), 30 % by the main agent (evites = L - O, O
the instruction and the read-back, lognormal: sometimes negative; no pilotage); a
correction on a share ``p_c`` of the demandes, L·F with F lognormal, else none. So most
demandes are never corrected, a few heavily, and evites are heavy-tailed and sometimes
negative. The true net per demande and taux de reprise (E[c]/E[e]) are in closed form.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import exp, log

import numpy as np

from miam_economies.domain.appariees import Tache
from miam_economies.domain.echantillon import Echantillon

_TURN = np.array([0.6, 0.25, 0.15]) * np.array([1, 2, 3])
_TURN = _TURN / _TURN.sum()  # a demande's chance to be in a turn of k: size-biased


@dataclass(frozen=True)
class Preset:
    """One preset's distributions (tokens): ``p_c`` the share of demandes corrected,
    ``f_median``/``f_sigma`` the correction's fraction of L, ``t_median`` the steering
    turn's median; L, O and T lognormal with the given medians and sigmas of the log."""

    p_c: float
    f_median: float
    t_median: float
    l_sigma: float = 1.2
    f_sigma: float = 1.0
    l_median: float = 5_000
    o_median: float = 1_500
    o_sigma: float = 1.0
    t_sigma: float = 0.8
    p_sub: float = 0.7

    @property
    def evites(self) -> float:
        """E[evites], tokens."""
        return (self.l_median * exp(self.l_sigma ** 2 / 2)
                - (1 - self.p_sub) * self.o_median * exp(self.o_sigma ** 2 / 2))

    @property
    def corrections(self) -> float:
        """E[corrections], tokens (F drawn independently of L)."""
        return (self.p_c * self.l_median * exp(self.l_sigma ** 2 / 2)
                * self.f_median * exp(self.f_sigma ** 2 / 2))

    @property
    def pilotage(self) -> float:
        """E[pilotage share], tokens."""
        per_demande = float((_TURN / np.array([1, 2, 3])).sum())
        return self.p_sub * self.t_median * exp(self.t_sigma ** 2 / 2) * per_demande

    @property
    def net(self) -> float:
        """The true net per demande, tokens."""
        return self.evites - self.pilotage - self.corrections

    @property
    def taux(self) -> float:
        """The true taux de reprise, E[c] / E[e]."""
        return self.corrections / self.evites

    def draw(self, rng: np.random.Generator, shape: tuple[int, ...],
             tasks: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """evites, pilotage and corrections (whole tokens, float arrays of ``shape``);
        ``tasks`` = (L, by a subagent, O) shared by presets run on the same tasks."""
        if tasks is None:
            tasks = (rng.lognormal(log(self.l_median), self.l_sigma, shape),
                     rng.random(shape) < self.p_sub,
                     rng.lognormal(log(self.o_median), self.o_sigma, shape))
        size, sub, other = tasks
        turn = rng.lognormal(log(self.t_median), self.t_sigma, shape)
        k = rng.choice([1, 2, 3], size=shape, p=_TURN)
        fraction = rng.lognormal(log(self.f_median), self.f_sigma, shape)
        corrected = rng.random(shape) < self.p_c
        return (np.rint(np.where(sub, size, size - other)), np.rint(np.where(sub, turn / k, 0)),
                np.rint(size * fraction * corrected))


def samples(presets: list[Preset], sizes: list[int], runs: int, seed: int
            ) -> list[list[Echantillon]]:
    """``runs`` draws of one group per preset (``sizes`` demandes each), as samples:
    ``[run][group]``. The sums are taken in floating point and rounded (exact enough for
    a simulation; the product's sums are exact)."""
    rng = np.random.default_rng(seed)
    per_group = []
    for preset, n in zip(presets, sizes, strict=True):
        e, p, c = preset.draw(rng, (runs, n))
        net = e - p - c
        sums = [np.full(runs, n), e.sum(1), p.sum(1), c.sum(1), (e * e).sum(1),
                (c * c).sum(1), (e * c).sum(1), (net * net).sum(1)]
        # Independent demandes: each its own session, its session sums its own.
        net_sum = sums[1] - sums[2] - sums[3]
        sums += [sums[0], sums[0], sums[7], net_sum, sums[4], sums[5], sums[6], sums[0],
                 net_sum, sums[7]]
        per_group.append([Echantillon(*map(int, row))
                          for row in zip(*(np.rint(s).tolist() for s in sums), strict=True)])
    return [list(run) for run in zip(*per_group, strict=True)]


def paired(presets: list[Preset], tasks: int, runs: int, seed: int
           ) -> list[list[dict[str, Tache]]]:
    """``runs`` draws of ``tasks`` tasks run once under every preset (MIAM's tests): the
    task's size, author and read-back shared, each preset's steering and corrections its
    own; ``[run][group]`` -> ``{task id: Tache}``."""
    rng = np.random.default_rng(seed)
    first = presets[0]
    shape = (runs, tasks)
    shared = (rng.lognormal(log(first.l_median), first.l_sigma, shape),
              rng.random(shape) < first.p_sub,
              rng.lognormal(log(first.o_median), first.o_sigma, shape))
    ids = [f"t{i:04d}" for i in range(tasks)]
    per_group = []
    for preset in presets:
        e, p, c = (a.astype(np.int64).tolist() for a in preset.draw(rng, shape, shared))
        per_group.append([{ids[t]: Tache(1, e[r][t], p[r][t], c[r][t]) for t in range(tasks)}
                          for r in range(runs)])
    return [list(run) for run in zip(*per_group, strict=True)]


PRESETS = [Preset(0.08, 0.20, 3_800), Preset(0.12, 0.25, 4_000), Preset(0.15, 0.25, 4_200),
           Preset(0.25, 0.30, 4_500), Preset(0.35, 0.35, 5_000)]
"""Five presets run on the same task distribution ("plausible"), differing in how often
and how much the main agent reworks and in the steering turn's cost: true net per demande
6,896, 6,534, 6,283, 5,461 and 4,346 tokens (gaps of 4-20 %); true taux 2.8, 5.3, 6.7,
13.3 and 21.8 % (the audit's §2)."""

HEAVY = [replace(p, p_c=p.p_c * 2 / 3, l_sigma=1.8, f_sigma=1.3) for p in PRESETS]
"""The same, heavier-tailed: sigma 1.8 for L and 1.3 for F, corrections two thirds as
often (the audit's "heavy" stress shape)."""

SHAPES = {"plausible": PRESETS, "heavy": HEAVY}
