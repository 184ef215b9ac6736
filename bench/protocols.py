"""The plugin's real request, a 10-event POST, on ``serve`` with h11 against httptools,
and what each piece of our request path costs (issue 22, item 3; ADR-0112). Not part of
``make bench``: a measurement kept so that its figures can be measured again.

Each round starts, one after the other (the order rotated every round), a fresh server per
variant on a fresh data directory, and posts ``WARM_UP`` then ``--posts`` sequential
10-event POSTs of new events (``tests.corpus``, the plugin's encoding) from one httpx
keep-alive client; it keeps each timed POST's seconds and the server's CPU seconds over
them (``/proc``: its own process, and apart the live descendants: the projector with
``--fold process``). Figures are medians over the rounds.

``--fold thread`` folds the projection in a thread of the server (``serve`` at commit
23c14db; ``serve --projection thread`` since ADR-0115); ``--fold process`` in a
``miam-economies project`` process (``serve``'s own child since ADR-0115; started beside
it before).

Variants (each but ``bare`` and ``h11`` is ``serve`` on httptools with pieces taken out
by patching the server process before it starts; none is ever a way to run the service):

* ``bare``: ``bench.bare``, the bare HTTP + orjson + SQLite append (the reference);
* ``h11``, ``httptools``: ``serve`` with ``guarded_h11`` / ``guarded_httptools``;
* ``-fold``: ``httptools`` with its fold's process stopped (SIGSTOP) over the timed POSTs,
  once it has folded the warm-up: whether that neighbour inflates ``serve``'s own CPU;
* ``-log``: without the JSON log line (``observer._record`` keeps the metrics only);
* ``-hist``: without the latency histogram (``Metrics.request`` counts refusals only);
* ``-outer``: without the app-wide ``RequestObserver`` (the route's one observes);
* ``-observe``: with no ``RequestObserver`` at all (no line, no metric);
* ``-thread``: validation and append on the event loop, not in a worker thread (since
  ADR-0118 ``serve`` does that itself for a small batch when the store takes it at once);
* ``lean``: ``-observe`` and ``-thread`` together;
* ``xwriter``: the worker thread a dedicated one-thread executor's, not anyio's pool.

``--micro`` instead times each piece alone, in this process (microseconds a call);
``--profile N [--size S]`` profiles N POSTs of S events (default 10) through ``serve``'s ASGI
app in this process, after timing them against the bare append's app alike.

Run: ``python -m bench.protocols [--rounds 7] [--posts 400] [--size 10]
[--fold thread|process] [--variants=bare,h11,httptools]`` (``--variants=`` with the ``=``:
names start with ``-``; ``--size 500``: 500-event batches of the same corpus).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import logging
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import TOKEN, _free_port
from tests.corpus import generate

SMALL, WARM_UP = 10, 20
"""Events per POST (the plugin's steady state), and untimed POSTs before the timed ones."""

VARIANTS = ("bare", "h11", "httptools", "-fold", "-log", "-hist", "-outer", "-observe", "-thread",
            "lean", "xwriter")
TICK = os.sysconf("SC_CLK_TCK")


# --- In the server process: the variants -----------------------------------------------


def _patch(variant: str, fold: str) -> None:
    """Take out of this process's ``serve`` what ``variant`` names (see the module); with
    ``fold`` "process", its projection runner too."""
    from miam_economies.api.cli import connections
    from miam_economies.api.cli import serve as serve_module
    from miam_economies.api.http import app as app_module
    from miam_economies.api.http import metrics as metrics_module
    from miam_economies.api.http import observer, routes
    from miam_economies.api.service.bootstrap import open_services

    if fold == "process" and not _has_projection_option():
        app_module.open_services = functools.partial(  # type: ignore[assignment]
            open_services, run_projections=False)

    protocol = connections.guarded_h11 if variant == "h11" else connections.guarded_httptools
    for name in ("guarded_h11", "guarded_protocol"):  # serve.py before and after ADR-0112
        if hasattr(serve_module, name):
            setattr(serve_module, name, protocol)
    if variant == "-log":
        def record(scope: Any, status: int, seconds: float) -> None:
            metrics = (scope.get("state") or {}).get(metrics_module.METRICS_STATE)
            outcome = scope.get(observer.OUTCOME)
            if metrics is not None:
                metrics.request(scope.get(observer._ROUTE) or "(none)", scope["method"],
                                status, seconds)
                if isinstance(outcome, observer.Appended):
                    metrics.appended(outcome)
        observer._record = record
    if variant == "-hist":
        def request(self: Any, route: str, method: str, status: int, seconds: float) -> None:
            if status >= 400:
                self.refused.labels(str(status)).inc()
        metrics_module.Metrics.request = request  # type: ignore[method-assign]
    if variant == "-outer":
        create = serve_module.create_app

        def without_outer(settings: Any) -> Any:
            app = create(settings)
            app.user_middleware = [m for m in app.user_middleware
                                   if m.cls is not observer.RequestObserver]
            return app
        serve_module.create_app = without_outer  # type: ignore[assignment]
    if variant in ("-observe", "lean"):
        app_module.RequestObserver = lambda app, route=None: app  # type: ignore[misc,assignment]
    if variant in ("-thread", "lean"):
        async def inline(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            return func(*args, **kwargs)
        routes.run_in_threadpool = inline  # type: ignore[assignment]
    if variant == "xwriter":
        from concurrent.futures import ThreadPoolExecutor
        pool = ThreadPoolExecutor(1)

        async def writer(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            return await asyncio.get_running_loop().run_in_executor(
                pool, functools.partial(func, *args, **kwargs))
        routes.run_in_threadpool = writer  # type: ignore[assignment]


def _has_projection_option() -> bool:
    """Whether ``serve`` has ``--projection`` (ADR-0115: it folds in a child process of
    its own by default, in a thread with ``--projection thread``)."""
    from miam_economies.api.cli.serve import serve
    return any(param.name == "projection" for param in serve.params)


def _serve(variant: str, fold: str, data: str, port: int) -> None:
    _patch(variant, fold)
    from miam_economies.api.cli import main
    options = ["--fuseau", "UTC"]
    if _has_projection_option():
        options += ["--projection", fold]
    elif fold == "process":  # before ADR-0115; stopped by the driver (see run_one)
        script = Path(sys.executable).with_name("miam-economies")
        subprocess.Popen([str(script), "project", "--data", data, "--fuseau", "UTC"])
    main(["serve", "--data", data, "--port", str(port), *options], prog_name="miam-economies")


# --- In the driver: servers, posts, CPU ------------------------------------------------


def descendants(pid: int) -> list[int]:
    """The live descendants of ``pid``."""
    found: list[int] = []
    queue = [pid]
    while queue:
        for task in Path(f"/proc/{queue.pop()}/task").glob("*"):
            try:
                children = [int(x) for x in (task / "children").read_text().split()]
            except (FileNotFoundError, ProcessLookupError):
                continue
            found += children
            queue += children
    return found


def cpu_seconds(pid: int) -> tuple[float, float]:
    """utime + stime of ``pid``, and of its live descendants, seconds."""
    def of(current: int) -> float:
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            return 0.0
        return (int(fields[11]) + int(fields[12])) / TICK

    return of(pid), sum(of(child) for child in descendants(pid))


def start(variant: str, fold: str, data: Path,
          log: Any) -> tuple[subprocess.Popen[bytes], str]:
    """A server of ``variant`` on ``data``, answering; its process and URL."""
    port = _free_port()
    if variant == "bare":
        command = [sys.executable, "-m", "bench.bare", "--data", str(data), "--port",
                   str(port)]
    else:
        command = [sys.executable, "-m", "bench.protocols", f"--serve={variant}", "--data",
                   str(data), "--port", str(port), "--fold", fold]
    env = {**os.environ, "MIAM_ECONOMIES_TOKEN": TOKEN}
    process = subprocess.Popen(command, env=env, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{variant} exited: see {log.name}")
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return process, url
        except httpx.TransportError:
            time.sleep(0.02)  # not listening yet
    raise RuntimeError(f"{variant} did not answer within 60 s")


def caught_up(http: httpx.Client) -> None:
    """Return once ``/healthz`` shows the projection at the store's head (60 s at most;
    the bare append has no projection)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if http.get("/healthz").json().get("retard", 0) == 0:
            return
        time.sleep(0.05)  # the projector is still starting or folding: nothing to wait on
    raise RuntimeError("the projection did not catch up within 60 s")


def run_one(variant: str, fold: str, bodies: list[bytes], work: Path,
            size: int = SMALL) -> dict[str, Any]:
    """Post ``bodies`` (``size`` events each) to a fresh server of ``variant``; the timed
    POSTs' seconds and the server's CPU seconds a timed POST: its process's, its
    descendants'."""
    data = work / f"{variant}-{time.monotonic_ns()}"
    data.mkdir()
    with open(work / "servers.log", "ab") as log:
        process, url = start(variant, fold, data, log)
        try:
            with httpx.Client(base_url=url, timeout=60, headers={
                    "Authorization": f"Bearer {TOKEN}",
                    "Content-Type": "application/json"}) as http:
                seconds = []
                for i, body in enumerate(bodies):
                    if i == WARM_UP:
                        caught_up(http)  # the projector started and folded the warm-up
                        if variant == "-fold":  # the fold's process paused: no neighbour
                            for child in descendants(process.pid):
                                os.kill(child, signal.SIGSTOP)
                        cpu = cpu_seconds(process.pid)
                    t0 = time.perf_counter()
                    response = http.post("/economies", content=body)
                    if i >= WARM_UP:
                        seconds.append(time.perf_counter() - t0)
                    if response.status_code != 200 or response.json()["recus"] != size:
                        raise RuntimeError(f"{variant}: {response.text[:200]}")
                after = cpu_seconds(process.pid)
                own, fold_cpu = ((a - b) / len(seconds) for a, b in zip(after, cpu, strict=True))
        finally:
            # uvicorn re-raises the SIGTERM it handled, so the server cannot stop its
            # projector itself: the driver does, after it.
            children = descendants(process.pid)
            for child in children:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child, signal.SIGCONT)
            process.send_signal(signal.SIGTERM)
            process.wait(60)
            for child in children:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child, signal.SIGTERM)
    return {"seconds": seconds, "cpu": own, "cpu_fold": fold_cpu}


def quantile(values: list[float], q: float) -> float:
    """The ``q`` quantile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(variants: list[str], rounds: int, posts: int,
            fold: str, size: int = SMALL) -> dict[str, dict[str, float]]:
    """Per variant, medians over ``rounds`` of each round's p50, p99, and CPU per POST
    of the server's process and of its descendants (milliseconds), POSTs of ``size``
    events; prints each round."""
    events = generate((WARM_UP + posts) * size, seed=22)[:(WARM_UP + posts) * size]
    bodies = [json.dumps({"evenements": events[i:i + size]}, ensure_ascii=False,
                         separators=(",", ":")).encode()
              for i in range(0, len(events), size)]
    kept: dict[str, list[tuple[float, float, float, float]]] = {v: [] for v in variants}
    with tempfile.TemporaryDirectory(prefix="miam-protocols-") as tmp:
        for r in range(rounds):
            order = variants[r % len(variants):] + variants[:r % len(variants)]
            for variant in order:
                got = run_one(variant, fold, bodies, Path(tmp), size)
                row = (quantile(got["seconds"], 0.5) * 1e3,
                       quantile(got["seconds"], 0.99) * 1e3, got["cpu"] * 1e3,
                       got["cpu_fold"] * 1e3)
                kept[variant].append(row)
                print(f"round {r} {variant:>10}: p50 {row[0]:.2f} p99 {row[1]:.2f} "
                      f"cpu {row[2]:.2f} (+{row[3]:.2f}) ms", file=sys.stderr, flush=True)
    return {v: {"p50_ms": statistics.median(x[0] for x in rows),
                "p99_ms": statistics.median(x[1] for x in rows),
                "cpu_ms": statistics.median(x[2] for x in rows),
                "cpu_descendants_ms": statistics.median(x[3] for x in rows),
                "rounds": len(rows)} for v, rows in kept.items()}


# --- --micro: each piece alone ---------------------------------------------------------


def micro(n: int = 20_000) -> dict[str, float]:
    """Microseconds a call of each piece, alone, in this process: the log line (to a
    file, as ``serve``'s stderr to a log), the histogram, one ``RequestObserver`` layer
    around a trivial app, and the thread hop of a trivial function."""
    from starlette.concurrency import run_in_threadpool

    from miam_economies.api.http import observer
    from miam_economies.api.http.metrics import Metrics
    from miam_economies.api.store.application import Appended

    class NoServices:
        pass

    out: dict[str, float] = {}
    metrics = Metrics(NoServices())  # type: ignore[arg-type]
    outcome = Appended(recus=10, doublons=0)
    scope: dict[str, Any] = {"type": "http", "method": "POST", "path": "/economies",
                             "state": {}, observer._ROUTE: "/economies",
                             observer.OUTCOME: outcome}
    with tempfile.NamedTemporaryFile("w") as sink:
        handler = logging.StreamHandler(sink)
        handler.setFormatter(logging.Formatter("%(message)s"))
        observer.log.addHandler(handler)
        observer.log.setLevel(logging.INFO)
        observer.log.propagate = False
        t0 = time.perf_counter()
        for _ in range(n):
            observer._record(scope, 200, 0.0021)
        out["log line (build, json.dumps, emit)"] = (time.perf_counter() - t0) / n * 1e6
        observer.log.removeHandler(handler)
    t0 = time.perf_counter()
    for _ in range(n):
        metrics.request("/economies", "POST", 200, 0.0021)
    out["histogram observe (labels + observe)"] = (time.perf_counter() - t0) / n * 1e6
    t0 = time.perf_counter()
    for _ in range(n):
        metrics.appended(outcome)
    out["4 counters (appended)"] = (time.perf_counter() - t0) / n * 1e6

    async def trivial(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    async def layers() -> None:
        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: Any) -> None:
            return None

        wrapped = observer.RequestObserver(trivial)
        inner = observer.RequestObserver(trivial, "/economies")
        for name, app, outer in (("bare ASGI call", trivial, False),
                                 ("observer, outer (times, records)", wrapped, False),
                                 ("observer, inner (already observed)", inner, True)):
            observer.log.disabled = True  # the line is measured above
            t0 = time.perf_counter()
            for _ in range(n):
                s = {"type": "http", "method": "POST", "path": "/economies", "state": {}}
                if outer:
                    s[observer._OBSERVED] = True
                await app(s, receive, send)
            out[name] = (time.perf_counter() - t0) / n * 1e6
            observer.log.disabled = False

        def work() -> int:
            return 1

        t0 = time.perf_counter()
        for _ in range(n // 4):
            await run_in_threadpool(work)
        out["run_in_threadpool hop (wall)"] = (time.perf_counter() - t0) / (n // 4) * 1e6
        c0 = time.process_time()
        for _ in range(n // 4):
            await run_in_threadpool(work)
        out["run_in_threadpool hop (CPU)"] = (time.process_time() - c0) / (n // 4) * 1e6

    import uvloop
    uvloop.run(layers())
    return out


def profile(n: int = 1_500, size: int = SMALL) -> None:
    """Profile ``n`` POSTs of ``size`` events through ``serve``'s ASGI app in this process:
    no HTTP server, no projection runner, no thread hop (``-thread``), so that one thread
    does all; cProfile on the CPU clock. First, unprofiled, the CPU per POST of ``n`` such
    POSTs through that app and through the bare append's (``bench.bare``, its writer
    thread made inline too), alternately, each on a fresh data directory: what our
    request path costs above the bare one, HTTP aside. Prints those, then the 60
    costliest calls, cumulative."""
    import cProfile
    import pstats

    import uvloop

    from bench import bare

    _patch("-thread", "process")
    from miam_economies.api.cli import serve as serve_module
    from miam_economies.api.http.observer import configure_request_log
    from miam_economies.api.service.settings import Settings

    configure_request_log()
    logging.getLogger("miam_economies.requests").handlers[0].setStream(
        open(os.devnull, "w"))  # noqa: SIM115 - the process's whole life
    events = generate((WARM_UP + n) * size, seed=5)
    bodies = [json.dumps({"evenements": events[i:i + size]}, ensure_ascii=False,
                         separators=(",", ":")).encode()
              for i in range(0, (WARM_UP + n) * size, size)]

    async def post(app: Any, state: dict[str, Any], body: bytes) -> None:
        # The scope uvicorn's httptools protocol builds for an httpx POST.
        headers = [(b"host", b"127.0.0.1"), (b"accept", b"*/*"),
                   (b"accept-encoding", b"gzip, deflate"), (b"connection", b"keep-alive"),
                   (b"user-agent", b"python-httpx/0.28.1"),
                   (b"authorization", f"Bearer {TOKEN}".encode()),
                   (b"content-type", b"application/json"),
                   (b"content-length", b"%d" % len(body))]
        scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"},
                 "http_version": "1.1", "server": ("127.0.0.1", 8090),
                 "client": ("127.0.0.1", 5555), "scheme": "http", "root_path": "",
                 "headers": headers, "state": state.copy(), "method": "POST",
                 "path": "/economies", "raw_path": b"/economies", "query_string": b""}
        sent: list[Any] = []

        async def receive() -> dict[str, Any]:
            if not sent:
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.Event().wait()  # the client never disconnects
            raise AssertionError

        async def send(message: Any) -> None:
            sent.append(message)

        await app(scope, receive, send)
        assert sent[0]["status"] == 200, sent

    async def ours(data: Path, profiler: cProfile.Profile | None) -> float:
        app = serve_module.create_app(Settings(data=data, token=TOKEN, fuseau="UTC",
                                               fold_in_thread=False))
        state: dict[str, Any] = {}
        messages: asyncio.Queue[dict[str, str]] = asyncio.Queue()
        await messages.put({"type": "lifespan.startup"})
        started = asyncio.Event()

        async def lifespan_send(message: Any) -> None:
            if message["type"] == "lifespan.startup.complete":
                started.set()

        life = asyncio.create_task(app({"type": "lifespan", "state": state},
                                       messages.get, lifespan_send))
        await started.wait()
        for body in bodies[:WARM_UP]:
            await post(app, state, body)
        began = time.process_time()
        if profiler is not None:
            profiler.enable()
        for body in bodies[WARM_UP:]:
            await post(app, state, body)
        if profiler is not None:
            profiler.disable()
        spent = time.process_time() - began
        await messages.put({"type": "lifespan.shutdown"})
        await life
        return spent / n

    async def reference(data: Path) -> float:
        app = bare.build_app(data)
        loop = asyncio.get_running_loop()

        async def inline(executor: Any, func: Callable[..., Any], *args: Any) -> Any:
            return func(*args)

        loop.run_in_executor = inline  # type: ignore[method-assign,assignment]
        for body in bodies[:WARM_UP]:
            await post(app, {}, body)
        began = time.process_time()
        for body in bodies[WARM_UP:]:
            await post(app, {}, body)
        return (time.process_time() - began) / n

    figures: dict[str, list[float]] = {"ours": [], "bare": []}
    with tempfile.TemporaryDirectory(prefix="miam-protocols-") as tmp:
        for rnd in range(3):
            figures["ours"].append(uvloop.run(ours(Path(tmp) / f"ours-{rnd}", None)))
            figures["bare"].append(uvloop.run(reference(Path(tmp) / f"bare-{rnd}")))
        ours_ms, bare_ms = (statistics.median(figures[k]) * 1e3 for k in ("ours", "bare"))
        print(f"{size}-event POSTs, CPU each, app only (medians of 3 x {n}): ours "
              f"{ours_ms:.2f} ms, bare {bare_ms:.2f} ms, ratio {ours_ms / bare_ms:.2f}")
        profiler = cProfile.Profile(time.process_time)
        uvloop.run(ours(Path(tmp) / "profiled", profiler))
    stats = pstats.Stats(profiler)
    print(f"{n} POSTs, {stats.total_tt / n * 1e3:.2f} ms of CPU each (profiled)")  # type: ignore[attr-defined]
    stats.sort_stats("cumulative").print_stats(60)


def main() -> None:
    """Measure (see the module), print the medians as JSON on stdout."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--posts", type=int, default=400)
    parser.add_argument("--variants", default="bare,h11,httptools")
    parser.add_argument("--fold", choices=("thread", "process"), default="thread")
    parser.add_argument("--micro", action="store_true")
    parser.add_argument("--profile", type=int, metavar="N")
    parser.add_argument("--size", type=int, default=SMALL,
                        help="events per POST, from tests.corpus (default: the plugin's 10)")
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        _serve(args.serve, args.fold, args.data, args.port)
        return
    if args.micro:
        print(json.dumps(micro(), indent=1))
        return
    if args.profile:
        profile(args.profile, args.size)
        return
    variants = args.variants.split(",")
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        parser.error(f"unknown variants {sorted(unknown)}; known: {', '.join(VARIANTS)}")
    if "-fold" in variants and args.fold != "process":
        parser.error("-fold stops the fold's process: it needs --fold process")
    print(json.dumps(measure(variants, args.rounds, args.posts, args.fold, args.size),
                     indent=1))


if __name__ == "__main__":
    main()
