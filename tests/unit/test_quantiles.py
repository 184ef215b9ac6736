"""``domain.quantiles`` against ``scipy.stats`` (a test-only reference: the package imports
no numerical stack; ADR-0081): the t quantile within 1e-12 over df 1 to 10^6, at the
levels Holm's steps use too; two-sided p-values consistent with it; the gamma quantile."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from miam_economies.domain.quantiles import (
    EXACT_DF,
    LARGE_SHAPE,
    gamma_quantile,
    t_quantile,
    t_two_sided,
)

DFS = [*range(1, 2_001), 2_500, 5_000, 9_999, 10_000, 12_345, 99_999, 100_000, 654_321,
       999_999, 1_000_000]


def test_the_0975_quantile_matches_scipy_within_1e12_over_df_1_to_a_million() -> None:
    worst = max(abs(t_quantile(0.975, df) - stats.t.ppf(0.975, df)) for df in DFS)
    assert worst < 1e-12


@pytest.mark.parametrize("p", [0.6, 0.9, 0.99, 0.9975, 0.9995, 1 - 0.025 / 45])
def test_other_levels_match_scipy(p: float) -> None:
    for df in [*range(1, 60), 99, 500, 999, EXACT_DF, EXACT_DF + 1, 5_000, 10**6]:
        assert t_quantile(p, df) == pytest.approx(stats.t.ppf(p, df), rel=1e-11, abs=1e-12)


def test_two_sided_p_values_match_scipy_and_agree_with_the_quantile() -> None:
    for df in [1, 2, 3, 7, 30, 200, EXACT_DF, EXACT_DF + 1, 50_000]:
        for t in (0.0, 0.3, 1.0, 2.0, 3.5, 6.0):
            assert t_two_sided(t, df) == pytest.approx(2 * stats.t.sf(t, df), rel=1e-4,
                                                       abs=1e-13)
            assert t_two_sided(-t, df) == t_two_sided(t, df)
        for p in (0.975, 0.999):
            q = t_quantile(p, df)
            # Just past the quantile the p-value is below 2(1 - p); just inside, above.
            assert t_two_sided(q * (1 + 1e-9), df) < 2 * (1 - p) < t_two_sided(
                q * (1 - 1e-9), df)
    assert t_two_sided(math.inf, 5) == 0.0


@pytest.mark.parametrize("shape", [0.05, 0.5, 1.0, 1.5, 3.0, 7.25, 30.0, 333.3, 5_000.0,
                                   LARGE_SHAPE])
def test_gamma_quantiles_match_scipy(shape: float) -> None:
    for p in (0.001, 0.025, 0.5, 0.975, 0.999):
        assert gamma_quantile(p, shape) == pytest.approx(stats.gamma.ppf(p, shape),
                                                         rel=1e-12)


def test_past_large_shape_the_cube_root_is_close_enough() -> None:
    for shape in (LARGE_SHAPE * 1.01, 1e6, 1e9):
        for p in (0.025, 0.975):
            assert gamma_quantile(p, shape) == pytest.approx(stats.gamma.ppf(p, shape),
                                                             rel=1e-7)


@pytest.mark.parametrize(("call", "args"), [
    (t_quantile, (0.5, 3)), (t_quantile, (1.0, 3)), (t_quantile, (0.975, 0)),
    (gamma_quantile, (0.0, 2.0)), (gamma_quantile, (0.5, 0.0)),
    (gamma_quantile, (0.5, math.inf))])
def test_out_of_range_arguments_are_refused(call: object, args: tuple[float, ...]) -> None:
    with pytest.raises(ValueError):
        call(*args)  # type: ignore[operator]
