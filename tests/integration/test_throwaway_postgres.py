"""Issue 32.5: ``make test`` passes on a machine with no PostgreSQL server running. When
nothing answers at the default address and ``MIAM_TEST_POSTGRES`` is unset, the suite starts
a throwaway server for the run and stops it after; a URL the user gives is used as given
(``tests/throwaway_postgres.py``, ADR-0160).

The machine's own server is never stopped here (others use it): "nothing answers at the
default address" is a default address on a port where nothing listens, and the whole run is
a nested pytest with ``MIAM_TEST_POSTGRES=throwaway``."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests import conftest, throwaway_postgres
from tests.conftest import _free_port, fresh_postgres

ROOT = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def nothing_at_the_default() -> Iterator[tuple[str, str, throwaway_postgres.ThrowawayPostgres]]:
    """``choose`` with the environment unset and nothing at the default address: (the
    default, the URL chosen, the throwaway server), stopped at the end."""
    default = f"postgresql://postgres@127.0.0.1:{_free_port()}/test"
    assert not throwaway_postgres.answers(default)
    url, server = throwaway_postgres.choose({}, default=default)
    assert server is not None
    try:
        yield default, url, server
    finally:
        server.stop()


def test_nothing_at_the_default_address_starts_a_throwaway_server(
        nothing_at_the_default: tuple[str, str, throwaway_postgres.ThrowawayPostgres]) -> None:
    default, url, server = nothing_at_the_default
    assert url != default and url.endswith("/test") and server.url == url
    assert server.bindir == throwaway_postgres.find_bindir()
    with psycopg.connect(url, autocommit=True) as db:  # trust auth, user postgres
        assert db.execute("SHOW server_encoding").fetchone() == ("UTF8",)  # ADR-0153
        db.execute("CREATE DATABASE miam_t_throwaway")  # as fresh_postgres does
        db.execute("DROP DATABASE miam_t_throwaway")


def test_a_server_at_the_default_address_is_used_and_nothing_started(
        nothing_at_the_default: tuple[str, str, throwaway_postgres.ThrowawayPostgres]) -> None:
    _, running, _ = nothing_at_the_default
    assert throwaway_postgres.choose({}, default=running) == (running, None)
    assert throwaway_postgres.choose({"MIAM_TEST_POSTGRES": ""}, default=running) == (
        running, None)


def test_a_url_the_user_gives_is_used_as_given_even_when_nothing_answers() -> None:
    dead = f"postgresql://postgres@127.0.0.1:{_free_port()}/test"
    assert throwaway_postgres.choose({"MIAM_TEST_POSTGRES": dead}) == (dead, None)


def test_throwaway_starts_one_whatever_answers_and_stop_removes_it(
        nothing_at_the_default: tuple[str, str, throwaway_postgres.ThrowawayPostgres]) -> None:
    _, running, _ = nothing_at_the_default
    url, server = throwaway_postgres.choose({"MIAM_TEST_POSTGRES": "throwaway"},
                                            default=running)
    assert server is not None and url != running
    folder = server.folder
    assert folder is not None and folder.name.startswith("miam-throwaway-pg-")
    assert throwaway_postgres.answers(url)
    server.stop()
    assert not throwaway_postgres.answers(url) and not folder.exists()
    assert throwaway_postgres.answers(running)  # the other one is not touched
    server.stop()  # twice is harmless


def test_no_binaries_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(throwaway_postgres, "find_bindir", lambda: None)
    dead = f"postgresql://postgres@127.0.0.1:{_free_port()}/test"
    with pytest.raises(RuntimeError, match="no PostgreSQL server answers at .* pgserver .*"
                       "set MIAM_TEST_POSTGRES"):
        throwaway_postgres.choose({}, default=dead)


def test_a_server_that_does_not_start_leaves_nothing_behind(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = tmp_path / "tmp"
    made.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(made))
    server = throwaway_postgres.ThrowawayPostgres(tmp_path / "no-binaries-here")
    with pytest.raises(OSError):
        server.start()
    assert list(made.iterdir()) == [] and server.folder is None


def test_the_pgserver_wheels_binaries_run_a_throwaway_server() -> None:
    # The fallback of a machine without PostgreSQL: the test extra's pgserver, where it
    # has wheels (its marker in pyproject.toml).
    bindir = throwaway_postgres.pgserver_bindir()
    if bindir is None:
        pytest.skip("pgserver has no wheel for this platform or Python (pyproject.toml)")
    server = throwaway_postgres.ThrowawayPostgres(bindir)
    try:
        with psycopg.connect(server.start(), autocommit=True) as db:
            assert db.execute("SHOW server_encoding").fetchone() == ("UTF8",)
    finally:
        server.stop()


def test_binaries_the_servers_user_cannot_reach_are_copied_for_it(tmp_path: Path) -> None:
    # Root's fresh clone in a folder of mode 0700 (mktemp -d, as the newcomer check's):
    # the server runs as postgres, which cannot execute pgserver's binaries there.
    bindir = throwaway_postgres.pgserver_bindir()
    if bindir is None or os.geteuid() != 0:
        pytest.skip("needs pgserver's wheel and root (the server then runs as postgres)")
    site = bindir.parents[2]
    hidden = tmp_path / "hidden"
    hidden.mkdir(mode=0o700)
    shutil.copytree(site / "pgserver", hidden / "pgserver", symlinks=True)
    shutil.copytree(site / "pgserver.libs", hidden / "pgserver.libs", symlinks=True)
    server = throwaway_postgres.ThrowawayPostgres(hidden / bindir.relative_to(site))
    try:
        with psycopg.connect(server.start(), autocommit=True) as db:
            assert db.execute("SHOW server_encoding").fetchone() == ("UTF8",)
    finally:
        server.stop()


def test_the_suites_databases_come_from_the_runs_server() -> None:
    # Run by the nested pytest below too, in an xdist worker: the controller's choice
    # reached it through the environment.
    if os.environ.get("MIAM_TEST_POSTGRES"):
        assert os.environ["MIAM_TEST_POSTGRES"] == conftest.POSTGRES
    with fresh_postgres() as url, psycopg.connect(url) as db:
        assert db.execute("SELECT 1").fetchone() == (1,)


def test_a_run_with_a_throwaway_server_stops_it_after(tmp_path: Path) -> None:
    env = {**os.environ, "MIAM_TEST_POSTGRES": "throwaway"}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "-p", "no:cacheprovider",
         f"{Path(__file__).relative_to(ROOT)}::"
         "test_the_suites_databases_come_from_the_runs_server"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    said = run.stdout + run.stderr
    assert run.returncode == 0, said
    assert "1 passed" in said, said
    header = re.search(r"^PostgreSQL: (\S+), a throwaway server \((.+), (.+)\)$", said,
                       re.MULTILINE)
    assert header is not None, said
    url, folder = header.group(1), Path(header.group(3))
    assert not throwaway_postgres.answers(url)
    assert not folder.exists()
