"""Shared fixtures: a real ``miam-economies serve`` process on loopback (beside a real
``miam-economies project`` on PostgreSQL), open services, and a fresh PostgreSQL database
per test.

Backends: a test class sets ``backend = "sqlite"`` or ``"postgresql"`` (contract classes
have one subclass per backend, ADR-0031); module-level tests run on SQLite. PostgreSQL
tests never skip: they run against ``MIAM_TEST_POSTGRES``'s server, or, that variable
unset, the machine's at ``postgresql://postgres@127.0.0.1:5432/test`` when it answers and
a throwaway server of the run's own otherwise (``tests/throwaway_postgres.py``,
ADR-0160); without a server at a URL the user gave, they fail.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.services import Services
from miam_economies.api.service.settings import Settings
from tests import throwaway_postgres

# Property tests check laws, never time: no per-example deadline, and no health check
# that fails a test because generating its data was slow on a loaded machine (speed is
# make bench's, ADR-0111). Each test's own @settings still applies over this profile.
hypothesis_settings.register_profile("laws", deadline=None,
                                     suppress_health_check=[HealthCheck.too_slow])
hypothesis_settings.load_profile("laws")

TOKEN = "test-token"
CATCH_UP = 60.0
"""Seconds ``LiveServer.bilan`` lets a projection take to fold what is stored."""
EXAMPLES = Path(__file__).parents[1] / "examples"
EXAMPLE_BATCH: dict[str, Any] = json.loads(
    (EXAMPLES / "contract-batch.json").read_text(encoding="utf-8"))
"""The contract's example batch (``000_*.txt``, "Exemple")."""
EXAMPLE_CORRECTION: dict[str, Any] = json.loads(
    (EXAMPLES / "correction.json").read_text(encoding="utf-8"))["evenements"][0]
"""The README's correction: the main agent edits that delegation's output (490 tokens)."""


POSTGRES = os.environ.get("MIAM_TEST_POSTGRES") or throwaway_postgres.DEFAULT
"""The PostgreSQL database the test databases are created from (and dropped through):
``pytest_configure`` sets it, before any test module imports it."""
THROWAWAY_SERVER = pytest.StashKey[throwaway_postgres.ThrowawayPostgres]()
NO_SERVER = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    """Choose the run's PostgreSQL server once, in the controlling process, starting a
    throwaway one when the machine has none (``throwaway_postgres.choose``); its URL goes
    to ``MIAM_TEST_POSTGRES``, which xdist's workers, started after this, inherit."""
    global POSTGRES
    if hasattr(config, "workerinput"):  # an xdist worker: the controller chose
        return
    try:
        POSTGRES, server = throwaway_postgres.choose(os.environ)
    except RuntimeError as exc:
        # The tests that need no PostgreSQL still run; those that do fail, and the run's
        # header says why.
        config.stash[NO_SERVER] = str(exc)
        return
    if server is not None:
        config.stash[THROWAWAY_SERVER] = server
        os.environ["MIAM_TEST_POSTGRES"] = POSTGRES


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop the throwaway server, if this process started one, and remove its folder."""
    server = config.stash.get(THROWAWAY_SERVER, None)
    if server is not None:
        server.stop()


def pytest_report_header(config: pytest.Config) -> str:
    """Which PostgreSQL server the run uses, and whose."""
    if NO_SERVER in config.stash:
        return f"PostgreSQL: none, its tests will fail: {config.stash[NO_SERVER]}"
    server = config.stash.get(THROWAWAY_SERVER, None)
    if server is None:
        return f"PostgreSQL: {POSTGRES}"
    return f"PostgreSQL: {POSTGRES}, a throwaway server ({server.bindir}, {server.folder})"


@contextmanager
def fresh_postgres() -> Iterator[str]:
    """A new, empty PostgreSQL database for one test (its URL), dropped afterwards, so
    runs never collide. Fails the test, loudly, when the server does not answer."""
    name = f"miam_t_{uuid.uuid4().hex[:12]}"
    try:
        admin = psycopg.connect(POSTGRES, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        pytest.fail(f"PostgreSQL does not answer at {POSTGRES}: {exc}", pytrace=False)
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield POSTGRES.rsplit("/", 1)[0] + "/" + name
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def postgres_count(url: str) -> int:
    """Rows of the event store's table in the PostgreSQL database ``url``."""
    with psycopg.connect(url, autocommit=True) as db:
        row = db.execute("SELECT count(*) FROM economies_events").fetchone()
    assert row is not None
    return int(row[0])


