"""How often the classement's verdicts are wrong, and how often they find a true
difference, on data shaped like the plugin's (ADR-0081).

Each run draws one classement: five presets (``shapes.PRESETS`` or ``HEAVY``, which truly
differ) at the sizes of a cell, ranked and compared by the product itself
(``domain.classement``, ``domain.comparaisons``), on both criteria. A run is wrong when any
of its verdicts says ``a_devant`` or ``b_devant`` against the true order (or where there is
no difference at all); a true difference is found when a pair's verdict names the truly
better preset. ``python -m tests.simulation.verdicts`` prints the ADR's table (4,000 runs
a cell); ``tests/unit/test_verdicts.py`` holds the targets with 1,000.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from miam_economies.domain.appariees import Tache, comparaisons_appariees
from miam_economies.domain.classement import ordre
from miam_economies.domain.comparaisons import comparaisons
from miam_economies.domain.echantillon import Echantillon
from tests.simulation.shapes import SHAPES, Preset, paired, samples

NAMES = "ABCDE"


@dataclass(frozen=True)
class Cell:
    """A simulated situation: presets (indices into a shape's five, repeated for "no
    difference") with their group sizes, or ``tasks`` run by each for a paired cell."""

    name: str
    presets: tuple[int, ...]
    sizes: tuple[int, ...] = ()
    tasks: int = 0


FIVE = (0, 1, 2, 3, 4)
CELLS = [
    Cell("10/10", FIVE, (10,) * 5),
    Cell("30/30", FIVE, (30,) * 5),
    Cell("100/100", FIVE, (100,) * 5),
    Cell("300/300", FIVE, (300,) * 5),
    Cell("300-304, best preset smallest", FIVE, (300, 301, 302, 303, 304)),
    Cell("15/300, new preset best", FIVE, (15, 300, 300, 300, 300)),
    Cell("15/300, new preset worst", FIVE, (300, 300, 300, 300, 15)),
    Cell("50/100, new preset best", FIVE, (50, 100, 100, 100, 100)),
    Cell("100/1,000, new preset best", FIVE, (100, 1000, 1000, 1000, 1000)),
    Cell("100/1,000, new preset worst", FIVE, (1000, 1000, 1000, 1000, 100)),
    Cell("two presets 5 % apart, 10/10", (0, 1), (10, 10)),
    Cell("two presets 5 % apart, 30/30", (0, 1), (30, 30)),
    Cell("two presets 5 % apart, 100/100", (0, 1), (100, 100)),
    Cell("two presets 5 % apart, 15/300", (0, 1), (15, 300)),
    Cell("two presets 5 % apart, 100/1,000", (0, 1), (100, 1000)),
    Cell("two presets 5 % apart, 1,000/100", (0, 1), (1000, 100)),
    Cell("paired, 10 tasks", FIVE, tasks=10),
    Cell("paired, 30 tasks", FIVE, tasks=30),
    Cell("paired, 100 tasks", FIVE, tasks=100),
    Cell("paired, 300 tasks", FIVE, tasks=300),
    Cell("two presets 5 % apart, paired, 100 tasks", (0, 1), tasks=100),
]
"""Presets that truly differ: the target is at most 1 % of runs with a wrong verdict. The
issue's sizes (10/10 ... 100/1,000) for five presets and for the two closest alone (A and
B, 5 % apart on net: far inside the noise), near-equal sizes, paired tasks."""

NO_DIFFERENCE = [
    Cell("no difference, 30/30", (2,) * 5, (30,) * 5),
    Cell("no difference, 300/300", (2,) * 5, (300,) * 5),
    Cell("no difference, 15/300", (2,) * 5, (15, 300, 300, 300, 300)),
    Cell("no difference, paired, 100 tasks", (2,) * 5, tasks=100),
    Cell("no difference, two presets, 100/100", (2, 2), (100, 100)),
]
"""Where nothing differs, any claim is wrong: Holm's family-wise bound is 1 %."""


@dataclass(frozen=True)
class Outcome:
    """One cell on one criterion: the share of runs with a wrong verdict, the share of
    true differences found, and how often rang 1 is the truly best preset."""

    wrong: float
    found: float
    rank_one: float


def measure(shape: str, cell: Cell, runs: int, seed: int = 81) -> dict[str, Outcome]:
    """``{"taux": Outcome, "net": Outcome}`` of ``runs`` draws of ``cell`` in ``shape``
    (deterministic for a ``seed``)."""
    presets = [SHAPES[shape][i] for i in cell.presets]
    names = [f"{NAMES[i]}{k}" for k, i in enumerate(cell.presets)]
    if cell.tasks:
        draws = paired(presets, cell.tasks, runs, seed)
        groups = [{name: _sample(tasks) for name, tasks in zip(names, run, strict=True)}
                  for run in draws]
    else:
        draws = None
        groups = [dict(zip(names, run, strict=True))
                  for run in samples(presets, list(cell.sizes), runs, seed)]
    truth = dict(zip(names, presets, strict=True))
    out = {}
    for selon in ("taux", "net"):
        wrong = found = true_pairs = first = 0
        for r, run in enumerate(groups):
            ranked = [cle for cle, _, ranked in ordre(run, 1, selon) if ranked]
            if draws is None:
                verdicts = comparaisons([(cle, run[cle]) for cle in ranked], selon)
            else:
                tasks = dict(zip(names, draws[r], strict=True))
                verdicts = comparaisons_appariees(ranked, tasks, selon)
            run_wrong = False
            for v in verdicts:
                better = _better(truth[v.a], truth[v.b], selon)
                claim = {"a_devant": "a", "b_devant": "b"}.get(v.verdict)
                true_pairs += better is not None
                found += claim is not None and claim == better
                run_wrong |= claim is not None and claim != better
            wrong += run_wrong
            best = max(truth.values(), key=lambda p: p.net if selon == "net" else -p.taux)
            first += bool(ranked) and truth[ranked[0]] is best and len(set(cell.presets)) > 1
        out[selon] = Outcome(wrong / runs, found / true_pairs if true_pairs else 0.0,
                             first / runs)
    return out


def _sample(tasks: dict[str, Tache]) -> Echantillon:
    return Echantillon.of((t.evites, t.pilotage, t.corrections) for t in tasks.values())


def _better(a: Preset, b: Preset, selon: str) -> str | None:
    """Which of a and b is truly ahead on ``selon`` ("a", "b"), None if neither."""
    ka, kb = (a.net, b.net) if selon == "net" else (-a.taux, -b.taux)
    return None if abs(ka - kb) < 1e-9 else "a" if ka > kb else "b"


def main() -> None:
    """Print the ADR's table (Markdown): every cell, both shapes and criteria."""
    parser = argparse.ArgumentParser(description="The ADR-0081 table of the verdicts.")
    parser.add_argument("runs", nargs="?", type=int, default=4000, help="runs a cell")
    runs = parser.parse_args().runs
    print(f"| shape | cell | taux: wrong / found / rang 1 | net: wrong / found / rang 1 |"
          f"   ({runs:,} runs a cell)")
    print("|---|---|---:|---:|")
    for shape in SHAPES:
        for cell in CELLS + NO_DIFFERENCE:
            o = measure(shape, cell, runs)
            row = [f"{o[s].wrong:.2%} / {o[s].found:.1%} / {o[s].rank_one:.0%}"
                   for s in ("taux", "net")]
            print(f"| {shape} | {cell.name} | {row[0]} | {row[1]} |", flush=True)


if __name__ == "__main__":
    main()
