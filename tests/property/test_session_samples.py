"""The classement's samples over clusters (session, day) are exact and order-proof, whole,
per day and within any window (ADR-0166, ADR-0167).

A demande belongs to the session and day (in the projection's zone) of its delegation with
the smallest id, and each group's sample keeps, beside its per-demande sums, the sums of
its clusters' totals' squares and products, replaced cluster by cluster as demandes come,
move (a delegation with a smaller id, another session and day) and join the journal; and
so does each group's sample of each day (``bilan_echantillons_jours``), whose days sum to
the group's row exactly. Whatever the history (two delegations of
one demande in two sessions, pilotages and corrections before their delegation, journal
lines before and after the events, a demande's second line ignored, demandes without a
value in ``(inconnu)``, figures whose squares pass 2^63), however the events arrive (any
order, re-sent, cut into pages folded at any moment), every group's fifteen sums equal
``Echantillon.of_sessions`` of its demandes grouped by (client, session, day), recomputed
here from the events and the journal; so do its samples over random windows
(``samples(depuis=, jusqu_au=)``, the days' samples summed) and its recent period
(``samples(...).recents``: where it starts, its sample from there on); and so
do they after the samples are rebuilt from scratch (a replay's end), whose rows equal the
fold's, row for row. Delegations fall on three days of Paris time, some a few minutes
either side of midnight (a session crossing it), so the zone's day, not UTC's, decides.
Real stores and views: SQLite files, and a new PostgreSQL database per example; half the
examples take the exact paths (sums added in Python) that SQLite takes past 2^61.
"""

from __future__ import annotations

import json
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, nullcontext
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.services import Services
from miam_economies.api.service.settings import Settings
from miam_economies.domain.derive import recent_start
from miam_economies.domain.echantillon import Echantillon
from miam_economies.projections import sql_groups
from miam_economies.projections.sql_samples import summed
from miam_economies.projections.view import INCONNU
from tests.conftest import TOKEN, fresh_postgres
from tests.property.test_order_independence import play

CLIENTS = st.sampled_from(["claude-code", "autre"])
DEMANDES = st.sampled_from([f"dem-{i}" for i in range(6)])
SESSIONS = st.sampled_from(["s1", "s2", "s3"])
BIG = 2**53 - 1  # the largest counter: a session of three such demandes squares past 2^63
COST = st.integers(0, 1_000) | st.just(BIG)
EVITES = st.integers(-1_000, 1_000) | st.sampled_from([BIG, -BIG])
FIELDS = ("preset", "format")
DIMENSIONS = ("client", *FIELDS)
TABLES = {"bilan_echantillons": ("champ, valeur, client", 3),
          "bilan_echantillons_jours": ("champ, valeur, client, jour", 4),
          "bilan_sessions": ("champ, valeur, client, session, jour", 5)}
"""The tables compared row for row: their key's columns (after the projection's)."""
ZONE = "Europe/Paris"
DATES = st.sampled_from(["2026-10-29T10:00:00.000Z", "2026-10-29T22:55:00.000Z",
                         "2026-10-29T23:05:00.000Z", "2026-10-30T12:00:00.000Z",
                         "2026-10-30T23:30:00.000Z"])
"""In Paris (UTC+1), 2026-10-29 twice, then 2026-10-30 from 23:05Z, then 2026-10-31."""
DAYS = [None, "2026-10-28", "2026-10-29", "2026-10-30", "2026-10-31", "2026-11-01"]
Window = tuple[str | None, str | None]


