"""A reader whose projections are locked by another process answers within its lock
timeout (issue 21.3; ADR-0104): with the view's write lock held, MIAM's read functions
and the ``bilan``, ``classement`` and ``rapport`` commands give the snapshot as it stands,
marked ``attente_expiree``, never a traceback; a command that cannot even read exits with
one line. The lock is held by another connection (another process for the commands)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.reading import read_bilan, read_classement
from miam_economies.api.service.settings import Settings
from miam_economies.domain.acceptance import accept_batch
from miam_economies.projections.postgres_view import WRITE_LOCK
from tests.conftest import EXAMPLE_BATCH

SCRIPT = Path(sys.executable).with_name("miam-economies")


def pending(settings: Settings) -> None:
    """A store of two events that the projection has not folded yet."""
    with open_services(settings, run_projections=False) as services:
        services.store.append(accept_batch(EXAMPLE_BATCH))


class LockedProjectionsContract:
    """Readers of one backend's view while another connection holds its locks."""

    @contextmanager
    def write_locked(self, settings: Settings) -> Iterator[None]:
        """The view's write lock held by another connection for the block."""
        raise NotImplementedError

    @contextmanager
    def read_locked(self, settings: Settings) -> Iterator[None]:
        """The view locked against reads too for the block."""
        raise NotImplementedError

    def command(self, settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "MIAM_ECONOMIES_LOCK_TIMEOUT": "1"}
        where = ["--data", str(settings.data)]
        if settings.database_url is not None:
            where += ["--database-url", settings.database_url]
        return subprocess.run([str(SCRIPT), *args, *where], env=env, capture_output=True,
                              text=True, timeout=120)

    def test_miams_reads_give_the_snapshot_as_it_stands(self, settings: Settings) -> None:
        pending(settings)
        where = {"database_url": settings.database_url, "lock_timeout": 1}
        with self.write_locked(settings):
            bilan = read_bilan(settings.data, **where)  # type: ignore[arg-type]
            ranked = read_classement(settings.data, par="client", **where)  # type: ignore[arg-type]
        assert bilan["provenance"]["attente_expiree"] is True
        assert (bilan["position"], bilan["provenance"]["tete"]) == (0, 2)
        assert bilan["conservation"]["stockes"] == bilan["conservation"]["comptes"] == 0
        assert ranked["attente_expiree"] is True and ranked["position"] == 0
        # Once the lock is gone, the next read folds everything.
        assert read_bilan(settings.data, database_url=settings.database_url)["position"] == 2

    def test_the_commands_answer_as_it_stands_without_a_traceback(
            self, settings: Settings, tmp_path: Path) -> None:
        pending(settings)
        with self.write_locked(settings):
            answers = [self.command(settings, "bilan", "--json"),
                       self.command(settings, "classement", "--par", "client"),
                       self.command(settings, "rapport", "--html",
                                    str(tmp_path / "rapport.html"))]
        for answer in answers:
            assert answer.returncode == 0, answer.stderr
            assert "Traceback" not in answer.stderr
            assert "locked" in answer.stderr
        assert '"attente_expiree": true' in answers[0].stdout
        assert (tmp_path / "rapport.html").stat().st_size > 0

    def test_a_command_that_cannot_read_exits_with_one_line(self, settings: Settings) -> None:
        pending(settings)
        with self.read_locked(settings):
            answer = self.command(settings, "bilan")
        assert answer.returncode == 1
        assert answer.stderr.count("\n") == 1 and answer.stderr.startswith("Error: ")


class TestLockedProjectionsSQLite(LockedProjectionsContract):
    backend = "sqlite"

    @contextmanager
    def write_locked(self, settings: Settings) -> Iterator[None]:
        db = sqlite3.connect(settings.projections_path, isolation_level=None)
        try:
            db.execute("BEGIN IMMEDIATE")
            yield
        finally:
            db.close()

    @contextmanager
    def read_locked(self, settings: Settings) -> Iterator[None]:
        db = sqlite3.connect(settings.projections_path, isolation_level=None)
        try:
            # In WAL mode an exclusive locking mode keeps every other connection out.
            db.execute("PRAGMA locking_mode=EXCLUSIVE")
            db.execute("BEGIN EXCLUSIVE")
            db.execute("COMMIT")
            yield
        finally:
            db.close()


class TestLockedProjectionsPostgres(LockedProjectionsContract):
    backend = "postgresql"

    @contextmanager
    def write_locked(self, settings: Settings) -> Iterator[None]:
        assert settings.database_url is not None
        with psycopg.connect(settings.database_url) as db:
            db.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
            yield
            db.rollback()

    @contextmanager
    def read_locked(self, settings: Settings) -> Iterator[None]:
        assert settings.database_url is not None
        with psycopg.connect(settings.database_url) as db:
            db.execute("LOCK TABLE bilan_clients IN ACCESS EXCLUSIVE MODE")
            yield
            db.rollback()
