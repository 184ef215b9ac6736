"""A replay builds the view the live fold builds, table by table (issue 35: "make test
proves the new replay equal to the old fold on every table").

On any history drawn as the order law draws it (``test_order_independence.arrivals``:
events shuffled, re-sent and batched, MIAM's journal lines appended at any moment), the
serving projection folded live, page by page and line by line as the server's runner
folds them, and the same projection built by ``replay`` from the first event of a store
holding the same events (pages of 50,000, its groups deferred to one rebuild at its end:
ADR-0062, ADR-0179), hold the same rows in every table of the view, on SQLite files and
on PostgreSQL. Apart: the bookkeeping that says when or from which store, not what
(``APART``); the links, as ``en_attente`` reads them (``READ_AS``).
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings

from miam_economies.api.service.bootstrap import open_services, open_view
from miam_economies.api.service.replay import replay
from miam_economies.api.service.settings import Settings
from miam_economies.domain.acceptance import accept_batch
from miam_economies.projections.sql_schema import view_tables
from tests.conftest import TOKEN, fresh_postgres
from tests.property.test_order_independence import Arrival, arrivals, play

TABLES = sorted({m.group(1) for statement in view_tables("TEXT", "INTEGER", "", "BOOLEAN", "")
                 if (m := re.match(r"CREATE TABLE IF NOT EXISTS (\w+)", statement))})
"""Every table of the view, as ``sql_schema`` declares them."""

APART = {"bilan_sources": "the store's identity at the position (ADR-0105): of each store",
         "journal_suivi": "how far the journal was read, in bytes, and when",
         "bilan_formules": "the user formulas' registry: none here"}
"""Tables left out, and why: what they hold differs by design between two stores."""

READ_AS = {"bilan_liens": (
    "SELECT l.* FROM bilan_liens AS l JOIN bilan_demandes AS d ON d.projection = "
    "l.projection AND d.demande_id = l.demande_id AND d.client = l.client "
    "WHERE d.delegations = 0")}
"""Tables compared through what reads them. The links serve only ``en_attente``, which
counts those of the demandes without a delegation: a page holding a demande's delegation
writes none of its links, so which other links are kept depends on how the events fell
into pages (``sql_demandes.DemandesWriter.fold``)."""

HEALTH = [HealthCheck.too_slow, HealthCheck.differing_executors]


@contextmanager
def two_stores(backend: str) -> Iterator[tuple[Settings, Settings]]:
    """Settings of two fresh data directories (and databases), removed afterwards."""
    urls = ((fresh_postgres(), fresh_postgres()) if backend == "postgresql"
            else (nullcontext(None), nullcontext(None)))
    with tempfile.TemporaryDirectory() as tmp, urls[0] as one, urls[1] as two:
        yield tuple(Settings(data=Path(tmp) / name, token=TOKEN, fuseau="Europe/Paris",
                             database_url=url)
                    for name, url in (("live", one), ("replayed", two)))  # type: ignore[misc]


def folded_live(settings_: Settings, plan: list[Arrival]) -> None:
    """Play ``plan`` as the server would: appends, journal lines, pages folded at the
    plan's moments by the serving projection's runner (pages of 500), then caught up."""
    with open_services(settings_, run_projections=False) as services:
        play(services, plan)


def replayed(settings_: Settings, plan: list[Arrival]) -> None:
    """Store ``plan``'s batches in the same order with nothing folded and write its
    journal, then replay the serving projection from its first event (the bench's case:
    a restored store)."""
    with open_services(settings_, run_projections=False) as services:
        for kind, item, _ in plan:
            if kind == "batch":
                services.store.append(accept_batch({"evenements": item}))
    settings_.journal_path.write_text("".join(item + "\n" for kind, item, _ in plan
                                              if kind == "journal"))
    replay(settings_, "v1")


def rows(settings_: Settings) -> dict[str, list[tuple[Any, ...]]]:
    """Every table of the view but ``APART``, its rows sorted."""
    view, datastore = open_view(settings_.database, settings_.lock_timeout, create=False)
    try:
        with datastore.transaction(commit=False) as c:
            out = {}
            for table in TABLES:
                if table in APART:
                    continue
                c.execute(READ_AS.get(table, f"SELECT * FROM {table}"))
                out[table] = sorted((tuple(row) for row in c.fetchall()), key=repr)
            return out
    finally:
        datastore.close()


class ReplayTablesContract:
    """The law, whatever the backend (one subclass each, with its number of examples)."""

    backend = "sqlite"

    def law(self, case: tuple[list[dict[str, Any]], list[str], list[Arrival]]) -> None:
        """One drawn case: the live fold's tables are the replay's."""
        _, _, plan = case
        with two_stores(self.backend) as (live, built):
            folded_live(live, plan)
            replayed(built, plan)
            expected, got = rows(live), rows(built)
        assert expected.keys() == got.keys() and expected["bilan_demandes"]
        for table in expected:
            assert got[table] == expected[table], table


class TestReplayTablesSQLite(ReplayTablesContract):
    """The law on SQLite files."""

    backend = "sqlite"

    @settings(max_examples=40, deadline=None, suppress_health_check=HEALTH)
    @given(arrivals())
    def test_a_replay_builds_every_table_the_live_fold_builds(
            self, case: tuple[list[dict[str, Any]], list[str], list[Arrival]]) -> None:
        self.law(case)


class TestReplayTablesPostgres(ReplayTablesContract):
    """The law on PostgreSQL databases (two per example: fewer examples)."""

    backend = "postgresql"

    @settings(max_examples=15, deadline=None, suppress_health_check=HEALTH)
    @given(arrivals())
    def test_a_replay_builds_every_table_the_live_fold_builds(
            self, case: tuple[list[dict[str, Any]], list[str], list[Arrival]]) -> None:
        self.law(case)


def test_the_tables_compared_are_the_views() -> None:
    # Every table sql_schema declares is compared or set apart with a reason.
    assert {"bilan_demandes", "bilan_groupes", "bilan_sessions", "bilan_echantillons",
            "journal_valeurs"} <= set(TABLES)
    assert set(APART) | set(READ_AS) <= set(TABLES)