@st.composite
def event(draw: st.DrawFn, n: int) -> dict[str, Any]:
    """One valid event; ``n`` makes its id unique. Delegation ids sort apart from their
    arrival order, so which one is a demande's smallest is the draw's."""
    common = {"schema": 1, "date": draw(DATES), "client": draw(CLIENTS),
              "session_id": draw(SESSIONS)}
    kind = draw(st.sampled_from(["delegation", "delegation", "pilotage", "correction"]))
    if kind == "delegation":
        return {**common, "type": kind, "id": f"d{draw(st.integers(0, 99)):02d}-{n}",
                "demande_id": draw(DEMANDES), "agent_id": "a1", "par_subagent": True,
                "retour": "complet", "tokens_entree": 0, "tokens_sortie": 0,
                "estimation": {"lus": 0, "ecrits": 0, "consigne": 0, "rendus": 0,
                               "evites": draw(EVITES), "methode": "m"}}
    cout = draw(COST)
    if kind == "pilotage":
        return {**common, "type": kind, "id": f"p{n}", "agent_id": "a1", "turn_id": str(n),
                "demande_ids": draw(st.lists(DEMANDES, min_size=1, max_size=3, unique=True)),
                "modele": "claude-haiku-5-5",
                "usage": {"input_tokens": cout, "output_tokens": 0,
                          "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
                "cout": cout}
    return {**common, "type": kind, "id": f"c{n}", "demande_id": draw(DEMANDES),
            "outil": "Edit", "tool_use_id": str(n), "tokens_lus": 0, "tokens_ecrits": cout,
            "cout": cout}


@st.composite
def journal_line(draw: st.DrawFn) -> str:
    """A journal line for a demande: a preset, a format, both or neither."""
    entry: dict[str, str] = {"demande_id": draw(DEMANDES)}
    for champ, values in (("preset", ["rapide", "precis"]), ("format", ["md", "json"])):
        if draw(st.booleans()):
            entry[champ] = draw(st.sampled_from(values))
    return json.dumps(entry)


Arrival = tuple[str, Any, bool]  # ("batch", [events]) or ("journal", line); fold after?
Case = tuple[list[dict[str, Any]], list[str], list[Arrival], bool, list[Window]]


@st.composite
def window(draw: st.DrawFn) -> Window:
    """Inclusive day bounds, either open (None), ``depuis`` never after ``jusqu_au``."""
    a, b = draw(st.sampled_from(DAYS)), draw(st.sampled_from(DAYS))
    if a is not None and b is not None and a > b:
        a, b = b, a
    return a, b


@st.composite
def cases(draw: st.DrawFn) -> Case:
    """Distinct events, journal lines (in file order), one way they arrive (events
    shuffled, re-sent, cut into batches, the lines appended at any moment in between),
    whether the rebuild takes the exact paths, and windows to read."""
    size = draw(st.integers(min_value=1, max_value=24))
    events = [draw(event(n)) for n in range(size)]
    journal = draw(st.lists(journal_line(), max_size=6))
    resent = draw(st.lists(st.sampled_from(events), max_size=3))
    stream = draw(st.permutations(events + resent))
    cuts = sorted(draw(st.lists(st.integers(1, len(stream) - 1), max_size=5, unique=True))
                  if len(stream) > 1 else [])
    bounds = [0, *cuts, len(stream)]
    plan: list[Arrival] = [("batch", stream[a:b], draw(st.booleans()))
                           for a, b in zip(bounds, bounds[1:], strict=False)]
    positions = sorted(draw(st.lists(st.integers(0, len(plan)), min_size=len(journal),
                                     max_size=len(journal))), reverse=True)
    for line, at in zip(reversed(journal), positions, strict=True):
        plan.insert(at, ("journal", line, draw(st.booleans())))
    return events, journal, plan, draw(st.booleans()), draw(st.lists(window(), min_size=1,
                                                                      max_size=3))


def day_of(date: str) -> str:
    """``date`` (ISO, UTC) as a day in ``ZONE``."""
    return datetime.fromisoformat(date).astimezone(ZoneInfo(ZONE)).date().isoformat()


def expected_samples(events: list[dict[str, Any]], journal: list[str], par: str,
                     depuis: str | None = None, jusqu_au: str | None = None,
                     by_day: bool = False) -> dict[str, Any]:
    """Each group of ``par``'s sample, recomputed from the events and the journal apart
    from the projections: each (client, demande) with a delegation, its figures summed
    (a pilotage's cout split over its distinct demandes, the remainder to the first in
    sorted order), in the session and day (``ZONE``) of its delegation with the smallest
    id, kept when that day is within ``depuis``..``jusqu_au``; its group the client, or
    the value of ``par`` in the demande's first journal line (``(inconnu)`` without one);
    ``Echantillon.of_sessions`` over the group's (client, session, day)s, or with
    ``by_day`` each day's ``[(day, sample)]`` in day order."""
    figures: defaultdict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    delegations: defaultdict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for e in {e["id"]: e for e in events}.values():
        client = e["client"]
        if e["type"] == "delegation":
            key = (client, e["demande_id"])
            delegations[key].append((e["id"], e["session_id"], day_of(e["date"])))
            figures[key][0] += e["estimation"]["evites"]
        elif e["type"] == "pilotage":
            ids = sorted(set(e["demande_ids"]))
            base, rest = divmod(e["cout"], len(ids))
            for i, demande_id in enumerate(ids):
                figures[(client, demande_id)][1] += base + (i < rest)
        else:
            figures[(client, e["demande_id"])][2] += e["cout"]
    first: dict[str, dict[str, str]] = {}
    for line in journal:
        entry = json.loads(line)
        first.setdefault(entry.pop("demande_id"), entry)
    groups: defaultdict[str, defaultdict[tuple[str, str, str], list[tuple[int, int, int]]]] = (
        defaultdict(lambda: defaultdict(list)))
    for (client, demande_id), sent in delegations.items():
        _, session, jour = min(sent)
        if not (depuis or "") <= jour <= (jusqu_au or "9999"):
            continue
        cle = client if par == "client" else first.get(demande_id, {}).get(par, INCONNU)
        e, p, c = figures[(client, demande_id)]
        groups[cle][(jour, client, session)].append((e, p, c))

    def sample(cle: str, clusters: Iterable[list[tuple[int, int, int]]]) -> Echantillon:
        # (inconnu)'s sessions are not kept: served as if each demande were its own
        # (ADR-0166, decision 4).
        return (Echantillon.of(row for rows in clusters for row in rows) if cle == INCONNU
                else Echantillon.of_sessions(clusters))
    if by_day:
        return {cle: [(jour, sample(cle, [rows for (day, *_), rows in clusters.items()
                                          if day == jour]))
                      for jour in sorted({day for day, *_ in clusters})]
                for cle, clusters in groups.items()}
    return {cle: sample(cle, list(clusters.values())) for cle, clusters in groups.items()}


@contextmanager
def fresh_services(backend: str) -> Iterator[Services]:
    """Services on a fresh data directory and store on ``backend``, removed afterwards."""
    database = fresh_postgres() if backend == "postgresql" else nullcontext(None)
    with tempfile.TemporaryDirectory() as tmp, database as url, open_services(
            Settings(data=Path(tmp) / "data", token=TOKEN, fuseau=ZONE, database_url=url),
            run_projections=False) as services:
        yield services


def served(services: Services, windows: list[Window]) -> dict[Any, dict[str, Any]]:
    """Every dimension's samples as the view serves them: whole (key ``par``), within
    each window (``(par, depuis, jusqu_au)``) and each stored group's recent period
    within it (``(..., "recent")``: the drift flag's read)."""
    name, view = services.projection.tracking_name, services.projection.view
    out: dict[Any, dict[str, Any]] = {}
    for par in DIMENSIONS:
        out[par] = {cle: Echantillon(*sums) for cle, sums in view.samples(name, par)[1].items()}
        for depuis, jusqu_au in [(None, None), *windows]:
            if depuis is not None or jusqu_au is not None:
                out[(par, depuis, jusqu_au)] = {cle: Echantillon(*sums) for cle, sums
                                                in view.samples(name, par, None, depuis,
                                                                jusqu_au)[1].items()}
            out[(par, depuis, jusqu_au, "recent")] = {
                cle: (start, Echantillon(*sums)) for cle, (start, sums)
                in view.samples(name, par, None, depuis, jusqu_au).recents.items()}
    return out


def expected(events: list[dict[str, Any]], journal: list[str], windows: list[Window]
             ) -> dict[Any, dict[str, Any]]:
    """``served``'s answer, recomputed (``expected_samples``)."""
    out: dict[Any, dict[str, Any]] = {}
    for par in DIMENSIONS:
        out[par] = expected_samples(events, journal, par)
        for depuis, jusqu_au in [(None, None), *windows]:
            if depuis is not None or jusqu_au is not None:
                out[(par, depuis, jusqu_au)] = expected_samples(events, journal, par,
                                                                depuis, jusqu_au)
            days = {cle: rows for cle, rows in expected_samples(
                events, journal, par, depuis, jusqu_au, by_day=True).items()
                if cle != INCONNU}
            out[(par, depuis, jusqu_au, "recent")] = {
                cle: (start, Echantillon.total(e for jour, e in rows if jour >= start))
                for cle, rows in days.items() if (start := recent_start(rows)) is not None}
    return out


def days_sum_to_samples(rows: dict[str, list[tuple[Any, ...]]]) -> None:
    """Each stored group's days add up to its ``bilan_echantillons`` row exactly."""
    days: dict[tuple[Any, ...], list[tuple[int, ...]]] = defaultdict(list)
    for row in rows["bilan_echantillons_jours"]:
        days[row[:3]].append(row[4:])
    assert {key: summed(sums) for key, sums in days.items()} == {
        row[:3]: row[3:] for row in rows["bilan_echantillons"]}


def stored_rows(services: Services) -> dict[str, list[tuple[Any, ...]]]:
    """The samples' and sessions' rows of the live projection, in key order, values as
    ints (a backend gives big sums back as decimal text or ``Decimal``)."""
    out = {}
    with services.projection.view._read() as c:  # type: ignore[attr-defined]
        for table, (order, width) in TABLES.items():
            c.execute(f"SELECT * FROM {table} WHERE projection = ? ORDER BY {order}",
                      (services.projection.tracking_name,))
            out[table] = [(*row[1:1 + width], *map(int, row[1 + width:]))
                          for row in c.fetchall()]
    return out


class SessionSamplesContract:
    """The law, whatever the backend (one subclass each, with its number of examples)."""

    backend = "sqlite"

    def law(self, case: Case) -> None:
        """One drawn case: fold the plan, check, rebuild, check again."""
        events, journal, plan, exact, windows = case
        wanted = expected(events, journal, windows)
        with fresh_services(self.backend) as services:
            play(services, plan)
            assert served(services, windows) == wanted
            folded = stored_rows(services)
            days_sum_to_samples(folded)
            with pytest.MonkeyPatch.context() as patch:
                if exact:  # as SQLite past 2^61: every sum added in Python
                    patch.setattr(sql_groups.GroupsWriter, "sums_exact_in_sql",
                                  lambda self, c, name: False)
                services.projection.view.rebuild_groups(services.projection.tracking_name)
                assert served(services, windows) == wanted
            assert stored_rows(services) == folded


HEALTH = [HealthCheck.too_slow, HealthCheck.differing_executors]


class TestSessionSamplesSQLite(SessionSamplesContract):
    """The law on SQLite files."""

    backend = "sqlite"

    @settings(max_examples=50, deadline=None, suppress_health_check=HEALTH)
    @given(cases())
    def test_samples_over_sessions_are_the_recomputed_ones_folded_or_rebuilt(
            self, case: Case) -> None:
        self.law(case)


class TestSessionSamplesPostgres(SessionSamplesContract):
    """The law on PostgreSQL databases (one per example: fewer, each costs a CREATE
    DATABASE)."""

    backend = "postgresql"

    @settings(max_examples=30, deadline=None, suppress_health_check=HEALTH)
    @given(cases())
    def test_samples_over_sessions_are_the_recomputed_ones_folded_or_rebuilt(
            self, case: Case) -> None:
        self.law(case)
