"""How often the classement's 95 % intervals hold the true figure, on data shaped like the
plugin's (ADR-0081): groups of n demandes of one preset (``shapes.PRESETS[2]``, the
audit's "plausible" preset, or its heavy-tailed twin), the product's own interval
functions, misses below and above counted apart. An interval with no upper bound holds
the truth if its low end does (it claims nothing above).

``python -m tests.simulation.coverage`` prints the ADR's table (4,000 groups a row);
``tests/unit/test_coverage.py`` holds the product to it with fewer.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from miam_economies.domain.intervalles import (
    Intervalle,
    intervalle_net_par_demande,
    intervalle_taux_reprise,
)
from tests.simulation.shapes import SHAPES, samples

SIZES = (5, 10, 30, 100, 300, 1000)


@dataclass(frozen=True)
class Coverage:
    """Shares of groups (those with an interval) whose interval holds the truth, lies
    wholly below it, wholly above it; and the share with no upper bound."""

    holds: float
    below: float
    above: float
    open_high: float


def _count(intervals: list[Intervalle | None], truth: float) -> Coverage:
    given = [i for i in intervals if i is not None]
    below = sum(i[1] is not None and i[1] < truth for i in given)
    above = sum(i[0] is not None and i[0] > truth for i in given)
    open_high = sum(i[1] is None for i in given)
    total = len(given) or 1
    return Coverage((len(given) - below - above) / total, below / total, above / total,
                    open_high / total)


def coverage(shape: str, n: int, groups: int, seed: int = 81) -> dict[str, Coverage]:
    """``{"net": Coverage, "taux": Coverage}`` of ``groups`` groups of ``n`` demandes
    (deterministic for a ``seed``)."""
    preset = SHAPES[shape][2]
    drawn = [run[0] for run in samples([preset], [n], groups, seed + n)]
    return {"net": _count([intervalle_net_par_demande(e) for e in drawn], preset.net),
            "taux": _count([intervalle_taux_reprise(e) for e in drawn], preset.taux)}


def main() -> None:
    """Print the ADR's coverage table (Markdown)."""
    parser = argparse.ArgumentParser(description="The ADR-0081 table of the coverage.")
    parser.add_argument("groups", nargs="?", type=int, default=4000, help="groups a row")
    groups = parser.parse_args().groups
    print(f"| shape | n | net: holds (below / above) | taux: holds (below / above) | "
          f"taux without a high end |   ({groups:,} groups a row)")
    print("|---|---:|---:|---:|---:|")
    for shape in SHAPES:
        for n in SIZES:
            c = coverage(shape, n, groups)
            net, taux = c["net"], c["taux"]
            print(f"| {shape} | {n:,} | {net.holds:.3f} ({net.below:.3f} / {net.above:.3f}) "
                  f"| {taux.holds:.3f} ({taux.below:.3f} / {taux.above:.3f}) "
                  f"| {taux.open_high:.3f} |", flush=True)


if __name__ == "__main__":
    main()
