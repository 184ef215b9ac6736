"""The bench's servers and corpus: a real ``miam-economies serve``, the naive design or
the bare append, in a subprocess on loopback; its clients, and the generated batches they
post."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench import proc
from tests.conftest import TOKEN, _free_port
from tests.corpus import generate

BATCH = 500
"""Events per POST in the ingest sections: the plugin's largest batch (ATTENTE_MAX)."""

ROOT = Path(__file__).resolve().parents[1]
"""This checkout's root: where ``python -m bench.<kind>`` finds the bench package."""

OURS_BIN = Path(sys.executable).parent
"""The ``bin`` directory whose ``miam-economies`` (and ``python``, for the replay) the bench
runs as "ours": this venv's, or another checkout's (``make bench`` ``--ours-bin``: the same
bench against an earlier commit, for a before/after measured side by side)."""


# --- Corpus -------------------------------------------------------------------------------


def corpus(size: int, seed: int) -> list[dict[str, Any]]:
    """``size`` generated events (``tests.corpus``: the three types, realistic mix)."""
    return generate(size, seed=seed)[:size]


def bodies(events: list[dict[str, Any]]) -> list[bytes]:
    """500-event POST bodies, encoded as the plugin's ``JSON.stringify`` does (UTF-8,
    non-ASCII unescaped, no spaces)."""
    return [json.dumps({"evenements": events[i:i + BATCH]}, ensure_ascii=False,
                       separators=(",", ":")).encode()
            for i in range(0, len(events), BATCH)]


# --- Servers ------------------------------------------------------------------------------


KINDS = ("ours", "bare", "naive")
"""The servers: ``miam-economies serve``, ``bench.bare`` and ``bench.naive``."""


@dataclass
class Server:
    """A server subprocess on 127.0.0.1 of ``kind`` (``KINDS``): ours (``miam-economies
    serve``), the bare append (``bench.bare``) or the naive design (``bench.naive``).

    ``startup``: seconds from spawn to the first 200 of ``GET /economies/bilan``.
    """

    data: Path
    kind: str = "ours"
    port: int = field(default_factory=_free_port)
    startup: float = 0.0
    process: subprocess.Popen[bytes] | None = None
    database_url: str | None = None
    workers: int = 1
    projector: subprocess.Popen[bytes] | None = None

    @property
    def naive(self) -> bool:
        """Whether this is the naive design."""
        return self.kind == "naive"

    @property
    def url(self) -> str:
        """Base URL."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Spawn and wait for a first 200 on the bilan (at most 120 s)."""
        if self.kind not in KINDS:
            raise ValueError(f"no server of kind {self.kind!r}; known: {KINDS}")
        if self.kind != "ours":
            command = [sys.executable, "-m", f"bench.{self.kind}", "--data", str(self.data),
                       "--port", str(self.port)]
        else:
            command = [str(OURS_BIN / "miam-economies"), "serve",
                       "--data", str(self.data), "--port", str(self.port), "--fuseau", "UTC",
                       "--workers", str(self.workers)]
        env = {**os.environ, "MIAM_ECONOMIES_TOKEN": TOKEN}
        if self.database_url is not None:
            env["MIAM_ECONOMIES_DATABASE_URL"] = self.database_url
        self.data.mkdir(parents=True, exist_ok=True)
        log_path = self.data.parent / f"server-{self.port}.log"
        started = time.perf_counter()
        # The children keep the log open; this process needs no handle on it.
        # Ours runs from its data directory: nothing of this checkout on its path, so
        # that another checkout's (--ours-bin) children import their own package.
        # The others are this checkout's modules (python -m bench.KIND): run from its root,
        # whatever directory the calling process is in.
        cwd = self.data if self.kind == "ours" else ROOT
        with log_path.open("ab") as log:
            self.process = subprocess.Popen(command, env=env, stdout=log, stderr=log,
                                            cwd=cwd)
            if self.database_url is not None:  # the projection is a process of its own
                self.projector = subprocess.Popen(
                    [str(OURS_BIN / "miam-economies"), "project",
                     "--data", str(self.data)], env=env, stdout=log, stderr=log, cwd=cwd)
        deadline = time.monotonic() + 120
        with httpx.Client(base_url=self.url, timeout=120,
                          headers={"Authorization": f"Bearer {TOKEN}"}) as client:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(f"server exited: see {log_path}")
                try:
                    if client.get("/economies/bilan").status_code == 200:
                        self.startup = time.perf_counter() - started
                        return
                except httpx.TransportError:
                    pass  # not listening yet
                time.sleep(0.005)
        raise RuntimeError("no first 200 within 120 s")

    def peak_rss_mb(self) -> float:
        """The process's peak resident set size so far (``VmHWM``), MB."""
        assert self.process is not None
        return proc.peak_rss_mb(self.process.pid)

    def descendants_peak_rss_mb(self) -> float:
        """The sum of its live descendants' peak resident set sizes (``VmHWM``), MB: the
        projection's process of ``serve`` on SQLite, uvicorn's workers."""
        assert self.process is not None
        return sum(proc.peak_rss_mb(pid) for pid in proc.descendants(self.process.pid))

    def cpu(self) -> proc.Snapshot:
        """The CPU seconds of the server process and its descendants so far."""
        assert self.process is not None
        return proc.snapshot(self.process.pid)

    def stop(self) -> None:
        """SIGTERM and wait (the server, and its projector on PostgreSQL), then wait for
        every descendant they had to exit too (a worker still closing its SQLite files
        would leave them behind a removal: issue 35, item 5); at most 60 s each."""
        for process in (self.process, self.projector):
            if process is not None and process.poll() is None:
                family = proc.descendants(process.pid)
                process.send_signal(signal.SIGTERM)
                process.wait(timeout=60)
                proc.wait_gone(family, timeout=60)


