"""``serve`` on SQLite folds the bilan in a child ``project`` process (ADR-0115): the child
dies with the server, is started again when it dies alone (``/healthz`` saying so
meanwhile), and defers to the server's POSTs through the shared pacing file. A real
``serve`` subprocess, real files, real signals."""

from __future__ import annotations

import copy
import os
import signal
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from miam_economies.api.service.bootstrap import open_services, open_store
from miam_economies.api.service.pacing import PACING_FILE, SharedPacing
from miam_economies.api.service.settings import Settings
from miam_economies.domain.acceptance import accept_batch
from miam_economies.projections import runner as runner_module
from miam_economies.projections.runner import LOOK_BUSY, LOOK_QUIET, QUIET_AFTER, look_interval
from tests.conftest import EXAMPLE_BATCH, TOKEN, LiveServer


def children(pid: int) -> list[int]:
    """The pids of ``pid``'s live children (``/proc``)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(x) for x in (task / "children").read_text().split()]
    return found


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def until(condition: object, seconds: float) -> bool:
    """Whether ``condition()`` became true within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    """A started ``serve`` on SQLite (its projector started by itself)."""
    live = LiveServer(tmp_path / "data")
    live.start()
    yield live
    live.close()


def projector_of(server: LiveServer) -> int:
    """The pid of the server's projector (its one child), waited for up to 10 s."""
    assert server.process is not None
    assert until(lambda: len(children(server.process.pid)) == 1, 10)  # type: ignore[union-attr]
    return children(server.process.pid)[0]


def test_the_bilan_is_folded_by_a_child_process_not_by_the_server(
        server: LiveServer) -> None:
    child = projector_of(server)
    assert b"project" in Path(f"/proc/{child}/cmdline").read_bytes()
    assert server.post(EXAMPLE_BATCH).json()["recus"] == 2
    assert server.bilan()["provenance"]["evenements"] == 2
    # The server itself runs no runner thread.
    assert server.process is not None
    names = {(t / "comm").read_text().strip()
             for t in Path(f"/proc/{server.process.pid}/task").iterdir()}
    assert not any(name.startswith("projection") for name in names), names


def test_the_projector_exits_when_the_server_is_killed(server: LiveServer) -> None:
    child = projector_of(server)
    server.stop(kill=True)
    assert until(lambda: not alive(child), 5), "the projector outlived its server"


def test_a_projector_that_dies_is_started_again_and_healthz_says_so_meanwhile(
        server: LiveServer) -> None:
    child = projector_of(server)
    os.kill(child, signal.SIGKILL)
    assert until(lambda: server.client.get("/healthz").status_code == 503, 5)
    batch = copy.deepcopy(EXAMPLE_BATCH)
    assert server.post(batch).json()["recus"] == 2  # ingest never depends on the fold
    assert until(lambda: server.client.get("/healthz").status_code == 200, 15)
    assert projector_of(server) != child
    assert server.bilan()["provenance"]["evenements"] == 2


