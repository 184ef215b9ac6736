"""Unit tests of the breakdowns per demande, per day and per model (issue 3): the pure
helpers of ``domain.bilan`` (``parts_pilotage``, ``jour``, ``check_day``,
``FiguresModele``, ``Figures``) and the page deltas of ``projections.delta``."""

from __future__ import annotations

import copy
import itertools
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import UTC as UTC_FIXED
from datetime import date, datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miam_economies.domain.bilan import (
    Figures,
    FiguresModele,
    jour,
    parts_pilotage,
    total,
)
from miam_economies.domain.breakdowns import WIRE_NAMES, BoundNames, check_bounds, check_day
from miam_economies.domain.events import Pilotage, from_payload
from miam_economies.domain.formulas import V1
from miam_economies.domain.validation import SchemaError, validate_batch
from miam_economies.projections.delta import DelegationVue, PageDelta
from tests.conftest import EXAMPLE_BATCH, EXAMPLE_CORRECTION

EXAMPLE_DELEGATION, EXAMPLE_PILOTAGE = EXAMPLE_BATCH["evenements"]
CLIENT = EXAMPLE_DELEGATION["client"]  # "claude-code"
DEMANDE = EXAMPLE_DELEGATION["demande_id"]  # "dem-9c8a4d0189"
MODELE = EXAMPLE_PILOTAGE["modele"]  # "claude-haiku-5-5"
UTC = ZoneInfo("UTC")
PARIS = ZoneInfo("Europe/Paris")


def delegation(**changes: Any) -> dict[str, Any]:
    """The contract's example delegation, with ``changes``."""
    return {**copy.deepcopy(EXAMPLE_DELEGATION), **changes}


def pilotage(**changes: Any) -> dict[str, Any]:
    """The contract's example pilotage, with ``changes``."""
    return {**copy.deepcopy(EXAMPLE_PILOTAGE), **changes}


def correction(**changes: Any) -> dict[str, Any]:
    """The README's example correction, with ``changes``."""
    return {**copy.deepcopy(EXAMPLE_CORRECTION), **changes}


def delta_of(payloads: Iterable[dict[str, Any]], zone: ZoneInfo = UTC) -> PageDelta:
    """A fresh V1 page delta with every payload added, in the order given."""
    delta = PageDelta(V1, zone)
    for payload in payloads:
        delta.add(from_payload(payload))
    return delta


def snapshot(delta: PageDelta) -> dict[str, Any]:
    """Every mapping of ``delta`` as a plain dict, and its event count, for comparison."""
    return {
        "clients": dict(delta.clients),
        "jours": dict(delta.jours),
        "modeles": dict(delta.modeles),
        "demandes": dict(delta.demandes),
        "evenements": delta.evenements,
    }


def frozen(tallies: Mapping[Any, Any]) -> dict[Any, Any]:
    """A page's running sums as a plain dict, for comparison."""
    return dict(tallies)


def four(f: Any) -> tuple[int, int, int, int]:
    """The four additive wire figures (``evenements`` is bookkeeping)."""
    return (f.delegations, f.evites, f.pilotage, f.corrections)


# --- parts_pilotage -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cout", "demande_ids"),
    [
        (0, ["a"]),
        (0, ["a", "b", "c"]),
        (1, ["a", "b", "c"]),
        (2, ["a", "b", "c"]),
        (10, ["a", "b", "c"]),
        (10, ["c", "b", "a"]),
        (2000, ["dem-1"]),
        (7, ["a", "a", "b"]),
        (2**53 - 1, ["a", "b", "c", "d", "e", "f", "g"]),
        (10**30 + 1, ["x", "y", "z"]),
        (5, [f"d{i}" for i in range(11)]),
    ],
)
def test_pilotage_parts_sum_to_its_cout(cout: int, demande_ids: list[str]) -> None:
    parts = parts_pilotage(cout, demande_ids)
    assert sum(part for _, part in parts) == cout
    assert len(parts) == len(set(demande_ids))


DEMANDE_IDS = st.lists(st.sampled_from(["a", "b", "c", "dem-1", "dem-10", "dem-2", "Z"]),
                       min_size=1, max_size=8)
COUTS = st.integers(min_value=0, max_value=2**70)


