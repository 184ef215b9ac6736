"""A projection folded from another store than the one it now stands beside is rebuilt
from this one, saying so (issue 21.1; ADR-0105): the identity of the store's event at the
tracking position is recorded with the position, checked by each fold and at each
opening, and ``conservation.meme_source`` shows a divergence until it is rebuilt. The
other store is as long as the first or longer: the position alone cannot tell them
apart."""

from __future__ import annotations

import logging
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from miam_economies.api.service.answers import bilan_answer
from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.reading import read_bilan
from miam_economies.api.service.settings import Settings
from miam_economies.domain.acceptance import accept_batch
from tests.conftest import TOKEN, fresh_postgres
from tests.corpus import generate

SCRIPT = Path(sys.executable).with_name("miam-economies")
FIRST = generate(40, seed=1)
"""The store the projection was folded from: 40 events."""


def other(n: int) -> list[dict[str, Any]]:
    """Another machine's store: ``n`` events, another client."""
    return [{**e, "client": "autre-machine"} for e in generate(n, seed=2)]


def stored(settings: Settings, events: list[dict[str, Any]]) -> dict[str, Any]:
    """Store ``events`` and fold them; return the bilan."""
    with open_services(settings, run_projections=False) as services:
        for i in range(0, len(events), 500):
            services.store.append(accept_batch({"evenements": events[i:i + 500]}))
        services.runner.catch_up()
        return bilan_answer(services.bilan())


def figures(bilan: dict[str, Any]) -> dict[str, Any]:
    return {k: bilan[k] for k in ("economies", "total", "position")} | {
        "evenements": bilan["provenance"]["evenements"]}


class StoreReplacedContract:
    """One backend's store replaced, row for row, by another's."""

    @pytest.fixture
    def elsewhere(self, tmp_path: Path) -> Iterator[Settings]:
        """Settings of another store on the same backend."""
        raise NotImplementedError

    def replace_rows(self, settings: Settings, source: Settings) -> None:
        """Make ``settings``' event store hold exactly ``source``'s rows."""
        raise NotImplementedError

    @pytest.mark.parametrize("length", [40, 55])  # as long as the first store, longer
    def test_a_store_replaced_under_the_projection_is_seen_then_rebuilt(
            self, settings: Settings, elsewhere: Settings, length: int,
            caplog: pytest.LogCaptureFixture) -> None:
        expected = figures(stored(elsewhere, other(length)))
        with open_services(settings, run_projections=False) as services:
            services.store.append(accept_batch({"evenements": FIRST}))
            services.runner.catch_up()
            assert bilan_answer(services.bilan())["conservation"]["meme_source"] is True
            self.replace_rows(settings, elsewhere)
            seen = bilan_answer(services.bilan())
            assert seen["conservation"]["meme_source"] is False  # before any fold
            assert seen["conservation"]["stockes"] == seen["conservation"]["comptes"]
            with caplog.at_level(logging.WARNING):
                services.runner.catch_up()
            rebuilt = bilan_answer(services.bilan())
        assert "another store" in caplog.text
        assert figures(rebuilt) == expected
        assert rebuilt["conservation"]["meme_source"] is True
        assert "claude-code" not in rebuilt["economies"]

    def test_a_store_replaced_while_nothing_ran_is_rebuilt_at_opening(
            self, settings: Settings, elsewhere: Settings,
            caplog: pytest.LogCaptureFixture) -> None:
        expected = figures(stored(elsewhere, other(40)))
        stored(settings, FIRST)
        self.replace_rows(settings, elsewhere)
        with caplog.at_level(logging.WARNING), \
                open_services(settings, run_projections=False) as services:
            assert services.projection.position() == 0  # reset before any read
        assert "another store" in caplog.text
        assert figures(read_bilan(settings.data, database_url=settings.database_url)) \
            == expected


class TestStoreReplacedSQLite(StoreReplacedContract):
    backend = "sqlite"

    @pytest.fixture
    def elsewhere(self, tmp_path: Path) -> Iterator[Settings]:
        yield Settings(data=tmp_path / "elsewhere", token=TOKEN)

    def replace_rows(self, settings: Settings, source: Settings) -> None:
        with sqlite3.connect(settings.database.path) as db:
            db.execute("ATTACH DATABASE ? AS other", (str(source.database.path),))
            db.execute("DELETE FROM stored_events")
            db.execute("INSERT INTO stored_events (rowid, originator_id, originator_version, "
                       "topic, state) SELECT rowid, originator_id, originator_version, topic, "
                       "state FROM other.stored_events")

    def test_a_restored_store_file_is_rebuilt_and_the_command_says_so(
            self, settings: Settings, elsewhere: Settings) -> None:
        expected = figures(stored(elsewhere, other(55)))
        stored(settings, FIRST)
        for stale in settings.data.glob("economies.sqlite*"):
            stale.unlink()
        shutil.copy(elsewhere.database.path, settings.database.path)  # a backup restored
        answer = subprocess.run([str(SCRIPT), "bilan", "--data", str(settings.data)],
                                capture_output=True, text=True)
        assert answer.returncode == 0, answer.stderr
        assert "another store" in answer.stderr and "rebuil" in answer.stderr
        assert "autre-machine" in answer.stdout and "claude-code" not in answer.stdout
        assert figures(read_bilan(settings.data)) == expected


class TestStoreReplacedPostgres(StoreReplacedContract):
    backend = "postgresql"

    @pytest.fixture
    def elsewhere(self, tmp_path: Path) -> Iterator[Settings]:
        with fresh_postgres() as url:
            yield Settings(data=tmp_path / "elsewhere", token=TOKEN, database_url=url)

    def replace_rows(self, settings: Settings, source: Settings) -> None:
        assert settings.database_url is not None and source.database_url is not None
        columns = "notification_id, originator_id, originator_version, topic, state"
        with psycopg.connect(source.database_url) as db:
            rows = db.execute(f"SELECT {columns} FROM economies_events").fetchall()
        with psycopg.connect(settings.database_url) as db:  # one transaction: a restore
            db.execute("DELETE FROM economies_events")
            with db.cursor() as cursor:
                cursor.executemany(f"INSERT INTO economies_events ({columns}) "
                                   "VALUES (%s, %s, %s, %s, %s)", rows)