def test_the_projector_runs_the_servers_package_whatever_the_working_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A serve started from a folder holding another miam_economies (a checkout of another
    # release) must not fold with it: its child imports the server's own package.
    decoy = tmp_path / "elsewhere" / "miam_economies"
    decoy.mkdir(parents=True)
    (decoy / "__init__.py").write_text('raise ImportError("the working directory\'s")\n')
    monkeypatch.chdir(decoy.parent)
    live = LiveServer(tmp_path / "data")
    live.start()
    try:
        assert live.post(EXAMPLE_BATCH).json()["recus"] == 2
        assert live.bilan()["provenance"]["evenements"] == 2
        assert live.client.get("/healthz").status_code == 200
    finally:
        live.close()


def test_serve_projection_thread_folds_in_the_server(tmp_path: Path) -> None:
    live = LiveServer(tmp_path / "data", env={"MIAM_ECONOMIES_PROJECTION": "thread"})
    live.start()
    try:
        assert live.process is not None
        time.sleep(1)
        assert children(live.process.pid) == []
        assert live.post(EXAMPLE_BATCH).json()["recus"] == 2
        assert live.bilan()["provenance"]["evenements"] == 2
    finally:
        live.close()


def test_a_runner_defers_to_another_processs_ingestion_through_the_pacing_file(
        tmp_path: Path) -> None:
    # Two mappings of one file, as the server's and the projector's: what one marks,
    # the other's runner obeys (ADR-0115).
    settings = Settings(data=tmp_path / "data", token=TOKEN, fuseau="UTC")
    with open_services(settings, run_projections=False) as services:
        server_side = SharedPacing(settings.data / PACING_FILE)
        runner = services.runner
        services.pacing.fold_for_other_processes()
        # The deferral's bound (1 s) is not what is tested here: on a loaded machine the
        # checks below can take longer than it, and the runner would rightly fold.
        services.pacing.max_defer = 600.0
        # Marked before the runner starts: its first look at the signal sees it (marked
        # after, a runner started late could fold the batch before ever seeing it).
        server_side.begin_ingest()
        runner.start()
        try:
            services.store.append(accept_batch(copy.deepcopy(EXAMPLE_BATCH)))
            server_side.appended()
            assert until(lambda: services.pacing.deferring_since is not None, 5)
            time.sleep(0.3)
            assert services.projection.position() == 0  # deferred: ingestion first
            server_side.end_ingest()
            assert until(lambda: services.projection.position() == 2, 5)
        finally:
            server_side.close()
    assert (settings.data / PACING_FILE).stat().st_mode & 0o777 == 0o600


def test_an_idle_runner_looks_less_often_for_other_processes_appends_yet_folds_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # ADR-0184: every 10 ms within QUIET_AFTER of its last page (or of its start), every
    # 100 ms after; an append of another process, seen only through the pacing's count,
    # is still folded at the next look.
    assert look_interval(0.0) == LOOK_BUSY and look_interval(QUIET_AFTER) == LOOK_QUIET
    monkeypatch.setattr(runner_module, "QUIET_AFTER", 0.5)
    settings = Settings(data=tmp_path / "data", token=TOKEN, fuseau="UTC")
    with open_services(settings, run_projections=False) as services, \
            closing(open_store(settings.database)) as elsewhere:
        server_side = SharedPacing(settings.data / PACING_FILE)
        services.pacing.fold_for_other_processes()
        runner = services.runner
        runner.poll_interval = 60.0  # only the pacing's count can wake it in time
        looks: list[float] = []
        appends_elsewhere = services.pacing.appends_elsewhere

        def counted() -> int | None:
            looks.append(time.monotonic())
            return appends_elsewhere()

        monkeypatch.setattr(services.pacing, "appends_elsewhere", counted)
        started = time.monotonic()
        runner.start()
        try:
            time.sleep(1.8)
            busy = [t for t in looks if t < started + 0.4]
            quiet = [t for t in looks if t > started + 0.9]
            gaps = sorted(b - a for a, b in zip(quiet, quiet[1:], strict=False))
            assert len(busy) >= 5, busy  # 10 ms apart: about 40 unless very loaded
            assert len(quiet) >= 3 and gaps[len(gaps) // 2] >= 0.05, gaps
            # Another process's append: its store has no listener to wake this runner.
            elsewhere.append(accept_batch(copy.deepcopy(EXAMPLE_BATCH)))
            server_side.appended()
            assert until(lambda: services.projection.position() == 2, 3)
        finally:
            runner.stop()
            server_side.close()


def test_a_server_starting_clears_what_a_killed_one_left_in_the_pacing_file(
        tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    left = SharedPacing(data / PACING_FILE)
    left.begin_ingest()  # as a server killed in the middle of a POST leaves it
    left.begin_wait()
    left.set_failing(True)
    live = LiveServer(data)
    live.start()
    try:
        ingesting, _, waiting, _ = left.state()
        assert (ingesting, waiting, left.failing()) == (0, 0, False)
    finally:
        live.close()
        left.close()