@settings(max_examples=100)
@given(COUTS, DEMANDE_IDS)
def test_pilotage_parts_are_integers_that_sum_to_cout_and_differ_by_at_most_one(
    cout: int, demande_ids: list[str]
) -> None:
    parts = parts_pilotage(cout, demande_ids)
    base = cout // len(set(demande_ids))
    assert all(type(part) is int and part in (base, base + 1) for _, part in parts)
    assert sum(part for _, part in parts) == cout
    assert Counter(d for d, _ in parts) == Counter(set(demande_ids))


@settings(max_examples=100)
@given(st.data(), COUTS, DEMANDE_IDS)
def test_pilotage_parts_do_not_depend_on_the_order_of_demande_ids(
    data: st.DataObject, cout: int, demande_ids: list[str]
) -> None:
    shuffled = data.draw(st.permutations(demande_ids))
    assert parts_pilotage(cout, shuffled) == parts_pilotage(cout, demande_ids)


def test_pilotage_remainder_goes_one_token_each_to_the_first_demandes_in_sorted_order(
) -> None:
    assert parts_pilotage(10, ["b", "a", "c"]) == [("a", 4), ("b", 3), ("c", 3)]
    assert parts_pilotage(11, ["c", "b", "a"]) == [("a", 4), ("b", 4), ("c", 3)]
    assert parts_pilotage(2, ["dem-2", "dem-10", "dem-1"]) == [
        ("dem-1", 1), ("dem-10", 1), ("dem-2", 0)]


@settings(max_examples=100)
@given(COUTS, DEMANDE_IDS)
def test_pilotage_parts_come_in_sorted_order_with_the_extra_tokens_first(
    cout: int, demande_ids: list[str]
) -> None:
    parts = parts_pilotage(cout, demande_ids)
    n = len(set(demande_ids))
    assert [d for d, _ in parts] == sorted(set(demande_ids))
    assert [part for _, part in parts] == [
        cout // n + (1 if i < cout % n else 0) for i in range(n)]


def test_a_demande_listed_twice_in_a_pilotage_gets_one_part() -> None:
    # A pilotage covers each distinct demande once (ADR-0101).
    assert parts_pilotage(9, ["a", "b", "a"]) == [("a", 5), ("b", 4)]
    assert parts_pilotage(4, ["b", "a", "a"]) == [("a", 2), ("b", 2)]
    assert parts_pilotage(7, ["a", "a"]) == [("a", 7)]


# --- jour ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("one", "other", "in_utc", "in_paris"),
    [
        ("2026-10-30T23:30:00.000Z", "2026-10-31T01:30:00+02:00", "2026-10-30", "2026-10-31"),
        ("2026-10-30T23:30:00Z", "2026-10-30T18:30:00-05:00", "2026-10-30", "2026-10-31"),
        ("2026-10-31T00:15:00+00:00", "2026-10-30T23:45:00-00:30", "2026-10-31", "2026-10-31"),
        ("2026-07-14T12:00:00.512Z", "2026-07-15T02:00:00.512+14:00", "2026-07-14",
         "2026-07-14"),
    ],
)
def test_the_same_instant_written_with_different_offsets_falls_on_the_same_day(
    one: str, other: str, in_utc: str, in_paris: str
) -> None:
    assert jour(one, UTC) == jour(other, UTC) == in_utc
    assert jour(one, PARIS) == jour(other, PARIS) == in_paris


@pytest.mark.parametrize(
    ("date", "in_utc", "in_paris"),
    [
        ("2026-10-30T23:30:00Z", "2026-10-30", "2026-10-31"),  # CET, UTC+1
        ("2026-07-14T22:30:00Z", "2026-07-14", "2026-07-15"),  # CEST, UTC+2
        ("2026-10-31T00:30:00+02:00", "2026-10-30", "2026-10-30"),
        ("2026-01-01T00:30:00+01:00", "2025-12-31", "2026-01-01"),
    ],
)
def test_a_date_near_midnight_falls_on_different_days_in_utc_and_paris(
    date: str, in_utc: str, in_paris: str
) -> None:
    assert jour(date, UTC) == in_utc
    assert jour(date, PARIS) == in_paris


@pytest.mark.parametrize("digits", range(1, 10))
def test_day_accepts_fractions_of_one_to_nine_digits(digits: int) -> None:
    assert jour(f"2026-10-30T23:59:59.{'9' * digits}Z", UTC) == "2026-10-30"
    assert jour(f"2026-10-30T23:59:59.{'9' * digits}Z", PARIS) == "2026-10-31"
    # The offset after the fraction is kept: 00:59 at +01:00 is 23:59 the day before in UTC.
    assert jour(f"2026-10-31T00:59:59.{'1' * digits}+01:00", UTC) == "2026-10-30"


