"""The drift flag (``domain.derive``; issue 30, item 2; ADR-0167): the recent period's
start, a group that changed flagged the right way with its interval, one that did not
left alone; and by fixed-seed simulation on sessions, at most 1 % of classements flag a
stable preset while a preset that got worse after 80 % of its history is flagged."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from miam_economies.domain.derive import derive, recent_start, start_latest_first
from miam_economies.domain.echantillon import Echantillon
from tests.simulation.drift import false_flags, flagged


def day(rows: list[tuple[int, int, int]], sessions: int = 1) -> Echantillon:
    """A day's sample: ``rows`` dealt round-robin to ``sessions`` sessions."""
    return Echantillon.of_sessions([rows[i::sessions] for i in range(sessions)])


def test_the_recent_period_is_the_last_quarter_of_the_demandes_by_day() -> None:
    one = day([(1_000, 0, 0)])
    days = [(f"2026-11-{d:02d}", one) for d in range(1, 9)]
    assert recent_start(days) == "2026-11-07"  # 2 of 8 demandes: a quarter
    heavy = [("2026-11-01", day([(1_000, 0, 0)] * 5)), ("2026-11-02", one)]
    assert recent_start(heavy) == "2026-11-01" or recent_start(heavy) is None
    assert recent_start([("2026-11-01", day([(1_000, 0, 0)] * 8))]) is None
    assert recent_start([]) is None


def test_read_latest_first_the_start_is_recent_starts_and_no_earlier_day_is_read() -> None:
    # What the view reads (ADR-0168): the demandes per day latest first, only until a
    # quarter is held.
    rng = random.Random(11)
    for _ in range(300):
        days = [(f"2026-11-{d:02d}", day([(1_000, 0, 0)] * rng.randint(1, 6)))
                for d in sorted(rng.sample(range(1, 29), rng.randint(1, 12)))]
        read: list[str] = []

        def latest_first(days: list[tuple[str, Echantillon]] = days,
                         read: list[str] = read) -> Iterator[tuple[str, int]]:
            for jour, e in reversed(days):
                read.append(jour)
                yield jour, e.demandes

        start = start_latest_first(latest_first(), sum(e.demandes for _, e in days))
        assert start == recent_start(days)
        if start is not None:
            assert read[-1] == start  # no day before the recent period was read


def test_a_group_that_got_worse_is_flagged_and_a_stable_one_is_not() -> None:
    clean = [(10_000 + 37 * (i % 40), 1_000, 500 if i % 3 == 0 else 0) for i in range(120)]
    worse = [(10_000 + 37 * (i % 40), 1_000, 4_000 if i % 3 == 0 else 0) for i in range(40)]
    days = [(f"2026-11-{d + 1:02d}", day(clean[d * 10:(d + 1) * 10], 5)) for d in range(12)]
    days += [(f"2026-11-{d + 13:02d}", day(worse[d * 10:(d + 1) * 10], 5)) for d in range(4)]
    d = derive(days, "taux", 1)
    assert d is not None and d.depuis == "2026-11-13"
    assert d.avant == pytest.approx(sum(r[2] for r in clean) / sum(r[0] for r in clean))
    assert d.apres > d.avant and d.intervalle[0] is not None and d.intervalle[0] > 0
    assert d.as_dict() == {"depuis": "2026-11-13", "avant": d.avant, "apres": d.apres,
                           "intervalle": list(d.intervalle)}
    n = derive(days, "net", 1)
    assert n is not None and n.apres < n.avant  # more rework: less net
    stable = days[:12] + [(f"2026-11-{d + 13:02d}", day(clean[d * 10:(d + 1) * 10], 5))
                          for d in range(4)]
    assert derive(stable, "taux", 1) is None and derive(stable, "net", 1) is None


def test_shared_over_more_groups_the_flag_needs_a_larger_change() -> None:
    base = [(10_000 + 37 * (i % 40), 1_000, 500 if i % 3 == 0 else 0) for i in range(120)]
    later = [(10_000 + 37 * (i % 40), 1_000, 1_600 if i % 3 == 0 else 0) for i in range(40)]
    days = [(f"2026-11-{d + 1:02d}", day(base[d * 10:(d + 1) * 10], 5)) for d in range(12)]
    days += [(f"2026-11-{d + 13:02d}", day(later[d * 10:(d + 1) * 10], 5)) for d in range(4)]
    alone, among = derive(days, "taux", 1), derive(days, "taux", 1_000_000)
    assert alone is not None and among is None


@pytest.mark.parametrize(("clustering", "n"), [("independent", 300), ("strong ~10", 1_000),
                                              ("strong ~30", 1_000)])
@pytest.mark.parametrize("selon", ["taux", "net"])
def test_at_most_one_classement_in_a_hundred_flags_a_stable_preset(clustering: str, n: int,
                                                                    selon: str) -> None:
    # 250 runs of five presets; the ADR's table has every size at 1,000 runs.
    assert false_flags(clustering, n, 250, seed=n, selon=selon) <= 0.01


def test_a_preset_that_got_worse_after_80_percent_of_its_history_is_flagged() -> None:
    right, wrong = flagged("independent", 3_000, 100, seed=3)
    assert right >= 0.5 and wrong == 0
