"""Whether ``a_completer`` is within a factor of two of what a simulation says (issue 30,
item 3; ADR-0167).

For a pair held ``indiscernable``, ``a_completer`` says about how many more demandes each
group needs for a difference of the size observed to be told at the verdicts' level. The
simulation's answer: give the two presets a true difference of exactly the size observed
(a constant moved to one group's steering for net, a factor on its corrections for taux:
their spreads stay), draw them with x more demandes each, in sessions as before, and find
the x at which the pair is told (the right way) in half the runs. ``a_completer`` x is
within a factor of two of that x* exactly when the pair is told in fewer than half the
runs at x/2 more and in more than half at 2x more; ``check`` measures both.

``python -m tests.simulation.more_data`` prints the ADR's table.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np

from miam_economies.domain.classement import DEFAULT_MIN, ordre
from miam_economies.domain.comparaisons import comparaisons
from tests.simulation.sessions import CLUSTERINGS, PRESETS, Preset, draw_group, echantillon


@dataclass(frozen=True)
class Check:
    """One held pair: its observed difference, ``a_completer`` (a, b), and the shares of
    runs told at half and at twice those more demandes, with the observed difference as
    the truth."""

    difference: float
    more: tuple[int, int]
    told_at_half: float
    told_at_double: float

    @property
    def within_two(self) -> bool:
        """Whether the simulation's answer is within a factor of two of ``more``."""
        return self.told_at_half < 0.5 < self.told_at_double


def _truth(p: Preset, selon: str) -> float:
    return p.net if selon == "net" else p.taux


def _told(rng: np.random.Generator, presets: dict[str, Preset], sizes: dict[str, int],
          adjust: tuple[str, float], clustering: str, selon: str, runs: int,
          expected: str) -> float:
    """The share of ``runs`` two-group classements at ``sizes`` whose verdict says
    ``expected`` ahead, the group ``adjust[0]`` moved by ``adjust[1]`` (net: tokens taken
    off each demande; taux: a factor on its corrections)."""
    c = CLUSTERINGS[clustering]
    told = 0
    for _ in range(runs):
        groups = {}
        for name, preset in presets.items():
            e, p, k, session = draw_group(rng, preset, c, sizes[name])
            if name == adjust[0]:
                if selon == "net":
                    p = p + adjust[1]
                else:
                    k = np.rint(k * adjust[1])
            groups[name] = echantillon(e, p, k, session)
        ranked = [(cle, e) for cle, e, ok in ordre(groups, DEFAULT_MIN, selon) if ok]
        if len(ranked) < 2:
            continue
        (v,) = comparaisons(ranked, selon)
        ahead = {"a_devant": v.a, "b_devant": v.b}.get(v.verdict)
        told += ahead == expected
    return told / runs


def check(selon: str, a: Preset, b: Preset, n: int, clustering: str, seed: int,
          runs: int = 200) -> Check | None:
    """Draw the two presets at ``n`` demandes each (seeded); if their pair is held
    ``indiscernable`` with an ``a_completer`` of at most ``MAX_SIMULATED`` more demandes,
    measure it (``Check``); else None."""
    rng = np.random.default_rng(seed)
    c = CLUSTERINGS[clustering]
    presets = {"A": a, "B": b}
    groups = {name: echantillon(*draw_group(rng, p, c, n)) for name, p in presets.items()}
    ranked = [(cle, e) for cle, e, ok in ordre(groups, DEFAULT_MIN, selon) if ok]
    if len(ranked) < 2:
        return None
    (v,) = comparaisons(ranked, selon)
    if v.verdict != "indiscernable" or v.a_completer is None or v.difference is None:
        return None
    if max(v.a_completer) > MAX_SIMULATED:
        return None
    d = v.difference
    # The truths moved so that truth(v.a) - truth(v.b) = d, by adjusting v.b.
    ta, tb = _truth(presets[v.a], selon), _truth(presets[v.b], selon)
    if selon == "net":
        adjust = (v.b, d - ta + tb)  # taken off each of b's demandes
    else:
        if ta - d <= 0:
            return None
        adjust = (v.b, (ta - d) / tb)
    better = v.a if (d > 0) == (selon == "net") else v.b
    more = dict(zip((v.a, v.b), v.a_completer, strict=True))
    shares = []
    for factor in (0.5, 2.0):
        sizes = {name: groups[name].demandes + max(1, round(more[name] * factor))
                 for name in presets}
        shares.append(_told(rng, presets, sizes, adjust, clustering, selon, runs, better))
    return Check(d, v.a_completer, shares[0], shares[1])


MAX_SIMULATED = 40_000
"""More demandes past which a pair is not simulated (counted apart in the table)."""

CASES = [
    ("net", PRESETS[0], PRESETS[4], 100, "strong ~10"),
    ("net", PRESETS[1], PRESETS[3], 300, "independent"),
    ("taux", PRESETS[0], PRESETS[3], 100, "strong ~10"),
    ("taux", PRESETS[1], PRESETS[2], 300, "independent"),
]
"""(criterion, preset a, preset b, demandes each, clustering): pairs that are often held
at those sizes, with or without sessions."""


def main() -> None:
    """Print the ADR's table: for each case, the draws whose pair was held, and how many
    of those were within a factor of two."""
    parser = argparse.ArgumentParser(description="a_completer against a simulation.")
    parser.add_argument("draws", nargs="?", type=int, default=20)
    parser.add_argument("runs", nargs="?", type=int, default=200)
    args = parser.parse_args()
    draws, runs = args.draws, args.runs
    print("| criterion | presets (truths) | n | clustering | held draws | within ×2 |")
    print("|---|---|---:|---|---:|---:|")
    for selon, a, b, n, clustering in CASES:
        checks = [x for seed in range(draws)
                  if (x := check(selon, a, b, n, clustering, seed, runs)) is not None]
        within = sum(x.within_two for x in checks)
        short = sum(x.told_at_double < 0.5 for x in checks)
        truths = f"{_truth(a, selon):.4g} / {_truth(b, selon):.4g}"
        print(f"| {selon} | {truths} | {n} | {clustering} | {len(checks)} | {within} "
              f"({short} too few, {len(checks) - within - short} too many) |", flush=True)


if __name__ == "__main__":
    main()