@pytest.mark.parametrize(
    ("date", "in_paris"),
    [
        ("2026-03-29T00:30:00Z", "2026-03-29"),  # 01:30 CET, half an hour before the jump
        ("2026-03-29T01:30:00Z", "2026-03-29"),  # 03:30 CEST, just after it
        ("2026-03-28T22:59:59Z", "2026-03-28"),  # 23:59:59 CET
        ("2026-03-28T23:00:00Z", "2026-03-29"),  # midnight CET
        ("2026-03-29T21:59:59Z", "2026-03-29"),  # 23:59:59 CEST
        ("2026-03-29T22:00:00Z", "2026-03-30"),  # midnight CEST
        ("2026-10-24T22:30:00Z", "2026-10-25"),  # 00:30 CEST, the day summer time ends
        ("2026-10-25T22:30:00Z", "2026-10-25"),  # 23:30 CET, same day
    ],
)
def test_day_in_paris_follows_daylight_saving_changes(date: str, in_paris: str) -> None:
    assert jour(date, PARIS) == in_paris


OFFSETS = st.integers(min_value=-(23 * 60 + 59), max_value=23 * 60 + 59)
INSTANTS = st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2099, 12, 31),
                        timezones=st.just(UTC_FIXED))


@settings(max_examples=100)
@given(INSTANTS, OFFSETS, st.integers(min_value=0, max_value=9))
def test_any_instant_written_with_any_offset_falls_on_its_day_in_the_zone(
    instant: datetime, offset_minutes: int, digits: int
) -> None:
    local = instant.astimezone(timezone(timedelta(minutes=offset_minutes)))
    sign = "-" if offset_minutes < 0 else "+"
    hours, minutes = divmod(abs(offset_minutes), 60)
    fraction = f".{local.microsecond:06d}000"[: digits + 1] if digits else ""
    text = f"{local:%Y-%m-%dT%H:%M:%S}{fraction}{sign}{hours:02d}:{minutes:02d}"
    for zone in (UTC, PARIS):
        assert jour(text, zone) == instant.astimezone(zone).date().isoformat()


@pytest.mark.parametrize(
    ("date", "zone"),
    [
        ("0001-01-01T00:30:00+02:00", UTC),
        ("9999-12-31T23:30:00-02:00", UTC),
        ("9999-12-31T23:30:00Z", PARIS),
        ("0001-01-01T00:30:00Z", ZoneInfo("America/New_York")),
    ],
)
def test_every_date_that_validation_accepts_has_a_day(date: str, zone: ZoneInfo) -> None:
    # jour's contract: a validated date gives its day. A date validation accepts but jour
    # cannot place would stop the projection at that event on every retry.
    try:
        validate_batch({"evenements": [delegation(date=date)]})
    except SchemaError as refused:  # refused at the door: never stored, never folded
        assert [fault.champ for fault in refused.faults] == ["date"]
        return
    assert len(jour(date, zone)) >= 10


# --- check_day ----------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["2026-10-30", "2024-02-29", "2026-01-01", "2026-12-31"])
def test_check_day_returns_a_calendar_day_written_yyyy_mm_dd(text: str) -> None:
    assert check_day(text) == text


@pytest.mark.parametrize(
    "text",
    ["2026-13-01", "2026-02-30", "2025-02-29", "2026-00-10", "2026-10-00", "20261030",
     "2026-10-30T00:00:00Z", "", "2026-1-30", "2026-10-3", "2026/10/30", " 2026-10-30",
     "2026-10-30 ", "+026-10-30", "2026-10-3\u0661"],
)
def test_check_day_refuses_anything_but_a_day_written_yyyy_mm_dd(text: str) -> None:
    with pytest.raises(ValueError):
        check_day(text)


@given(st.integers(0, 9999), st.integers(0, 99), st.integers(0, 99))
def test_check_day_takes_exactly_the_days_the_calendar_has(year: int, month: int,
                                                           day: int) -> None:
    # Its own messages (not the standard library's) for a day written right that is not.
    text = f"{year:04d}-{month:02d}-{day:02d}"
    try:
        date(year, month, day)
    except ValueError:
        with pytest.raises(ValueError, match=r"is no calendar day \((no (month|year) \d+|"
                                             r"\d{4}-\d\d has \d\d days)\)$"):
            check_day(text)
    else:
        assert check_day(text) == text


