"""Order tolerance is a law: any arrival order, any batching, any re-sends, and journal lines
appended at any moment give one state of every projection.

SPEC, "The bilan": "for any multiset of valid events, every arrival order and any number
of re-sends give the same projection state." Each example appends to a fresh store (SQLite
files, or a new PostgreSQL database) through the real store and folds through the real
projection; the law is one contract class, run once per backend.

Re-sends may differ from the first version (a conflict: the first stored wins, the others
count once each under ``conflits``; SPEC, "Wire contract"): which version is kept then
depends on the order, so the law for them is that the state is the one of the versions
kept, appended first in one batch, then each differing version once, in one batch.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miam_economies.api.service.answers import bilan_answer, classement_answer
from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.services import Services
from miam_economies.api.service.settings import Settings
from miam_economies.domain.acceptance import accept_batch
from tests.conftest import TOKEN, fresh_postgres
from tests.corpus import expected_bilan

CLIENTS = st.sampled_from(["claude-code", "claude-code-ci", "autre"])
DEMANDES = st.sampled_from([f"dem-{i}" for i in range(6)])
COUNTER = st.integers(min_value=0, max_value=2**40)
DATES = st.sampled_from([  # the first two are one instant; the rest cross midnights
    "2026-10-30T23:30:00.000Z", "2026-10-31T01:30:00+02:00", "2026-10-31T00:30:00Z",
    "2026-10-30T12:00:00.123456789-11:00", "2026-03-29T01:30:00Z",
])
MODELES = st.sampled_from(["claude-haiku-5-5", "claude-sonnet-5"])
BREAKDOWNS = ("client", "jour", "modele", "demande", "preset")


@st.composite
def event(draw: st.DrawFn, n: int) -> dict[str, Any]:
    """One valid event of any type; ``n`` makes its id unique."""
    common = {"schema": 1, "date": draw(DATES), "client": draw(CLIENTS), "session_id": "s"}
    kind = draw(st.sampled_from(["delegation", "pilotage", "correction"]))
    if kind == "delegation":
        agent = draw(st.none() | st.just("a1"))
        return {**common, "type": kind, "id": f"d{n}", "demande_id": draw(DEMANDES),
                "agent_id": agent, "par_subagent": agent is not None, "retour": "complet",
                "tokens_entree": draw(COUNTER), "tokens_sortie": draw(COUNTER),
                "estimation": {"lus": 0, "ecrits": 0, "consigne": 0, "rendus": 0,
                               "evites": draw(st.integers(-2**40, 2**40)), "methode": "m"}}
    if kind == "pilotage":
        usage = {k: draw(COUNTER) for k in ("input_tokens", "output_tokens",
                                            "cache_read_input_tokens",
                                            "cache_creation_input_tokens")}
        return {**common, "type": kind, "id": f"p{n}", "agent_id": "a1", "turn_id": str(n),
                "demande_ids": draw(st.lists(DEMANDES, min_size=1, max_size=3)),
                "modele": draw(MODELES), "usage": usage, "cout": draw(COUNTER)}
    lus, ecrits = draw(COUNTER), draw(COUNTER)
    return {**common, "type": kind, "id": f"c{n}", "demande_id": draw(DEMANDES),
            "outil": draw(st.sampled_from(["Read", "Edit", "Write", "NotebookEdit", "Bash"])),
            "tool_use_id": str(n), "tokens_lus": lus, "tokens_ecrits": ecrits,
            "cout": lus + ecrits}


Arrival = tuple[str, Any, bool]  # ("batch", [events]) or ("journal", line); fold after?


def variant(event: dict[str, Any], k: int) -> dict[str, Any]:
    """``event`` re-sent with one token count ``k`` (≥ 1) higher: a conflicting version."""
    changed = json.loads(json.dumps(event))
    if changed["type"] == "delegation":
        changed["estimation"]["evites"] += k
    else:
        changed["cout"] += k
    return changed


def kept_and_conflicts(events: list[dict[str, Any]], plan: list[Arrival]
                       ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The versions ``plan`` stores (each id's first in arrival order), in the order of
    ``events`` (drawn), and its differing versions, each distinct one once, sorted by
    their text: neither list follows the plan's order, so the law still tests it."""
    kept: dict[str, dict[str, Any]] = {}
    conflicts: dict[str, dict[str, Any]] = {}
    for kind, item, _ in plan:
        for e in item if kind == "batch" else ():
            first = kept.setdefault(e["id"], e)
            if e != first:
                conflicts.setdefault(json.dumps(e, sort_keys=True), e)
    return ([kept[e["id"]] for e in events],
            [conflicts[text] for text in sorted(conflicts)])


@st.composite
def arrivals(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[str], list[Arrival]]:
    """Distinct events and journal lines, and one way they may arrive: events shuffled,
    re-sent and batched, journal lines appended at any moment in between."""
    size = draw(st.integers(min_value=1, max_value=30))
    events = [draw(event(n)) for n in range(size)]
    journal = [json.dumps({"demande_id": d, "preset": draw(st.sampled_from(["a", "b"])),
                           "test_id": draw(st.sampled_from(["t1", "t2", "t3"]))})
               for d in draw(st.lists(DEMANDES, unique=True, max_size=4))]
    resent = draw(st.lists(st.sampled_from(events), max_size=size))
    # Conflicting re-sends: two of one event may be the same version (one conflict).
    differing = [variant(e, k) for e, k in draw(st.lists(
        st.tuples(st.sampled_from(events), st.integers(1, 2)), max_size=3))]
    stream = draw(st.permutations(events + resent + differing))
    cuts = sorted(draw(st.lists(st.integers(1, len(stream) - 1), max_size=6, unique=True))
                  if len(stream) > 1 else [])
    bounds = [0, *cuts, len(stream)]
    plan: list[Arrival] = [("batch", stream[a:b], draw(st.booleans()))
                           for a, b in zip(bounds, bounds[1:], strict=False)]
    for line in journal:
        plan.insert(draw(st.integers(0, len(plan))), ("journal", line, draw(st.booleans())))
    return events, journal, plan


