"""Plugin-like demandes with known true figures, to measure the coverage of the classement's
intervals (ADR-0072).

A demande's ``evites`` and ``pilotage`` are lognormal token counts (heavy right tails, as
the plugin's are: most delegations read a few thousand tokens, a few read a whole tree);
its ``corrections`` are 0 for most demandes, else a uniform fraction of its evites. The
true mean net per demande and the true taux de reprise (ratio of the means) follow in
closed form, so a simulation counts how often an interval holds them.

``python -m tests.heavy_tails`` prints the coverage tables of ADR-0072 (about a minute);
``tests/unit/test_classement.py`` runs a smaller, fixed-seed version of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import exp, log

import numpy as np

from miam_economies.domain.classement import (
    Echantillon,
    intervalle_net_par_demande,
    intervalle_taux_reprise,
)


@dataclass(frozen=True)
class Scenario:
    """Lognormal evites and pilotage (median in tokens, sigma of the log); corrections:
    with probability ``p_correction``, a fraction uniform in [0, ``fraction_max``] of the
    demande's evites, else 0."""

    name: str
    evites_median: float
    evites_sigma: float
    pilotage_median: float
    pilotage_sigma: float
    p_correction: float = 0.3
    fraction_max: float = 0.5

    @property
    def taux_reprise(self) -> float:
        """E[corrections] / E[evites]: the fraction is drawn independently of evites."""
        return self.p_correction * self.fraction_max / 2

    @property
    def net_par_demande(self) -> float:
        """E[evites - pilotage - corrections], tokens (a lognormal's mean is
        median·exp(sigma²/2))."""
        evites = self.evites_median * exp(self.evites_sigma ** 2 / 2)
        pilotage = self.pilotage_median * exp(self.pilotage_sigma ** 2 / 2)
        return evites * (1 - self.taux_reprise) - pilotage

    def draw(self, rng: np.random.Generator, reps: int, n: int) -> list[Echantillon]:
        """``reps`` groups of ``n`` demandes each, as exact samples. Token counts are
        rounded to integers (a bias under half a token, far below any interval's width)."""
        shape = (reps, n)
        evites = rng.lognormal(log(self.evites_median), self.evites_sigma, shape)
        pilotage = rng.lognormal(log(self.pilotage_median), self.pilotage_sigma, shape)
        fraction = rng.uniform(0, self.fraction_max, shape)
        fraction *= rng.random(shape) < self.p_correction
        rows = zip(np.rint(evites).astype(np.int64).tolist(),
                   np.rint(pilotage).astype(np.int64).tolist(),
                   np.rint(evites * fraction).astype(np.int64).tolist(), strict=True)
        return [Echantillon.of(zip(e, p, c, strict=True)) for e, p, c in rows]


MODERATE = Scenario("moderate", 5_000, 0.5, 2_000, 0.5)
"""Lognormal sigma 0.5: the 99th percentile of evites is about 3 times the median."""

PLUGIN = Scenario("plugin-like", 5_000, 1.0, 2_000, 0.75)
"""Lognormal sigma 1: the 99th percentile of evites is about 10 times the median."""

HEAVY = Scenario("heavy tails", 5_000, 2.0, 2_000, 1.5)
"""Sigma 2: the 99th percentile is about 100 times the median, the mean 7.4 times it."""


def coverage(scenario: Scenario, n: int, reps: int, seed: int = 72) -> tuple[float, float]:
    """The fractions of ``reps`` groups of ``n`` demandes whose intervals hold the true
    net per demande and the true taux de reprise (deterministic for a ``seed``)."""
    groups = scenario.draw(np.random.default_rng([seed, n]), reps, n)
    net = taux = 0
    for e in groups:
        low, high = intervalle_net_par_demande(e) or (0.0, -1.0)
        net += low <= scenario.net_par_demande <= high
        low, high = intervalle_taux_reprise(e) or (0.0, -1.0)
        taux += low <= scenario.taux_reprise <= high
    return net / reps, taux / reps


def bootstrap_coverage(scenario: Scenario, n: int, reps: int, resamples: int = 1_000,
                       seed: int = 72) -> tuple[float, float]:
    """As ``coverage``, for the candidate ADR-0072 did not keep: the percentile bootstrap
    over demandes (``resamples`` draws with replacement, 2.5 % and 97.5 % quantiles of the
    mean net and of the ratio of sums), computed on the unrounded draws."""
    rng = np.random.default_rng([seed, n, 1])
    net = taux = 0
    for _ in range(reps):
        evites = rng.lognormal(log(scenario.evites_median), scenario.evites_sigma, n)
        pilotage = rng.lognormal(log(scenario.pilotage_median), scenario.pilotage_sigma, n)
        fraction = rng.uniform(0, scenario.fraction_max, n)
        corrections = evites * fraction * (rng.random(n) < scenario.p_correction)
        picks = rng.integers(0, n, (resamples, n))
        means = (evites - pilotage - corrections)[picks].mean(axis=1)
        low, high = np.quantile(means, [0.025, 0.975])
        net += low <= scenario.net_par_demande <= high
        ratios = corrections[picks].sum(axis=1) / evites[picks].sum(axis=1)
        low, high = np.quantile(ratios, [0.025, 0.975])
        taux += low <= scenario.taux_reprise <= high
    return net / reps, taux / reps


def main() -> None:
    """Print the coverage tables of ADR-0072 (Markdown)."""
    reps = 4_000
    print(f"| scenario | n | net par demande | taux de reprise |   ({reps} groups per row)")
    print("|---|---:|---:|---:|")
    for scenario in (MODERATE, PLUGIN, HEAVY):
        for n in (10, 30, 100, 1_000):
            net, taux = coverage(scenario, n, reps)
            print(f"| {scenario.name} | {n:,} | {net:.3f} | {taux:.3f} |")
    reps = 1_000
    print(f"\nPercentile bootstrap, 1,000 resamples ({reps} groups per row)\n")
    print("| scenario | n | net par demande | taux de reprise |")
    print("|---|---:|---:|---:|")
    for scenario in (PLUGIN, HEAVY):
        for n in (10, 30, 100):
            net, taux = bootstrap_coverage(scenario, n, reps)
            print(f"| {scenario.name} | {n:,} | {net:.3f} | {taux:.3f} |")


if __name__ == "__main__":
    main()