# --- check_bounds -------------------------------------------------------------------------

CLI = BoundNames(depuis="--depuis", jusqu_au="--jusqu-au", par="--par", puis="--puis")


@pytest.mark.parametrize(("par", "depuis", "jusqu_au", "wire", "cli"), [
    ("jour", "x", None, "depuis: 'x' is not a day written YYYY-MM-DD",
     "--depuis: 'x' is not a day written YYYY-MM-DD"),
    ("jour", None, "2026-13-01", "jusqu_au: '2026-13-01' is no calendar day (no month 13)",
     "--jusqu-au: '2026-13-01' is no calendar day (no month 13)"),
    # Written YYYY-MM-DD but no such day: the refusal says so, not "not written YYYY-MM-DD".
    ("jour", "2026-11-31", None, "depuis: '2026-11-31' is no calendar day (2026-11 has 30 "
     "days)", "--depuis: '2026-11-31' is no calendar day (2026-11 has 30 days)"),
    # A value that spells a parameter stays as given.
    ("jour", "jusqu_au", None, "depuis: 'jusqu_au' is not a day written YYYY-MM-DD",
     "--depuis: 'jusqu_au' is not a day written YYYY-MM-DD"),
    ("client", "2026-01-01", None, "depuis and jusqu_au bound days: use them when par or "
     "puis is jour, semaine or mois", "--depuis and --jusqu-au bound days: use them when "
     "--par or --puis is jour, semaine or mois"),
    (None, None, "2026-01-01", "depuis and jusqu_au bound days: use them when par or puis "
     "is jour, semaine or mois", "--depuis and --jusqu-au bound days: use them when --par or "
     "--puis is jour, semaine or mois"),
    ("jour", "2026-01-02", "2026-01-01", "depuis is after jusqu_au",
     "--depuis is after --jusqu-au"),
])
def test_check_bounds_refuses_naming_the_parameters_as_the_edge_spells_them(
        par: str | None, depuis: str | None, jusqu_au: str | None, wire: str, cli: str
) -> None:
    for names, message in ((None, wire), (WIRE_NAMES, wire), (CLI, cli)):
        with pytest.raises(ValueError) as refused:
            if names is None:
                check_bounds(par, depuis, jusqu_au)  # the query string's names by default
            else:
                check_bounds(par, depuis, jusqu_au, names)
        assert str(refused.value) == message


@pytest.mark.parametrize(("par", "depuis", "jusqu_au"), [
    (None, None, None), ("client", None, None), ("jour", "2026-01-01", None),
    ("jour", None, "2026-01-01"), ("jour", "2026-01-01", "2026-01-01"),
    ("semaine", "2026-01-01", None), ("mois", None, "2026-01-01")])
def test_check_bounds_lets_sound_bounds_pass(par: str | None, depuis: str | None,
                                             jusqu_au: str | None) -> None:
    check_bounds(par, depuis, jusqu_au)


# --- FiguresModele and Figures ------------------------------------------------------------


def example_pilotage() -> Pilotage:
    typed = from_payload(pilotage())
    assert isinstance(typed, Pilotage)
    return typed


def test_model_figures_of_the_contract_pilotage_are_one_turn_its_usage_and_its_cout() -> None:
    figures = FiguresModele()
    figures.add_turn(example_pilotage(), V1.cout_pilotage(example_pilotage()))

    assert figures == FiguresModele(
        tours=1, input_tokens=800, output_tokens=200, cache_read_input_tokens=10000,
        cache_creation_input_tokens=0, cout=2000)


def test_model_figures_add_field_by_field() -> None:
    a = FiguresModele(1, 2, 3, 4, 5, 6)
    b = FiguresModele(10, 20, 30, 40, 50, 60)
    assert a + b == FiguresModele(11, 22, 33, 44, 55, 66)
    assert a + FiguresModele() == a


