"""``serve``'s projector: the projection folded by a child process on SQLite (ADR-0115).

In one interpreter the fold competes with the POSTs for the GIL and a core: under
sustained ingest it doubled the server's CPU per 500-event POST (issue 22). ``serve``
therefore starts ``miam-economies project`` on the same data directory as a child
process, and watches it:

* the child exits when its parent does (``--parent-pid``: it looks every half second),
  so a server killed with ``kill -9`` leaves no projector folding behind it;
* a child that exits while the server runs is started again after a pause (1 s, doubling
  to 30 s), and meanwhile ``/healthz`` answers 503 (the shared pacing's failing flag);
* ingestion first holds across the two processes through ``api.service.pacing``, and
  the child runs at a lower priority (``PROJECTOR_NICENESS``).

MIAM's embedded use keeps the in-process thread (``Settings.fold_in_thread``): a library
inside someone else's host starts no process of its own, and the plugin's 10-event POSTs
give the fold no sustained load to compete with.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from miam_economies.api.service.pacing import PACING_FILE, SharedPacing
from miam_economies.api.service.settings import Settings

log = logging.getLogger(__name__)

RESTART_DELAY = 1.0
"""Seconds before a projector that exited is started again (doubling to 30 s)."""

PROJECTOR_NICENESS = 10
"""Added to the child's niceness: under sustained ingest the scheduler gives the POSTs'
process the CPU first, and the fold what is left (it catches up once the POSTs stop)."""

_CHILD = "from miam_economies.api.cli import main; main(prog_name='miam-economies')"


def projector_command(settings: Settings) -> list[str]:
    """The child's command line: ``project`` on ``settings``' data directory, database,
    zone and journal, told this process's pid to exit with it. ``-P``: the working
    directory is not put first on the child's ``sys.path`` (``-c`` would), so a
    ``miam_economies`` folder there (another checkout, another release) cannot stand in
    for the package this process runs."""
    command = [sys.executable, "-P", "-c", _CHILD, "project", "--data", str(settings.data),
               "--parent-pid", str(os.getpid())]
    if settings.database_url is not None:
        command += ["--database-url", settings.database_url]
    if settings.fuseau is not None:
        command += ["--fuseau", settings.fuseau]
    if settings.journal is not None:
        command += ["--journal", str(settings.journal)]
    return command


class Projector:
    """The child ``project`` process of a ``serve`` on SQLite, kept running until
    ``stop``. ``settings``: the server's (its ``data`` holds the shared pacing file).
    ``start`` raises ``OSError`` when the process cannot be spawned."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.command = projector_command(settings)
        self.process: subprocess.Popen[bytes] | None = None
        self._stopping = threading.Event()
        self._watch: threading.Thread | None = None

    def start(self) -> None:
        """Spawn the child, and a daemon thread that restarts it when it exits. The
        shared pacing is reset first: a server killed mid-POST left it raised."""
        self._pacing(lambda pacing: pacing.reset())
        self.process = subprocess.Popen(self.command, stdin=subprocess.DEVNULL)
        self._watch = threading.Thread(target=self._watching, name="projector-watch",
                                       daemon=True)
        self._watch.start()

    def _watching(self) -> None:
        delay = RESTART_DELAY
        while not self._stopping.is_set():
            process = self.process
            assert process is not None
            code = process.wait()
            if self._stopping.is_set():
                return
            log.warning("the projector process exited (status %s); starting it again "
                        "in %.0f s", code, delay)
            self._failing(True)
            if self._stopping.wait(delay):
                return
            delay = min(delay * 2, 30.0)
            try:
                self.process = subprocess.Popen(self.command, stdin=subprocess.DEVNULL)
            except OSError as exc:
                log.error("the projector process could not be started: %s", exc)

    def _failing(self, failing: bool) -> None:
        # The restarted child clears it after its first good page.
        self._pacing(lambda pacing: pacing.set_failing(failing))

    def _pacing(self, change: Callable[[SharedPacing], None]) -> None:
        path = self.settings.database.path
        if path is None:
            return
        pacing = SharedPacing(Path(path).with_name(PACING_FILE))
        try:
            change(pacing)
        finally:
            pacing.close()

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM the child and wait up to ``timeout`` seconds (then SIGKILL): it stops
        after its current page, whose transaction is whole or not at all (ADR-0007)."""
        self._stopping.set()
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
