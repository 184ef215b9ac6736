"""The periods days are gathered in and the two-dimension rules (``domain.breakdowns``;
ADR-0132, ADR-0133): ISO weeks against the standard's own rule, stated apart."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from miam_economies.domain.breakdowns import (
    BoundsError,
    check_bounds,
    dimension,
    mois,
    periode,
    semaine,
)


def iso_week_by_thursday(day: date) -> str:
    """ISO 8601, stated apart from ``date.isocalendar``: a week runs Monday to Sunday and
    belongs to the year of its Thursday; its number counts the Thursdays of that year up
    to and including its own."""
    thursday = day + timedelta(days=3 - day.weekday())
    return f"{thursday.year}-W{(thursday.timetuple().tm_yday - 1) // 7 + 1:02d}"


@pytest.mark.parametrize(("day", "week"), [
    ("2026-12-28", "2026-W53"),  # 2026 has 53 weeks: it starts on a Thursday
    ("2026-12-31", "2026-W53"),
    ("2027-01-01", "2026-W53"),  # a Friday: still the last week of 2026
    ("2027-01-03", "2026-W53"),  # Sunday
    ("2027-01-04", "2027-W01"),  # Monday: week 1 of 2027
    ("2024-12-30", "2025-W01"),  # a Monday of December in week 1 of the next year
    ("2021-01-03", "2020-W53"),
    ("2026-03-29", "2026-W13"),  # Europe's spring DST change, a Sunday
    ("2026-03-30", "2026-W14"),
])
def test_iso_weeks_across_year_boundaries(day: str, week: str) -> None:
    assert semaine(day) == week == iso_week_by_thursday(date.fromisoformat(day))


@given(st.dates(min_value=date(1900, 1, 1), max_value=date(2200, 12, 31)))
def test_every_day_falls_in_its_iso_week(day: date) -> None:
    assert semaine(day.isoformat()) == iso_week_by_thursday(day)


@given(st.dates(min_value=date(1900, 1, 1), max_value=date(2200, 12, 31)))
def test_a_week_has_seven_consecutive_days(day: date) -> None:
    monday = day - timedelta(days=day.weekday())
    weeks = {semaine((monday + timedelta(days=i)).isoformat()) for i in range(7)}
    assert weeks == {semaine(day.isoformat())}
    assert semaine((monday - timedelta(days=1)).isoformat()) != semaine(day.isoformat())


def test_months_and_days() -> None:
    assert mois("2026-12-31") == "2026-12" and mois("2027-01-01") == "2027-01"
    assert periode("jour", "2026-12-31") == "2026-12-31"
    assert periode("semaine", "2027-01-01") == "2026-W53"
    assert periode("mois", "2027-01-01") == "2027-01"
    with pytest.raises(KeyError):
        periode("annee", "2027-01-01")


def test_a_dimension_is_named_once_whatever_the_prefix() -> None:
    assert dimension("preset") == dimension("journal.preset") == "journal.preset"
    assert dimension("journal.jour") == "journal.jour" != dimension("jour")
    assert [dimension(d) for d in ("jour", "semaine", "mois", "client", "modele", "demande")
            ] == ["jour", "semaine", "mois", "client", "modele", "demande"]


@pytest.mark.parametrize(("par", "puis", "depuis", "message"), [
    (None, "jour", None, "puis splits the groups of par: give par too"),
    ("preset", "", None, "puis: name a dimension"),
    ("preset", "journal.preset", None, "puis: 'journal.preset' is the dimension par "
                                       "already names"),
    ("semaine", "semaine", None, "puis: 'semaine' is the dimension par already names"),
    ("modele", "preset", None, "puis: a pilotage's model is not split by demande"),
    ("demande", "modele", None, "puis: a pilotage's model is not split by demande"),
    ("preset", "format", "2026-01-01", "depuis and jusqu_au bound days: use them when par "
                                       "or puis is jour, semaine or mois"),
])
def test_two_dimensions_refused_naming_the_parameter(par: str | None, puis: str,
                                                     depuis: str | None,
                                                     message: str) -> None:
    with pytest.raises(BoundsError) as refused:
        check_bounds(par, depuis, None, puis=puis)
    assert str(refused.value).startswith(message)


@pytest.mark.parametrize(("par", "puis", "depuis"), [
    ("preset", "semaine", "2026-01-01"), ("semaine", "preset", "2026-01-01"),
    ("modele", "jour", "2026-01-01"), ("mois", "modele", None), ("modele", "client", None),
    ("preset", "format", None), ("demande", "preset", None), ("mois", "jour", "2026-01-01"),
    ("client", "semaine", "2026-01-01"), ("journal.jour", "jour", "2026-01-01"),
])
def test_two_dimensions_accepted(par: str, puis: str, depuis: str | None) -> None:
    check_bounds(par, depuis, None, puis=puis)