def test_model_figures_as_dict_gives_six_figures_usd_tours_and_usage() -> None:
    cell = FiguresModele(3, 800, 200, 10000, 7, 2500).as_dict("claude-haiku-5-5")
    assert cell == {
        "delegations": 0,
        "evites": 0,
        "pilotage": 2500,
        "corrections": 0,
        "net": -2500,
        "taux_reprise": None,
        # Haiku 5.5's list prices (genai-prices, ADR-0071), USD per million tokens: 0.10
        # in, 0.50 out, 0.01 cache read, 0.125 cache write: 80 + 100 + 100 + 0.875
        # micro-dollars, rounded once. (Before issue 15 the table stopped at the 4.5
        # models and this was null.)
        "usd": 0.000281,
        "tours": 3,
        "usage": {"input_tokens": 800, "output_tokens": 200,
                  "cache_read_input_tokens": 10000, "cache_creation_input_tokens": 7},
    }
    assert list(cell)[:6] == ["delegations", "evites", "pilotage", "corrections", "net",
                              "taux_reprise"]
    unknown = FiguresModele(3, 800, 200, 10000, 7, 2500).as_dict("claude-mystery-9")
    assert unknown["usd"] is None  # a model without a known price: null, never 0


def test_figures_subtract_field_by_field() -> None:
    assert Figures(10, 20, 30, 40, 5) - Figures(1, 2, 3, 4, 1) == Figures(9, 18, 27, 36, 4)
    assert Figures(0, -5, 0, 0, 0) - Figures(1, 5, 2, 3, 4) == Figures(-1, -10, -2, -3, -4)


FIGURES = st.builds(Figures, *[st.integers(-(2**60), 2**60)] * 5)


@settings(max_examples=100)
@given(FIGURES, FIGURES)
def test_figures_subtraction_undoes_addition(a: Figures, b: Figures) -> None:
    assert (a + b) - b == a
    assert a - a == Figures()


# --- PageDelta: one event of each type ----------------------------------------------------


def test_a_delegation_gives_its_client_day_and_demande_one_delegation_and_its_evites(
) -> None:
    delta = delta_of([delegation()])
    assert frozen(delta.clients) == {CLIENT: Figures(delegations=1, evites=4900, evenements=1)}
    assert frozen(delta.jours) == {
        (CLIENT, "2026-10-30"): Figures(delegations=1, evites=4900, evenements=1)}
    assert frozen(delta.modeles) == {}
    assert list(delta.demandes) == [(CLIENT, DEMANDE)]
    demande = delta.demandes[(CLIENT, DEMANDE)]
    assert four(demande.figures) == (1, 4900, 0, 0)
    assert demande.delegation == DelegationVue(
        id="claude-code:dem-9c8a4d0189", agent_id="a1", par_subagent=True, retour="complet",
        methode="caracteres/4", tokens_entree=4100, tokens_sortie=900, lus=4000, ecrits=900,
        consigne=100, rendus=900, session_id=EXAMPLE_DELEGATION["session_id"],
        jour="2026-10-30")
    assert (demande.pilotages, demande.corrections_nombre, demande.par_outil) == (0, 0, {})


def test_a_pilotage_splits_its_cout_over_its_demandes_and_counts_one_turn_for_its_model(
) -> None:
    delta = delta_of([pilotage(demande_ids=["b", "a", "c"], cout=10)])
    assert frozen(delta.clients) == {CLIENT: Figures(pilotage=10, evenements=1)}
    assert frozen(delta.jours) == {(CLIENT, "2026-10-30"): Figures(pilotage=10, evenements=1)}
    assert frozen(delta.modeles) == {
        (CLIENT, MODELE, "2026-10-30"): FiguresModele(1, 800, 200, 10000, 0, 10)}
    assert set(delta.demandes) == {(CLIENT, "a"), (CLIENT, "b"), (CLIENT, "c")}
    # Each demande's part, on the pilotage's day (ADR-0133).
    assert {k: four(f) for k, f in delta.demandes_jours.items()} == {
        (CLIENT, "a", "2026-10-30"): (0, 0, 4, 0), (CLIENT, "b", "2026-10-30"): (0, 0, 3, 0),
        (CLIENT, "c", "2026-10-30"): (0, 0, 3, 0)}
    parts = {d: delta.demandes[(CLIENT, d)].figures.pilotage for d in "abc"}
    assert parts == {"a": 4, "b": 3, "c": 3}
    for d in "abc":
        demande = delta.demandes[(CLIENT, d)]
        assert demande.pilotages == 1
        assert four(demande.figures) == (0, 0, parts[d], 0)
        assert demande.delegation is None


