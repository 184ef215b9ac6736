"""The classement's verdicts stay within "at most 1 % of runs with a wrong claim" when
demandes cluster by Claude Code session (issue 30; ADR-0166): fixed-seed simulations of
our own (``tests.simulation.sessions``), sessions of ~10 and ~30 demandes with an
intra-session correlation of net from 0.06 to about 0.09, five equal presets (any claim
is wrong) and five graded ones, n = 30 to 1,000 demandes a preset, both criteria. The same
data read as if every demande were its own session (the classement before ADR-0166) fail
the target: the test would catch a return to per-demande variances.
``python -m tests.simulation.sessions`` prints the ADR's whole table."""

from __future__ import annotations

import pytest

from tests.simulation.sessions import (
    CLUSTERINGS,
    EQUAL,
    GRADED,
    PRESETS,
    SIZES,
    icc,
    measure,
)

RUNS = 1_000
"""At 1 %, 1,000 runs measure a share within about ±0.31 points (the ADR's first table:
2,000 a cell, 1,000 at n = 1,000)."""

CLUSTERED = ("strong ~10", "strong ~30", "extreme ~30")
"""The mild shape (correlation about 0.014) is in the ADR's table only."""


def test_the_clustered_shapes_are_as_correlated_as_the_issue_asks() -> None:
    assert icc(PRESETS[2], CLUSTERINGS["strong ~10"]) >= 0.06
    assert icc(PRESETS[2], CLUSTERINGS["strong ~30"]) >= 0.06
    assert icc(PRESETS[2], CLUSTERINGS["extreme ~30"]) >= 0.08


@pytest.mark.parametrize("presets", ["equal", "graded"])
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("clustering", CLUSTERED)
def test_at_most_one_run_in_a_hundred_holds_a_wrong_claim(clustering: str, n: int,
                                                          presets: str) -> None:
    outcome = measure(clustering, EQUAL if presets == "equal" else GRADED, n,
                      RUNS if n < 1_000 else RUNS // 2, seed=n)
    for selon in ("taux", "net"):
        assert outcome[selon].wrong_runs <= 0.01, (selon, outcome[selon])


def test_read_as_independent_demandes_the_same_data_break_the_target() -> None:
    # The control: per-demande variances on clustered data (the audit's finding).
    blind = measure("strong ~30", EQUAL, 1_000, 400, seed=1_000, blind=True)
    assert blind["net"].wrong_runs > 0.05
    fixed = measure("strong ~30", EQUAL, 1_000, 400, seed=1_000)
    assert fixed["net"].wrong_runs <= 0.01
    # The intervals hold the truth more often over sessions than over demandes.
    assert fixed["net"].held > blind["net"].held + 0.1
    assert fixed["taux"].held > blind["taux"].held + 0.05
