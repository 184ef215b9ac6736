"""How often the classement's drift flag (``derive``) is raised for a preset that did not
change, and how often for one that did (issue 30, item 2; ADR-0167).

A group's history is whole sessions (``tests.simulation.sessions``), in order, about
``PER_DAY`` demandes a day. A preset that changes is drawn as one preset for the first ``share`` of
its demandes and as another after: the audit's case is a preset with a quarter of the
incumbent's rework for 80 % of its history and 1.5 times it since
(``shared/reviews/2026-12-03-classement-audit-2.md``, §3).

``python -m tests.simulation.drift`` prints the ADR's table.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import numpy as np

from miam_economies.domain.derive import derive
from miam_economies.domain.echantillon import Echantillon
from tests.simulation.sessions import CLUSTERINGS, PRESETS, Preset, draw_group, echantillon

PER_DAY = 30
"""Demandes a day, about: a day holds whole sessions, those starting within its 30."""


def days_of(rng: np.random.Generator, parts: list[tuple[Preset, int]], clustering: str
            ) -> list[tuple[str, Echantillon]]:
    """One group's samples by day: for each ``(preset, demandes)`` of ``parts`` in turn,
    whole sessions of that preset until it holds that many, a session on the day its
    first demande falls on at ``PER_DAY`` demandes a day (days ``d0000``, ``d0001``...
    in order)."""
    c = CLUSTERINGS[clustering]
    columns: list[list[np.ndarray]] = [[], [], [], []]
    offset = 0
    for preset, n in parts:
        e, p, k, session = draw_group(rng, preset, c, n)
        for column, values in zip(columns, (e, p, k, session + offset), strict=True):
            column.append(values)
        offset += int(session[-1]) + 1
    e, p, k, session = (np.concatenate(column) for column in columns)
    first = np.flatnonzero(np.r_[True, session[1:] != session[:-1]])  # sessions' starts
    day = np.repeat(first // PER_DAY, np.diff(np.r_[first, len(session)]))
    # non-decreasing: each day a slice
    starts = np.flatnonzero(np.r_[True, day[1:] != day[:-1]])
    ends = np.r_[starts[1:], len(day)]
    return [(f"d{int(day[a]):04d}", echantillon(e[a:b], p[a:b], k[a:b], session[a:b]))
            for a, b in zip(starts, ends, strict=True)]


def false_flags(clustering: str, n: int, runs: int, seed: int, selon: str) -> float:
    """The share of runs in which any of five stable presets (``PRESETS``, ``n`` demandes
    each) is flagged as changed."""
    rng = np.random.default_rng(seed)
    wrong = 0
    for _ in range(runs):
        flagged = [derive(days_of(rng, [(p, n)], clustering), selon, len(PRESETS))
                   for p in PRESETS]
        wrong += any(f is not None for f in flagged)
    return wrong / runs


CHANGED = (replace(PRESETS[1], p_c=PRESETS[1].p_c * 0.25),
           replace(PRESETS[1], p_c=PRESETS[1].p_c * 1.5))
"""The audit's changing preset: a quarter of the incumbent's (``PRESETS[1]``) rework, then
1.5 times it."""


def flagged(clustering: str, n: int, runs: int, seed: int, share: float = 0.8,
            tested: int = 2) -> tuple[float, float]:
    """The changing preset (``CHANGED``, ``n`` demandes, changed after ``share`` of them)
    by taux: the share of runs it is flagged worse since the change, and flagged the
    wrong way."""
    rng = np.random.default_rng(seed)
    right = wrong = 0
    before, after = CHANGED
    for _ in range(runs):
        d = derive(days_of(rng, [(before, round(n * share)), (after, round(n * (1 - share)))],
                           clustering), "taux", tested)
        right += d is not None and d.apres > d.avant
        wrong += d is not None and d.apres < d.avant
    return right / runs, wrong / runs


def main() -> None:
    """Print the ADR's tables."""
    parser = argparse.ArgumentParser(description="The drift flag's error and power.")
    parser.add_argument("runs", nargs="?", type=int, default=1000)
    runs = parser.parse_args().runs
    print("| stable presets | n | false flags, taux / net |")
    print("|---|---:|---:|")
    for clustering in ("independent", "strong ~10", "strong ~30"):
        for n in (100, 300, 1_000, 3_000):
            r = runs if n < 3_000 else runs // 4
            rates = [false_flags(clustering, n, r, n, selon) for selon in ("taux", "net")]
            print(f"| {clustering} | {n:,} | {rates[0]:.2%} / {rates[1]:.2%} |", flush=True)
    print("\n| changing preset (x0.25 then x1.5 after 80 %) | n | flagged worse / wrong way |")
    print("|---|---:|---:|")
    for clustering in ("independent", "strong ~10"):
        for n in (300, 1_000, 3_000):
            right, wrong = flagged(clustering, n, runs // 2, n)
            print(f"| {clustering} | {n:,} | {right:.1%} / {wrong:.1%} |", flush=True)


if __name__ == "__main__":
    main()