def test_a_pilotage_listing_a_demande_twice_covers_it_once() -> None:
    # ADR-0101: one part and one pilotage per distinct demande.
    delta = delta_of([pilotage(demande_ids=["a", "b", "a"], cout=11)])
    assert delta.demandes[(CLIENT, "a")].figures.pilotage == 6
    assert delta.demandes[(CLIENT, "a")].pilotages == 1
    assert delta.demandes[(CLIENT, "b")].figures.pilotage == 5
    assert delta.demandes[(CLIENT, "b")].pilotages == 1


def test_corrections_add_to_their_demande_per_outil_as_cout_and_count() -> None:
    delta = delta_of([
        correction(),  # Edit, 490
        correction(id="c-read", tool_use_id="t2", outil="Read", tokens_lus=7, tokens_ecrits=0,
                   cout=7),
        correction(id="c-edit", tool_use_id="t3", tokens_lus=4, tokens_ecrits=6, cout=10),
    ])
    demande = delta.demandes[(CLIENT, DEMANDE)]
    assert four(demande.figures) == (0, 0, 0, 507)
    assert demande.corrections_nombre == 3
    assert demande.par_outil == {"Edit": (500, 2), "Read": (7, 1)}
    assert demande.delegation is None
    assert frozen(delta.clients) == {CLIENT: Figures(corrections=507, evenements=3)}


def test_the_delta_counts_the_events_added() -> None:
    delta = PageDelta(V1, UTC)
    assert delta.evenements == 0
    for n, payload in enumerate([delegation(), pilotage(), correction()], start=1):
        delta.add(from_payload(payload))
        assert delta.evenements == n
    assert sum(f.evenements for f in delta.clients.values()) == 3
    assert sum(f.evenements for f in delta.jours.values()) == 3


def test_days_are_keyed_by_client_and_day_in_the_delta_zone() -> None:
    payloads = [
        delegation(date="2026-10-30T22:30:00Z"),
        pilotage(date="2026-10-30T23:30:00Z"),
        correction(client="autre", date="2026-10-30T12:00:00+02:00"),
    ]
    in_utc = delta_of(payloads, UTC)
    assert set(in_utc.jours) == {(CLIENT, "2026-10-30"), ("autre", "2026-10-30")}
    assert in_utc.jours[(CLIENT, "2026-10-30")] == Figures(1, 4900, 2000, 0, 2)
    in_paris = delta_of(payloads, PARIS)
    assert frozen(in_paris.jours) == {
        (CLIENT, "2026-10-30"): Figures(delegations=1, evites=4900, evenements=1),
        (CLIENT, "2026-10-31"): Figures(pilotage=2000, evenements=1),
        ("autre", "2026-10-30"): Figures(corrections=490, evenements=1),
    }
    assert dict(in_paris.clients) == dict(in_utc.clients)


def test_models_are_keyed_by_client_modele_and_day() -> None:
    delta = delta_of([
        pilotage(),
        pilotage(id="p2", turn_id="t2", cout=5),
        pilotage(id="p3", turn_id="t3", modele="claude-opus-5", cout=7),
        pilotage(id="p4", turn_id="t4", client="autre", cout=1),
        pilotage(id="p5", turn_id="t5", cout=3, date="2026-10-31T09:00:00Z"),
    ])
    day, next_day = "2026-10-30", "2026-10-31"
    assert frozen(delta.modeles) == {
        (CLIENT, MODELE, day): FiguresModele(2, 1600, 400, 20000, 0, 2005),
        (CLIENT, MODELE, next_day): FiguresModele(1, 800, 200, 10000, 0, 3),
        (CLIENT, "claude-opus-5", day): FiguresModele(1, 800, 200, 10000, 0, 7),
        ("autre", MODELE, day): FiguresModele(1, 800, 200, 10000, 0, 1),
    }


def test_demandes_are_keyed_by_client_and_demande_id() -> None:
    delta = delta_of([delegation(), delegation(id="autre:d", client="autre")])
    assert set(delta.demandes) == {(CLIENT, DEMANDE), ("autre", DEMANDE)}
    assert delta.demandes[("autre", DEMANDE)].delegation.id == "autre:d"  # type: ignore[union-attr]
    assert delta.demandes[(CLIENT, DEMANDE)].delegation.id == EXAMPLE_DELEGATION["id"]  # type: ignore[union-attr]


# --- PageDelta: two delegations under one demande_id --------------------------------------

