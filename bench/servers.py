"""The bench's servers and corpus: a real ``miam-economies serve`` (or the naive design)
in a subprocess on loopback, its clients, and the generated batches they post."""

from __future__ import annotations

import json
import os
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

from tests.conftest import TOKEN, _free_port
from tests.corpus import generate

BATCH = 500
"""Events per POST in the ingest sections: the plugin's largest batch (ATTENTE_MAX)."""


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


@dataclass
class Server:
    """A server subprocess on 127.0.0.1: ours (``miam-economies serve``) or the naive one.

    ``startup``: seconds from spawn to the first 200 of ``GET /economies/bilan``.
    """

    data: Path
    naive: bool = False
    port: int = field(default_factory=_free_port)
    startup: float = 0.0
    process: subprocess.Popen[bytes] | None = None
    database_url: str | None = None
    workers: int = 1
    projector: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """Base URL."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Spawn and wait for a first 200 on the bilan (at most 120 s)."""
        if self.naive:
            command = [sys.executable, "-m", "bench.naive", "--data", str(self.data),
                       "--port", str(self.port)]
        else:
            command = [str(Path(sys.executable).with_name("miam-economies")), "serve",
                       "--data", str(self.data), "--port", str(self.port), "--fuseau", "UTC",
                       "--workers", str(self.workers)]
        env = {**os.environ, "MIAM_ECONOMIES_TOKEN": TOKEN}
        if self.database_url is not None:
            env["MIAM_ECONOMIES_DATABASE_URL"] = self.database_url
        self.data.mkdir(parents=True, exist_ok=True)
        log = open(self.data.parent / f"server-{self.port}.log", "ab")  # noqa: SIM115
        started = time.perf_counter()
        self.process = subprocess.Popen(command, env=env, stdout=log, stderr=log)
        if self.database_url is not None:  # the projection is a process of its own
            self.projector = subprocess.Popen(
                [str(Path(sys.executable).with_name("miam-economies")), "project",
                 "--data", str(self.data)], env=env, stdout=log, stderr=log)
        deadline = time.monotonic() + 120
        with httpx.Client(base_url=self.url, timeout=120,
                          headers={"Authorization": f"Bearer {TOKEN}"}) as client:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(f"server exited: see {log.name}")
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
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        line = next(x for x in status.splitlines() if x.startswith("VmHWM:"))
        return int(line.split()[1]) / 1024

    def stop(self) -> None:
        """SIGTERM and wait (the server, and its projector on PostgreSQL)."""
        for process in (self.process, self.projector):
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGTERM)
                process.wait(timeout=60)


@contextmanager
def serving(data: Path, naive: bool = False) -> Iterator[Server]:
    """A started ``Server``, stopped on exit."""
    server = Server(data, naive)
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


def post_all(server: Server, batches: list[bytes],
             clients: int) -> tuple[float, list[float], float]:
    """Post every batch, ``clients`` connections at once (closed loop); return events/s
    acknowledged, each POST's seconds, and events/s until the bilan shows them all (the
    projection's catch-up included: ``GET /economies/bilan?attendre=1``). Every POST must
    be a 200 with no doublon."""
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
    barrier.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    if errors:
        raise RuntimeError(f"{len(errors)} POSTs failed: {errors[0]}")
    events = sum(body.count(b'"schema"') for body in batches)
    with client_for(server) as http:
        bilan = http.get("/economies/bilan", params={"attendre": "1"}).json()
    current = time.perf_counter() - started
    if not server.naive and bilan["provenance"]["evenements"] != events:
        raise RuntimeError(f"the bilan shows {bilan['provenance']['evenements']} events")
    return events / elapsed, [x for each in latencies for x in each], events / current
