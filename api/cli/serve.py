"""``serve`` and ``project``: the long-running processes (SPEC, "Interfaces"; ADR-0031)."""

from __future__ import annotations

import ipaddress
import logging
import os
import shutil
import signal
import tempfile
import threading
from pathlib import Path
from typing import Any

import click
import uvicorn

from miam_economies.api.cli.connections import guarded_protocol
from miam_economies.api.cli.main import (
    _check_zone,
    _where,
    data_option,
    fuseau_option,
    journal_option,
    main,
    refused,
)
from miam_economies.api.cli.port_check import check_port
from miam_economies.api.cli.projector import PROJECTOR_NICENESS, Projector
from miam_economies.api.cli.workers import WORKER_APP, WORKER_HTTP, worker_environment
from miam_economies.api.http.app import create_app
from miam_economies.api.http.headers import MAX_HEADERS
from miam_economies.api.http.metrics import MULTIPROC_DIR
from miam_economies.api.http.observer import configure_request_log
from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.follow import follow
from miam_economies.api.service.settings import (
    DEFAULT_MAX_BODY,
    Settings,
    resolve_token,
)


@main.command()
@data_option
@fuseau_option
@journal_option
@click.option("--host", default="127.0.0.1", show_default=True, envvar="MIAM_ECONOMIES_HOST",
              show_envvar=True, help="Interface to bind; another than loopback needs "
              "--allow-non-loopback.")
@click.option("--allow-non-loopback", is_flag=True,
              help="Allow --host to be another interface than loopback (prints a warning).")
@click.option("--port", default=8090, show_default=True, type=click.IntRange(0, 65535),
              envvar="MIAM_ECONOMIES_PORT", show_envvar=True,
              help="TCP port (MIAM's MCP server port); one another process listens on is "
                   "refused before anything is created.")
@click.option("--max-body", default=DEFAULT_MAX_BODY, show_default=True,
              type=click.IntRange(min=1),
              envvar="MIAM_ECONOMIES_MAX_BODY", show_envvar=True,
              help="Largest accepted request body, bytes.")
@click.option("--lock-timeout", default=5, show_default=True, type=click.IntRange(min=1),
              envvar="MIAM_ECONOMIES_LOCK_TIMEOUT", show_envvar=True,
              help="Seconds to wait for the store's write lock, or for a PostgreSQL "
              "connection, before answering 503.")
@click.option("--body-timeout", default=30.0, show_default=True,
              type=click.FloatRange(min=0.1), envvar="MIAM_ECONOMIES_BODY_TIMEOUT",
              show_envvar=True, help="Seconds a request body may take to arrive (then 408).")
@click.option("--header-timeout", default=10.0, show_default=True,
              type=click.FloatRange(min=0.1), envvar="MIAM_ECONOMIES_HEADER_TIMEOUT",
              show_envvar=True,
              help="Seconds a connection may take to send a request's headers (then closed).")
@click.option("--metrics-public", is_flag=True, envvar="MIAM_ECONOMIES_METRICS_PUBLIC",
              show_envvar=True, help="Serve GET /metrics without the bearer token.")
@click.option("--projection", type=click.Choice(["process", "thread"]), default="process",
              show_default=True, envvar="MIAM_ECONOMIES_PROJECTION", show_envvar=True,
              help="On SQLite, fold the bilan in a child process (off the POSTs' "
              "interpreter) or in a thread of the server (ADR-0115).")
@click.option("--fold-stall-after", default=60.0, show_default=True,
              type=click.FloatRange(min=1), envvar="MIAM_ECONOMIES_FOLD_STALL_AFTER",
              show_envvar=True, help="Seconds the fold may go without advancing while "
              "events wait before /healthz answers 503 (ADR-0136).")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(min=1),
              envvar="MIAM_ECONOMIES_WORKERS", show_envvar=True,
              help="uvicorn worker processes (more than 1 needs PostgreSQL).")