SAME_DEMANDE = [
    delegation(id="dup-b", session_id="s-b", agent_id=None, par_subagent=False,
               retour="apercu", tokens_entree=10, tokens_sortie=20,
               estimation={"lus": 1, "ecrits": 2, "consigne": 3, "rendus": 4, "evites": -4,
                           "methode": "m-b"}),
    delegation(id="dup-a", session_id="s-a", agent_id="a-first", par_subagent=True,
               retour="complet", tokens_entree=100, tokens_sortie=200,
               estimation={"lus": 10, "ecrits": 20, "consigne": 30, "rendus": 40, "evites": 30,
                           "methode": "m-a"}),
    delegation(id="dup-c", session_id="s-c", agent_id="a-c", par_subagent=True,
               retour="apercu", tokens_entree=1000, tokens_sortie=2000,
               estimation={"lus": 100, "ecrits": 200, "consigne": 300, "rendus": 400,
                           "evites": 300, "methode": "m-c"}),
]


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_delegations_sharing_a_demande_keep_the_smallest_id_attributes_and_sum_counts(
    order: tuple[int, ...]
) -> None:
    delta = delta_of(SAME_DEMANDE[i] for i in order)
    demande = delta.demandes[(CLIENT, DEMANDE)]
    assert demande.delegation == DelegationVue(
        id="dup-a", agent_id="a-first", par_subagent=True, retour="complet", methode="m-a",
        tokens_entree=1110, tokens_sortie=2220, lus=111, ecrits=222, consigne=333, rendus=444,
        session_id="s-a", jour="2026-10-30")
    assert four(demande.figures) == (3, 326, 0, 0)


@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_two_delegations_sharing_a_demande_merge_the_same_either_way(
    order: tuple[int, int]
) -> None:
    pair = [SAME_DEMANDE[0], SAME_DEMANDE[2]]  # dup-b, dup-c
    demande = delta_of(pair[i] for i in order).demandes[(CLIENT, DEMANDE)]
    assert demande.delegation is not None
    assert (demande.delegation.id, demande.delegation.agent_id, demande.delegation.retour,
            demande.delegation.methode, demande.delegation.session_id) == (
        "dup-b", None, "apercu", "m-b", "s-b")
    assert (demande.delegation.tokens_entree, demande.delegation.tokens_sortie) == (1010, 2020)


# --- PageDelta: conservation and order independence ---------------------------------------

MIXED = [
    delegation(),
    pilotage(demande_ids=[DEMANDE, "dem-sans-delegation", "dem-2"], cout=2001),
    correction(),
    correction(id="c2", tool_use_id="t2", demande_id="dem-sans-delegation", outil="Bash",
               tokens_lus=3, tokens_ecrits=4, cout=7),
    delegation(id="claude-code:dem-2", demande_id="dem-2", date="2026-10-31T00:30:00+02:00",
               estimation={"lus": 1, "ecrits": 1, "consigne": 1, "rendus": 1, "evites": -2,
                           "methode": "caracteres/4"}),
    delegation(id="autre:dem-3", client="autre", demande_id="dem-3"),
    pilotage(id="autre:p", client="autre", demande_ids=["dem-3"], cout=1),
]


def test_demande_figures_sum_to_client_figures_for_a_mixed_page() -> None:
    delta = delta_of(MIXED, PARIS)
    by_client = four(total(delta.clients.values()))
    by_demande = four(total(d.figures for d in delta.demandes.values()))
    assert by_demande == by_client == (3, 4900 - 2 + 4900, 2001 + 1, 490 + 7)
    for client in (CLIENT, "autre"):
        own = (d.figures for (c, _), d in delta.demandes.items() if c == client)
        assert four(total(own)) == four(delta.clients[client])
    assert delta.demandes[(CLIENT, "dem-sans-delegation")].figures.pilotage == 667
    assert delta.evenements == len(MIXED)


CLIENTS = st.sampled_from(["claude-code", "autre"])
DEMANDES = st.sampled_from([f"dem-{i}" for i in range(5)])
DATES = st.sampled_from(["2026-10-30T09:12:04.512Z", "2026-10-30T23:30:00Z",
                         "2026-10-31T01:30:00+02:00", "2026-03-29T00:30:00.123456789Z",
                         "2026-10-30T18:30:00-05:00"])
TOKENS = st.integers(min_value=0, max_value=2**40)