def remove_tree(path: Path) -> None:
    """Remove the directory ``path`` and what it holds; a file that vanishes meanwhile (a
    SQLite ``-shm`` or ``-wal`` its last process removed as it closed) is no error, and
    ``path`` already gone is none either."""
    def vanished(function: Any, name: str, exc_info: Any) -> None:
        if not isinstance(exc_info[1], FileNotFoundError):
            raise exc_info[1]

    shutil.rmtree(path, onerror=vanished)


@contextmanager
def serving(data: Path, kind: str = "ours") -> Iterator[Server]:
    """A started ``Server`` of ``kind``, stopped on exit."""
    server = Server(data, kind)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def client_for(server: Server) -> httpx.Client:
    """An HTTP/1.1 keep-alive client with the bearer token."""
    return httpx.Client(base_url=server.url, timeout=120,
                        headers={"Authorization": f"Bearer {TOKEN}",
                                 "Content-Type": "application/json"})


@dataclass
class Posted:
    """One closed-loop ingest section (``post_all``): ``events`` acknowledged by ``posts``
    POSTs in ``seconds``; ``current`` seconds until the bilan showed them all (ours; the
    same as ``seconds`` for the references, which answer once stored); each POST's
    seconds (``latencies``); the server's CPU seconds over the section, its own process
    (``cpu_server``) and its descendants' (``cpu_descendants``)."""

    events: int
    posts: int
    seconds: float
    current: float
    latencies: list[float]
    cpu_server: float
    cpu_descendants: float

    def figures(self) -> dict[str, Any]:
        """The section's figures: ``rate`` and ``until_current`` (events/s),
        ``cpu_server_ms`` and ``cpu_descendants_ms`` (ms per POST), ``latencies`` (s)."""
        return {"rate": self.events / self.seconds, "until_current": self.events / self.current,
                "cpu_server_ms": self.cpu_server / self.posts * 1000,
                "cpu_descendants_ms": self.cpu_descendants / self.posts * 1000,
                "latencies": self.latencies}


def post_all(server: Server, batches: list[bytes], clients: int) -> Posted:
    """Post every batch, ``clients`` connections at once (closed loop). Ours is then read
    with ``GET /economies/bilan?attendre=1`` (the projection's catch-up included), which
    must count every event. The server's CPU is read just before the first POST and at the
    end, before the server stops. Every POST must be a 200 with no doublon."""
    shares = [batches[i::clients] for i in range(clients)]
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors: list[str] = []
    barrier = threading.Barrier(clients + 1)

    def worker(index: int) -> None:
        with client_for(server) as http:
            barrier.wait()
            for body in shares[index]:
                t0 = time.perf_counter()
                response = http.post("/economies", content=body)
                latencies[index].append(time.perf_counter() - t0)
                if response.status_code != 200 or response.json()["doublons"]:
                    errors.append(response.text[:200])

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    before = server.cpu()
    barrier.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    if errors:
        raise RuntimeError(f"{len(errors)} POSTs failed: {errors[0]}")
    events = sum(body.count(b'"schema"') for body in batches)
    current = elapsed
    if server.kind == "ours":
        # attendre=1 waits at most 5 s a read: ask again until the fold has caught up.
        deadline = time.monotonic() + 300
        with client_for(server) as http:
            while True:
                bilan = http.get("/economies/bilan", params={"attendre": "1"}).json()
                if (bilan["provenance"]["evenements"] == events
                        or time.monotonic() > deadline):
                    break
        current = time.perf_counter() - started
        if bilan["provenance"]["evenements"] != events:
            raise RuntimeError(f"the bilan shows {bilan['provenance']['evenements']} events")
    cpu_server, cpu_descendants = proc.between(before, server.cpu())
    return Posted(events, len(batches), elapsed, current,
                  [x for each in latencies for x in each], cpu_server, cpu_descendants)