@pytest.fixture
def database_url(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """The test's database URL: None (the SQLite default under the data directory) for
    ``backend = "sqlite"`` and module-level tests, a fresh database for ``"postgresql"``."""
    if getattr(request.cls, "backend", "sqlite") == "sqlite":
        yield None
        return
    with fresh_postgres() as url:
        yield url


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LiveServer:
    """A ``miam-economies serve`` subprocess on 127.0.0.1 over the data directory ``data``.

    ``client`` is an ``httpx.Client`` that sends the bearer token; ``restart()`` stops the
    process (SIGTERM, or SIGKILL with ``kill=True``) and starts a new one on the same data.
    """

    def __init__(self, data: Path, token: str | None = TOKEN,
                 env: dict[str, str] | None = None, database_url: str | None = None,
                 workers: int = 1):
        self.data = data
        self.token = token
        self.database_url = database_url
        self.workers = workers
        self.projector: subprocess.Popen[bytes] | None = None
        self.env = {k: v for k, v in os.environ.items() if k != "MIAM_ECONOMIES_TOKEN"}
        self.env.update({"MIAM_ECONOMIES_TOKEN": token} if token else {})
        if database_url is not None:
            self.env["MIAM_ECONOMIES_DATABASE_URL"] = database_url
        self.env.update(env or {})
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.client = httpx.Client(base_url=self.url, timeout=30)

    def start(self) -> None:
        """Start the process and return once ``/healthz`` answers 200 (at most 20 s)."""
        script = Path(sys.executable).with_name("miam-economies")
        self.log = open(self.data.parent / f"server-{self.port}.log", "ab")  # noqa: SIM115
        self.process = subprocess.Popen(
            [str(script), "serve", "--data", str(self.data), "--port", str(self.port),
             "--workers", str(self.workers)],
            env=self.env, stdout=self.log, stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode}")
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    # Without MIAM_ECONOMIES_TOKEN the server made (or read) its token file.
                    token = self.token or (self.data / "token").read_text().strip()
                    self.client.headers["Authorization"] = f"Bearer {token}"
                    self._start_projector()
                    return
            except httpx.TransportError:
                time.sleep(0.05)  # the process is still starting: nothing to wait on
        raise RuntimeError("server did not answer /healthz within 20 s")

    def _start_projector(self) -> None:
        # On PostgreSQL the server only appends: its projection is another process's.
        if self.database_url is None or self.projector is not None:
            return
        script = Path(sys.executable).with_name("miam-economies")
        self.projector = subprocess.Popen(
            [str(script), "project", "--data", str(self.data)],
            env=self.env, stdout=self.log, stderr=subprocess.STDOUT)

    def cli(self, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        """Run ``miam-economies ARGS --data DATA [--database-url URL]`` and return it."""
        script = Path(sys.executable).with_name("miam-economies")
        where = ["--data", str(self.data)]
        if self.database_url is not None:
            where += ["--database-url", self.database_url]
        return subprocess.run([str(script), *args, *where], check=True,
                              capture_output=True, text=True, **kwargs)

    def stored_count(self) -> int:
        """Events in the store, counted with the backend's own client."""
        if self.database_url is not None:
            return postgres_count(self.database_url)
        import sqlite3

        with sqlite3.connect(self.data / "economies.sqlite") as db:
            return int(db.execute("SELECT count(*) FROM stored_events").fetchone()[0])

    def close(self) -> None:
        """Stop the server and its projector, close the client."""
        self.stop()
        if self.projector is not None:
            self.projector.terminate()
            self.projector.wait(timeout=20)
            self.projector = None
        self.client.close()

    def stop(self, kill: bool = False) -> None:
        """Stop the process: SIGTERM (a clean shutdown), or SIGKILL with ``kill``."""
        if self.process is not None and self.process.poll() is None:
            if kill:
                self.process.kill()
            else:
                self.process.terminate()
            self.process.wait(timeout=20)
        self.process = None
        self.log.close()

    def restart(self, kill: bool = False) -> None:
        """Stop, then start a new process on the same data directory and port."""
        self.stop(kill=kill)
        self.start()

    def post(self, body: Any) -> httpx.Response:
        """POST ``body`` as JSON to /economies with the token."""
        return self.client.post("/economies", json=body)

    def bilan(self) -> dict[str, Any]:
        """The bilan after the projection folded everything stored so far: ``attendre=1``
        (a wait of at most 5 s) asked again for up to ``CATCH_UP`` seconds, so a machine
        loaded by other work (xdist's workers on 2 cores) is no failure; a fold that
        never catches up still is."""
        deadline = time.monotonic() + CATCH_UP
        while True:
            response = self.client.get("/economies/bilan", params={"attendre": "1"})
            response.raise_for_status()
            bilan: dict[str, Any] = response.json()
            if bilan["position"] == bilan["provenance"]["tete"]:
                return bilan
            assert time.monotonic() < deadline, "projection lagging"


@pytest.fixture
def server(tmp_path: Path, database_url: str | None) -> Iterator[LiveServer]:
    """A live server on a fresh data directory under ``tmp_path`` and the test's backend
    (with its ``project`` process on PostgreSQL)."""
    live = LiveServer(tmp_path / "data", database_url=database_url)
    try:
        live.start()
        yield live
    finally:
        live.close()


@pytest.fixture
def settings(tmp_path: Path, database_url: str | None) -> Settings:
    """Settings of a fresh data directory on the test's backend."""
    return Settings(data=tmp_path / "data", token=TOKEN, database_url=database_url)


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    """Open services (store, view, projection) on the test's backend, runner not
    started."""
    with open_services(settings, run_projections=False) as opened:
        yield opened