@st.composite
def event_payload(draw: st.DrawFn, n: int) -> dict[str, Any]:
    """One valid payload of any type; ``n`` makes its id unique."""
    common = {"client": draw(CLIENTS), "date": draw(DATES)}
    kind = draw(st.sampled_from(["delegation", "pilotage", "correction"]))
    if kind == "delegation":
        agent = draw(st.none() | st.sampled_from(["a1", "a2"]))
        return delegation(**common, id=f"d{n:03d}", demande_id=draw(DEMANDES), agent_id=agent,
                          par_subagent=agent is not None,
                          retour=draw(st.sampled_from(["complet", "apercu"])),
                          tokens_entree=draw(TOKENS), tokens_sortie=draw(TOKENS),
                          estimation={"lus": draw(TOKENS), "ecrits": draw(TOKENS),
                                      "consigne": draw(TOKENS), "rendus": draw(TOKENS),
                                      "evites": draw(st.integers(-(2**40), 2**40)),
                                      "methode": draw(st.sampled_from(["m1", "m2"]))})
    if kind == "pilotage":
        usage = {k: draw(TOKENS) for k in ("input_tokens", "output_tokens",
                                           "cache_read_input_tokens",
                                           "cache_creation_input_tokens")}
        return pilotage(**common, id=f"p{n:03d}", turn_id=str(n),
                        demande_ids=draw(st.lists(DEMANDES, min_size=1, max_size=4)),
                        modele=draw(st.sampled_from([MODELE, "claude-opus-5"])), usage=usage,
                        cout=draw(TOKENS))
    lus, ecrits = draw(TOKENS), draw(TOKENS)
    return correction(**common, id=f"c{n:03d}", tool_use_id=str(n), demande_id=draw(DEMANDES),
                      outil=draw(st.sampled_from(["Read", "Edit", "Write", "NotebookEdit",
                                                  "Bash"])),
                      tokens_lus=lus, tokens_ecrits=ecrits, cout=lus + ecrits)


@st.composite
def pages(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A page of distinct events (unique ids)."""
    size = draw(st.integers(min_value=1, max_value=25))
    return [draw(event_payload(n)) for n in range(size)]


@settings(max_examples=100)
@given(pages())
def test_demande_day_and_model_figures_sum_to_client_figures(
    payloads: list[dict[str, Any]]
) -> None:
    delta = delta_of(payloads, PARIS)
    by_client = total(delta.clients.values())
    assert four(total(d.figures for d in delta.demandes.values())) == four(by_client)
    assert total(delta.jours.values()) == by_client
    assert sum(m.cout for m in delta.modeles.values()) == by_client.pilotage
    assert sum(m.tours for m in delta.modeles.values()) == sum(
        p["type"] == "pilotage" for p in payloads)
    assert by_client.evenements == delta.evenements == len(payloads)


@settings(max_examples=100)
@given(st.data(), pages())
def test_the_same_events_in_any_order_give_equal_deltas(
    data: st.DataObject, payloads: list[dict[str, Any]]
) -> None:
    shuffled = data.draw(st.permutations(payloads))
    assert snapshot(delta_of(shuffled, PARIS)) == snapshot(delta_of(payloads, PARIS))


@settings(max_examples=100)
@given(st.permutations(MIXED))
def test_the_mixed_page_in_any_order_gives_the_delta_of_the_listed_order(
    shuffled: list[dict[str, Any]]
) -> None:
    assert snapshot(delta_of(shuffled, PARIS)) == snapshot(delta_of(MIXED, PARIS))


def test_model_usd_prices_each_kind_of_token_at_the_models_rates() -> None:
    # claude-sonnet-4-5: $3 in, $15 out, $3.75 cache write, $0.30 cache read per million.
    turns = FiguresModele(1, 1_000_000, 100_000, 1_000_000, 10_000, 0)
    assert turns.usd("claude-sonnet-4-5-20250929") == 4.8375  # 3 + 1.5 + 0.3 + 0.0375
    assert turns.usd("claude-mystery-9") is None


def test_model_usd_rounds_once_to_the_micro_dollar_halves_up() -> None:
    # claude-3-haiku input: 0.25 USD per million tokens, so 2 tokens cost half a micro-dollar.
    assert FiguresModele(1, 2, 0, 0, 0, 0).usd("claude-3-haiku") == 0.000001
    assert FiguresModele(1, 6, 0, 0, 0, 0).usd("claude-3-haiku") == 0.000002  # 1.5 -> 2
    assert FiguresModele(1, 10, 0, 0, 0, 0).usd("claude-3-haiku") == 0.000003  # 2.5 -> 3