# From the environment only in practice: a token on the command line shows in `ps`.
@click.option("--token", envvar="MIAM_ECONOMIES_TOKEN", show_envvar=True, hidden=True)
def serve(data: Path, database_url: str | None, fuseau: str | None, journal: Path | None,
          host: str, allow_non_loopback: bool, port: int, max_body: int, lock_timeout: int,
          body_timeout: float, header_timeout: float, metrics_public: bool,
          projection: str, fold_stall_after: float, workers: int,
          token: str | None) -> None:
    """Serve POST /economies and the read routes (the bilan, a demande, a session, the
    classement, the report, health and metrics). On SQLite the projection is folded
    by a child process this one starts and watches (--projection); on PostgreSQL run
    `miam-economies project` beside (ADR-0031, ADR-0115)."""
    if not _is_loopback(host):
        if not allow_non_loopback:
            raise click.BadParameter(f"{host} is not a loopback address: the events would be "
                                     "reachable from other machines; add "
                                     "--allow-non-loopback if that is meant",
                                     param_hint="--host")
        click.echo(f"warning: serving on {host}, reachable beyond this machine "
                   "(bearer token required, no TLS)", err=True)
    if workers > 1 and not (database_url or "").startswith(("postgresql:", "postgres:")):
        # Refused before anything (the token file) is created.
        raise click.BadParameter("several workers need PostgreSQL (--database-url "
                                 "postgresql://...): on SQLite they would only queue on "
                                 "its write lock", param_hint="--workers")
    if fuseau is not None:
        _check_zone(fuseau)
    # Before the token, the stores and the projector are made (ADR-0161); PortUnavailable
    # is one line. uvicorn binds again below: a port taken in between is its error.
    check_port(host, port, workers)
    if token is None and "MIAM_ECONOMIES_TOKEN" in os.environ:
        token = os.environ["MIAM_ECONOMIES_TOKEN"]  # set empty: click reads it as unset
    token, token_file, created = resolve_token(data, token)  # TokenRefused: one line
    if token_file is not None:
        how = "created with mode 0600" if created else "existing"
        click.echo(f"bearer token: in {token_file.resolve()} ({how})", err=True)
    else:
        click.echo("bearer token: from MIAM_ECONOMIES_TOKEN", err=True)
    postgres = (database_url or "").startswith(("postgresql:", "postgres:"))
    settings = Settings(data=data, token=token, max_body=max_body, lock_timeout=lock_timeout,
                        fuseau=fuseau, journal=journal, body_timeout=body_timeout,
                        metrics_public=metrics_public, database_url=database_url,
                        fold_in_thread=projection == "thread",
                        fold_stall_after=fold_stall_after)
    click.echo(f"events in {_where(settings)}", err=True)
    # Fail before serving, with a message, rather than in the lifespan.
    with refused(), open_services(settings, run_projections=False):
        pass
    # ADR-0010: a request's line and headers must arrive within --header-timeout seconds
    # of connecting (or of the last response), its body within --body-timeout (then 408);
    # idle keep-alive connections close after 5 s; at most 64 connections at once (more
    # get a plain 503); headers are capped at 64 KiB (the protocol while they arrive,
    # HeaderCap once parsed); the body is read whole before anything touches the store.
    # The protocol is httptools' when it imports, else h11's, each with our guards
    # (api.cli.connections; ADR-0112); h11_max_incomplete_event_size is h11's cap.
    # One JSON line per request (api.http.observer) replaces uvicorn's access log, which
    # would print query strings. ws="none": no route is a websocket, and an Upgrade offer
    # is ignored, the request served as HTTP/1.1 (RFC 9110 §7.8; ADR-0150).
    configure_request_log()
    limits: dict[str, Any] = dict(
        host=host, port=port, log_level="info", access_log=False, ws="none",
        h11_max_incomplete_event_size=MAX_HEADERS, timeout_keep_alive=5,
        limit_concurrency=64, timeout_graceful_shutdown=10)
    if postgres:
        click.echo("projection: on PostgreSQL this server only appends; run "
                   "`miam-economies project` beside it to fold the bilan (/healthz answers "
                   f"503 once events wait {fold_stall_after:g} s unfolded)", err=True)
    if workers == 1:
        projector = None if postgres or settings.fold_in_thread else Projector(settings)
        if projector is not None:
            projector.start()
            click.echo("projection: folded by a child process (miam-economies project)",
                       err=True)
        try:
            uvicorn.run(create_app(settings), http=guarded_protocol(header_timeout), **limits)
        finally:
            if projector is not None:
                projector.stop()
        return
    # Each worker is a fresh process (spawned): it rebuilds the app from these settings,
    # handed down through its environment, with the same protocol limits (api.cli.workers),
    # and counts its metrics in a directory of this server's, summed at each scrape
    # (api.http.metrics; ADR-0154).
    counted = tempfile.mkdtemp(prefix="miam-economies-metrics-")
    os.environ.update(worker_environment(settings, header_timeout),
                      **{MULTIPROC_DIR: counted})
    try:
        uvicorn.run(WORKER_APP, factory=True, workers=workers, http=WORKER_HTTP, **limits)
    finally:
        shutil.rmtree(counted, ignore_errors=True)


@main.command()
@data_option
@fuseau_option
@journal_option
@click.option("--parent-pid", type=int, hidden=True,
              help="Exit when the process of this pid is no longer this one's parent "
              "(serve's projector, ADR-0115).")
def project(data: Path, database_url: str | None, fuseau: str | None,
            journal: Path | None, parent_pid: int | None) -> None:
    """Follow the event store and fold it into the bilan, in this process, until stopped
    (SIGTERM or Ctrl-C). The server does this itself on SQLite; on PostgreSQL run one
    beside `serve`. A second one started by mistake folds nothing twice (ADR-0031)."""
    if fuseau is not None:
        _check_zone(fuseau)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    settings = Settings(data=data, fuseau=fuseau, journal=journal,
                        database_url=database_url)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    if parent_pid is not None:
        threading.Thread(target=_orphaned, args=(parent_pid, stop), daemon=True).start()
        # serve's projector: the POSTs come first for the CPU too (ADR-0115).
        os.nice(PROJECTOR_NICENESS)
    with refused(), open_services(settings, run_projections=False) as services:
        click.echo(f"projecting {_where(settings)} into "
                   f"{services.projection.tracking_name}", err=True)
        follow(services, stop)


def _orphaned(parent_pid: int, stop: threading.Event) -> None:
    """Set ``stop`` once ``parent_pid`` is no longer this process's parent (it died, even
    by ``kill -9``: the child is re-parented). Looks every half second."""
    while not stop.wait(0.5):
        if os.getppid() != parent_pid:
            stop.set()


def _is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