@contextmanager
def fresh_store(backend: str) -> Iterator[Settings]:
    """Settings of a fresh data directory and store on ``backend``, removed afterwards."""
    database = fresh_postgres() if backend == "postgresql" else nullcontext(None)
    with tempfile.TemporaryDirectory() as tmp, database as url:
        yield Settings(data=Path(tmp) / "data", token=TOKEN, fuseau="Europe/Paris",
                       database_url=url)


def play(services: Services, plan: list[Arrival]) -> int:
    """Play ``plan`` as the server would: its batches appended, its journal lines appended
    to the journal, pages folded at its moments by the serving projection's runner, then
    caught up; return Σ recus."""
    recus = 0
    for kind, item, fold_now in plan:
        if kind == "journal":
            with services.settings.journal_path.open("a") as f:
                f.write(item + "\n")
        else:
            recus += services.store.append(accept_batch({"evenements": item})).recus
        if fold_now:  # fold at arbitrary moments, not only at the end
            services.runner.catch_up()
    services.runner.catch_up()
    return recus


def fold(plan: list[Arrival], backend: str = "sqlite") -> tuple[dict[str, Any], int]:
    """Play ``plan`` against a fresh store and view on ``backend``; return every
    breakdown, every demande, the conservation figures and every classement, and Σ
    recus."""
    with fresh_store(backend) as settings_, \
            open_services(settings_, run_projections=False) as services:
        recus = play(services, plan)
        state = {par: bilan_answer(services.bilan(par))["groupes"] for par in BREAKDOWNS}
        bilan = bilan_answer(services.bilan())
        state["economies"], state["total"] = bilan["economies"], bilan["total"]
        state["conservation"] = bilan["conservation"]
        state["demandes"] = {d: services.demande(d) for d in state["demande"]}
        # The whole classement document: groups, intervals, verdicts, paired verdicts.
        state["classements"] = {
            f"{par} {selon} {apparier}": classement_answer(
                services.classement(par, 1, selon, apparier))
            for par, selon, apparier in (("preset", "taux", None),
                                         ("preset", "net", "test_id"),
                                         ("client", "net", None),
                                         ("client", "taux", "test_id"))}
    return state, recus


class OrderIndependenceContract:
    """The law, whatever the backend (one subclass each, with its number of examples)."""

    backend = "sqlite"

    def law(self, case: tuple[list[dict[str, Any]], list[str], list[Arrival]]) -> None:
        """One drawn case: the shuffled, re-sent, batched plan gives the canonical state."""
        drawn, journal, plan = case
        events, conflicts = kept_and_conflicts(drawn, plan)
        canonical, _ = fold([("journal", line, False) for line in journal]
                            + [("batch", events, False)]
                            + ([("batch", conflicts, False)] if conflicts else []),
                            self.backend)
        shuffled, recus = fold(plan, self.backend)
        assert shuffled == canonical
        assert shuffled["total"]["conflits"] == len(conflicts)
        six = ("delegations", "evites", "pilotage", "corrections", "net", "taux_reprise")
        figures = {"economies": {c: {k: f[k] for k in six}
                                 for c, f in shuffled["economies"].items()},
                   "total": {k: shuffled["total"][k] for k in six}}
        expected = expected_bilan(events)
        assert figures == {"economies": {c: {k: f[k] for k in six}
                                         for c, f in expected["economies"].items()},
                           "total": {k: expected["total"][k] for k in six}}
        # A differing version is stored once (in no figure but conflits), never received.
        assert shuffled["conservation"]["stockes"] == shuffled["conservation"]["comptes"] \
            == len(events) + len(conflicts)
        assert recus == len(events)


HEALTH = [HealthCheck.too_slow, HealthCheck.differing_executors]


class TestOrderIndependenceSQLite(OrderIndependenceContract):
    """The law on SQLite files."""

    backend = "sqlite"

    @settings(max_examples=60, deadline=None, suppress_health_check=HEALTH)
    @given(arrivals())
    def test_every_projection_is_independent_of_arrival_order_and_resends(
            self, case: tuple[list[dict[str, Any]], list[str], list[Arrival]]) -> None:
        self.law(case)


class TestOrderIndependencePostgres(OrderIndependenceContract):
    """The law on PostgreSQL databases (one per fold). Fewer examples: the SQL is the
    SQLite view's (``sql_view``), and each fold costs a CREATE DATABASE."""

    backend = "postgresql"

    @settings(max_examples=30, deadline=None, suppress_health_check=HEALTH)
    @given(arrivals())
    def test_every_projection_is_independent_of_arrival_order_and_resends(
            self, case: tuple[list[dict[str, Any]], list[str], list[Arrival]]) -> None:
        self.law(case)
