"""A PostgreSQL database that cannot hold UTF-8 is refused at open, by every command and
by ``open_economies``, in one line naming its encoding and how to create a UTF8 one, with
nothing created in it; a client encoding other than UTF8 is never used (issue 34.3;
ADR-0153). A store opened read-only is not refused: ``export`` moves the events an earlier
release stored there to a UTF8 database, as the refusal says.

Against 7093df9: on a LATIN1 database ``t-café-日本-😀`` was accepted (200), then every
fold failed with ``UnicodeEncodeError`` and nothing posted after it was counted; on a
SQL_ASCII database ``serve`` ended with "operator does not exist: text = bytea"."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import psycopg
import pytest
from starlette.applications import Starlette

from miam_economies import Settings, economies_routes, open_economies
from miam_economies.api.service.answers import bilan_answer
from miam_economies.api.service.bootstrap import open_services, open_store
from miam_economies.api.store.application import EventStore
from miam_economies.api.store.backends import Database
from miam_economies.api.store.postgres_connections import DatabaseNotUtf8
from miam_economies.domain.acceptance import accept_batch
from tests.conftest import EXAMPLE_BATCH, POSTGRES, TOKEN, fresh_postgres

SCRIPT = Path(sys.executable).with_name("miam-economies")
CLIENT = "t-café-日本-😀"


@contextmanager
def encoded(encoding: str) -> Iterator[str]:
    """A new PostgreSQL database of ``encoding`` (its URL), dropped afterwards."""
    name = f"miam_t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES, autocommit=True, connect_timeout=5) as admin:
        admin.execute(f"CREATE DATABASE \"{name}\" ENCODING '{encoding}' TEMPLATE template0 "
                      "LC_COLLATE 'C' LC_CTYPE 'C'")
        try:
            yield POSTGRES.rsplit("/", 1)[0] + "/" + name
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def tables(url: str) -> int:
    """Tables in the public schema of the database ``url``."""
    with psycopg.connect(url) as db:
        row = db.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
                         ).fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.parametrize("encoding", ["LATIN1", "SQL_ASCII"])
def test_a_database_not_utf8_is_refused_by_commands_and_hosts(tmp_path: Path,
                                                               encoding: str) -> None:
    with encoded(encoding) as url:
        name = url.rsplit("/", 1)[1]
        env = {**os.environ, "MIAM_ECONOMIES_TOKEN": TOKEN,
               "MIAM_ECONOMIES_DATABASE_URL": url}
        for command in (["serve", "--port", "0"], ["project"], ["bilan"]):
            run = subprocess.run([str(SCRIPT), *command, "--data", str(tmp_path / "data")],
                                 env=env, capture_output=True, text=True, timeout=60)
            assert run.returncode == 1, (command, run.stderr)
            refusal = run.stderr.splitlines()[-1]
            assert "Traceback" not in run.stderr, run.stderr
            assert refusal.startswith(f"Error: the PostgreSQL database {name} has encoding "
                                      f"{encoding}"), run.stderr
            assert "ENCODING 'UTF8' TEMPLATE template0" in refusal
        settings = Settings(data=tmp_path / "host", database_url=url)
        app = Starlette(routes=economies_routes(auth=TOKEN))

        async def host_starts() -> None:
            async with open_economies(settings, app):
                pass

        with pytest.raises(DatabaseNotUtf8, match=encoding):
            asyncio.run(host_starts())
        with pytest.raises(DatabaseNotUtf8):
            open_store(settings.database)
        assert tables(url) == 0  # refused before anything was created


def test_the_events_of_a_latin1_database_move_as_the_refusal_says(tmp_path: Path) -> None:
    # Stored by an earlier release (the library's own store, unchecked): export reads
    # them (a read-only store is not refused: events are bytes), import takes them.
    batch = {"evenements": [{**event, "client": CLIENT} for event in EXAMPLE_BATCH["evenements"]]}
    with encoded("LATIN1") as old, fresh_postgres() as new:
        with closing(EventStore(Database.parse(old).store_env())) as earlier:
            earlier.append(accept_batch(batch))
        exported = tmp_path / "economies.jsonl"
        for args in (["export", "--database-url", old, "--out", str(exported)],
                     ["import", "--database-url", new, str(exported)],
                     ["bilan", "--database-url", new, "--json"]):
            run = subprocess.run([str(SCRIPT), *args, "--data", str(tmp_path / "data")],
                                 capture_output=True, text=True, timeout=60, check=True)
        assert json.loads(run.stdout)["economies"][CLIENT]["evites"] == 4900


def test_another_client_encoding_asked_by_the_environment_is_not_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # libpq takes PGCLIENTENCODING; a LATIN1 connection could not send the client's name
    # (UnicodeEncodeError in the fold, as on a LATIN1 database).
    monkeypatch.setenv("PGCLIENTENCODING", "LATIN1")
    batch = {"evenements": [{**event, "client": CLIENT} for event in EXAMPLE_BATCH["evenements"]]}
    with fresh_postgres() as url:
        settings = Settings(data=tmp_path / "data", database_url=url)
        with open_services(settings, run_projections=False) as services:
            assert services.store.append(accept_batch(batch)).recus == 2
            services.runner.catch_up()
            assert bilan_answer(services.bilan())["economies"][CLIENT]["evites"] == 4900
