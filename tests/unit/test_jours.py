"""``domain.bilan.Jours``, the memoised day of a date in a zone, gives exactly what the
uncached ``jour`` gives, whatever the zone (half-hour and 45-minute offsets, daylight
saving, offsets of seconds in the local-mean-time era), the offset the date is written
with, and the order dates come in (ADR-0062)."""

from __future__ import annotations

import zoneinfo
from datetime import UTC, timedelta, timezone
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st

from miam_economies.domain.bilan import Jours, jour
from miam_economies.domain.schema import INSTANT_PATTERN

AWKWARD = ["Asia/Kolkata", "Asia/Kathmandu", "Australia/Lord_Howe", "America/St_Johns",
           "Pacific/Chatham", "Africa/Monrovia", "Europe/Amsterdam", "America/Havana",
           "America/Santiago", "Asia/Tehran", "Pacific/Kiritimati", "Pacific/Apia",
           "Antarctica/Troll", "Europe/Dublin", "America/Caracas", "Europe/Paris", "UTC"]
ZONES = (st.sampled_from(AWKWARD).map(ZoneInfo)
         | st.sampled_from(sorted(zoneinfo.available_timezones())).map(ZoneInfo)
         | st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30)),
                            timezone(-timedelta(hours=9, minutes=59, seconds=59))]))
INSTANTS = st.from_regex(INSTANT_PATTERN, fullmatch=True)
OFFSETS = st.sampled_from(["Z", "+00:00", "+05:30", "-03:30", "+05:45", "-11:00", "+14:00",
                           "+23:59", "-23:59", "+00:99", "+12:45"])
# Dates around transitions and midnights, in the years the tz database describes.
NEAR = st.builds(
    "{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}{}{}".format,
    st.sampled_from([1900, 1937, 1970, 2000, 2024, 2026, 2038]), st.integers(1, 12),
    st.integers(1, 28), st.integers(0, 23), st.sampled_from([0, 1, 14, 15, 29, 30, 44, 45,
                                                             59]),
    st.integers(0, 59), st.sampled_from(["", ".5", ".999999999", ".000001"]), OFFSETS)


@settings(max_examples=300)
@given(ZONES, st.lists(INSTANTS | NEAR, min_size=1, max_size=40))
def test_the_memoised_day_is_the_uncached_one(zone: ZoneInfo, dates: list[str]) -> None:
    days = Jours(zone)
    assert [days(d) for d in dates] == [jour(d, zone) for d in dates]
    # Again, from the memo this time.
    assert [days(d) for d in reversed(dates)] == [jour(d, zone) for d in reversed(dates)]


@settings(max_examples=200)
@given(ZONES, NEAR, st.lists(st.integers(-7200, 7200), min_size=1, max_size=30))
def test_dates_of_one_hour_share_the_memo_only_when_exact(
        zone: ZoneInfo, base: str, shifts: list[int]) -> None:
    # Neighbouring instants, written with the base's offset: the same hour key, or the
    # next ones, across midnights and transitions in the zone.
    from miam_economies.domain.instants import parse_instant

    start = parse_instant(base)
    offset = base[-6:] if base[-1] != "Z" else "Z"
    written = start.tzinfo
    dates = []
    for shift in shifts:
        moment = (start + timedelta(seconds=shift)).astimezone(written)
        dates.append(moment.strftime("%Y-%m-%dT%H:%M:%S") + offset)
    days = Jours(zone)
    assert [days(d) for d in dates] == [jour(d, zone) for d in dates]


def test_the_memo_is_bounded() -> None:
    class Small(Jours):
        LIMIT = 3

    days = Small(ZoneInfo("Europe/Paris"))
    dates = [f"2026-10-{d:02d}T{h:02d}:30:00Z" for d in range(1, 29) for h in range(24)]
    assert [days(d) for d in dates] == [jour(d, ZoneInfo("Europe/Paris")) for d in dates]
    assert len(days._hours) <= 3 and len(days._minutes) <= 3


def test_every_few_minutes_across_transition_days_in_awkward_zones() -> None:
    # Days with a daylight-saving change, a zone change or a midnight transition, walked
    # every 7 min 13 s, written in UTC and in two offsets.
    days_to_walk = ["2026-03-29", "2026-10-25", "2026-04-05", "2026-09-06", "2011-12-29",
                    "1937-07-01", "2026-03-08", "2026-11-01", "1900-01-01"]
    for name in AWKWARD:
        zone = ZoneInfo(name)
        days = Jours(zone)
        for day in days_to_walk:
            for second in range(0, 3 * 86400, 433):
                h, rest = divmod(second % 86400, 3600)
                date = f"{day}T{h:02d}:{rest // 60:02d}:{rest % 60:02d}"
                for offset in ("Z", "+05:30", "-09:45"):
                    assert days(date + offset) == jour(date + offset, zone), (name, date)
