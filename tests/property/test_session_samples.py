"""The classement's samples over sessions are exact and order-proof (ADR-0166 to come).

A demande belongs to the session of its delegation with the smallest id, and each group's
sample keeps, beside its per-demande sums, the sums of its sessions' totals' squares and
products, replaced session by session as demandes come, move (a delegation with a smaller
id and another session) and join the journal. Whatever the history (two delegations of
one demande in two sessions, pilotages and corrections before their delegation, journal
lines before and after the events, a demande's second line ignored, demandes without a
value in ``(inconnu)``, figures whose squares pass 2^63), however the events arrive (any
order, re-sent, cut into pages folded at any moment), every group's fifteen sums equal
``Echantillon.of_sessions`` of its demandes grouped by (client, session), recomputed here
from the events and the journal; and so do they after the samples are rebuilt from
scratch (a replay's end), whose rows equal the fold's, row for row. Real stores and views:
SQLite files, and a new PostgreSQL database per example; half the examples take the exact
paths (sums added in Python) that SQLite takes past 2^61.
"""

from __future__ import annotations

import json
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.services import Services
from miam_economies.api.service.settings import Settings
from miam_economies.domain.acceptance import accept_batch
from miam_economies.domain.echantillon import Echantillon
from miam_economies.projections import sql_groups
from miam_economies.projections.view import INCONNU
from tests.conftest import TOKEN, fresh_postgres

CLIENTS = st.sampled_from(["claude-code", "autre"])
DEMANDES = st.sampled_from([f"dem-{i}" for i in range(6)])
SESSIONS = st.sampled_from(["s1", "s2", "s3"])
BIG = 2**53 - 1  # the largest counter: a session of three such demandes squares past 2^63
COST = st.integers(0, 1_000) | st.just(BIG)
EVITES = st.integers(-1_000, 1_000) | st.sampled_from([BIG, -BIG])
FIELDS = ("preset", "format")
DIMENSIONS = ("client", *FIELDS)
TABLES = {"bilan_echantillons": ("champ, valeur, client", 3),
          "bilan_sessions": ("champ, valeur, client, session", 4)}
"""The tables compared row for row: their key's columns (after the projection's)."""
DATE = "2026-10-30T12:00:00.000Z"


@st.composite
def event(draw: st.DrawFn, n: int) -> dict[str, Any]:
    """One valid event; ``n`` makes its id unique. Delegation ids sort apart from their
    arrival order, so which one is a demande's smallest is the draw's."""
    common = {"schema": 1, "date": DATE, "client": draw(CLIENTS),
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
Case = tuple[list[dict[str, Any]], list[str], list[Arrival], bool]


@st.composite
def cases(draw: st.DrawFn) -> Case:
    """Distinct events, journal lines (in file order), one way they arrive (events
    shuffled, re-sent, cut into batches, the lines appended at any moment in between),
    and whether the rebuild takes the exact paths."""
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
    return events, journal, plan, draw(st.booleans())


def expected_samples(events: list[dict[str, Any]], journal: list[str], par: str
                     ) -> dict[str, Echantillon]:
    """Each group of ``par``'s sample, recomputed from the events and the journal apart
    from the projections: each (client, demande) with a delegation, its figures summed
    (a pilotage's cout split over its distinct demandes, the remainder to the first in
    sorted order), in the session of its delegation with the smallest id; its group the
    client, or the value of ``par`` in the demande's first journal line (``(inconnu)``
    without one); ``Echantillon.of_sessions`` over the group's (client, session)s."""
    figures: defaultdict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    delegations: defaultdict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for e in {e["id"]: e for e in events}.values():
        client = e["client"]
        if e["type"] == "delegation":
            key = (client, e["demande_id"])
            delegations[key].append((e["id"], e["session_id"]))
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
    groups: defaultdict[str, defaultdict[tuple[str, str], list[tuple[int, int, int]]]] = (
        defaultdict(lambda: defaultdict(list)))
    for (client, demande_id), sent in delegations.items():
        session = min(sent)[1]
        cle = client if par == "client" else first.get(demande_id, {}).get(par, INCONNU)
        e, p, c = figures[(client, demande_id)]
        groups[cle][(client, session)].append((e, p, c))
    # (inconnu)'s sessions are not kept: served as if each demande were its own (ADR-0166).
    return {cle: Echantillon.of_sessions(sessions.values()) if cle != INCONNU else
            Echantillon.of(row for rows in sessions.values() for row in rows)
            for cle, sessions in groups.items()}


@contextmanager
def fresh_services(backend: str) -> Iterator[Services]:
    """Services on a fresh data directory and store on ``backend``, removed afterwards."""
    database = fresh_postgres() if backend == "postgresql" else nullcontext(None)
    with tempfile.TemporaryDirectory() as tmp, database as url, open_services(
            Settings(data=Path(tmp) / "data", token=TOKEN, fuseau="UTC", database_url=url),
            run_projections=False) as services:
        yield services


def served(services: Services) -> dict[str, dict[str, Echantillon]]:
    """Every dimension's samples as the view serves them."""
    name = services.projection.tracking_name
    return {par: {cle: Echantillon(*sums)
                  for cle, sums in services.projection.view.samples(name, par)[1].items()}
            for par in DIMENSIONS}


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
        events, journal, plan, exact = case
        expected = {par: expected_samples(events, journal, par) for par in DIMENSIONS}
        with fresh_services(self.backend) as services:
            for kind, item, fold_now in plan:
                if kind == "journal":
                    with services.settings.journal_path.open("a") as f:
                        f.write(item + "\n")
                else:
                    services.store.append(accept_batch({"evenements": item}))
                if fold_now:
                    services.runner.catch_up()
            services.runner.catch_up()
            assert served(services) == expected
            folded = stored_rows(services)
            with pytest.MonkeyPatch.context() as patch:
                if exact:  # as SQLite past 2^61: every sum added in Python
                    patch.setattr(sql_groups.GroupsWriter, "sums_exact_in_sql",
                                  lambda self, c, name: False)
                services.projection.view.rebuild_groups(services.projection.tracking_name)
                assert served(services) == expected
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
