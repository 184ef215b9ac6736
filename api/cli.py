"""The ``miam-economies`` console script (SPEC, "Interfaces"): ``serve``, ``project``,
``bilan``, ``replay``, ``compare``, ``anomalies``, ``export``, ``import``, ``rapport`` and
``migrate``.

Thin over functions: each command resolves ``Settings`` from its flags and the
``MIAM_ECONOMIES_*`` environment, then calls the app or the services.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import click
import uvicorn
from rich import box
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)
from rich.table import Table

from miam_economies.api.app import create_app
from miam_economies.api.backends import Database, redact
from miam_economies.api.limits import MAX_HEADERS, guarded_h11
from miam_economies.api.miam import read_bilan
from miam_economies.api.migrate import MigrationMismatch
from miam_economies.api.migrate import migrate as migrate_store
from miam_economies.api.observability import configure_request_log
from miam_economies.api.projector import follow
from miam_economies.api.replay import (
    ReplayRefused,
    UnknownFormula,
    formula_named,
    list_anomalies,
    read_only_store,
)
from miam_economies.api.replay import compare as compare_formulas
from miam_economies.api.replay import replay as replay_history
from miam_economies.api.report import render_report
from miam_economies.api.services import open_services
from miam_economies.api.settings import (
    DEFAULT_DATA,
    DEFAULT_MAX_BODY,
    Settings,
    resolve_token,
)
from miam_economies.api.store import StoreUnavailable
from miam_economies.api.transfer import check_files, export_lines, import_files
from miam_economies.api.workers import WORKER_APP, WORKER_HTTP, worker_environment
from miam_economies.domain.bilan import Figures, check_bounds
from miam_economies.domain.formulas import FORMULES
from miam_economies.projections.view import ProjectionMismatch

_data = click.option(
    "--data", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_DATA,
    envvar="MIAM_ECONOMIES_DATA", show_default=True, show_envvar=True,
    help="Data directory: token file, and the SQLite event store and projections.",
)
_database_url = click.option(
    "--database-url", envvar="MIAM_ECONOMIES_DATABASE_URL", show_envvar=True,
    metavar="URL", callback=lambda ctx, param, value: _check_url(value),
    help="Where the events and projections live: sqlite:///PATH (default: "
         "DATA/economies.sqlite) or postgresql://USER@HOST:PORT/DBNAME (ADR-0031).",
)


def data_option(command: Any) -> Any:
    """``--data DIR`` and ``--database-url URL`` (a command takes ``data`` and
    ``database_url``)."""
    return _data(_database_url(command))


def _check_url(value: str | None) -> str | None:
    """``value`` if it is a database URL ``api.backends`` reads, else a usage error."""
    if value is not None:
        try:
            Database.parse(value)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--database-url") from None
    return value
fuseau_option = click.option(
    "--fuseau", envvar="MIAM_ECONOMIES_TZ", show_envvar=True, metavar="ZONE",
    help="IANA time zone the days are cut in (default: the projection's, or the machine's "
         "for a new one).",
)
journal_option = click.option(
    "--journal", type=click.Path(dir_okay=False, path_type=Path),
    envvar="MIAM_ECONOMIES_JOURNAL", show_envvar=True,
    help="MIAM's delegations.jsonl, joined by demande_id (default: DATA/delegations.jsonl).",
)


@click.group()
def main() -> None:
    """Token savings of MIAM's Claude Code plugin: ingestion and bilan."""


@main.command()
@data_option
@fuseau_option
@journal_option
@click.option("--host", default="127.0.0.1", show_default=True, envvar="MIAM_ECONOMIES_HOST",
              show_envvar=True, help="Interface to bind; another than loopback needs "
              "--allow-non-loopback.")
@click.option("--allow-non-loopback", is_flag=True,
              help="Allow --host to be another interface than loopback (prints a warning).")
@click.option("--port", default=8090, show_default=True, type=int, envvar="MIAM_ECONOMIES_PORT",
              show_envvar=True, help="TCP port (MIAM's MCP server port).")
@click.option("--max-body", default=DEFAULT_MAX_BODY, show_default=True,
              type=click.IntRange(min=1),
              envvar="MIAM_ECONOMIES_MAX_BODY", show_envvar=True,
              help="Largest accepted request body, bytes.")
@click.option("--lock-timeout", default=5, show_default=True, type=click.IntRange(min=1),
              envvar="MIAM_ECONOMIES_LOCK_TIMEOUT", show_envvar=True,
              help="Seconds to wait for the store's write lock before answering 503.")
@click.option("--body-timeout", default=30.0, show_default=True,
              type=click.FloatRange(min=0.1), envvar="MIAM_ECONOMIES_BODY_TIMEOUT",
              show_envvar=True, help="Seconds a request body may take to arrive (then 408).")
@click.option("--header-timeout", default=10.0, show_default=True,
              type=click.FloatRange(min=0.1), envvar="MIAM_ECONOMIES_HEADER_TIMEOUT",
              show_envvar=True,
              help="Seconds a connection may take to send a request's headers (then closed).")
@click.option("--metrics-public", is_flag=True, envvar="MIAM_ECONOMIES_METRICS_PUBLIC",
              show_envvar=True, help="Serve GET /metrics without the bearer token.")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(min=1),
              envvar="MIAM_ECONOMIES_WORKERS", show_envvar=True,
              help="uvicorn worker processes (more than 1 needs PostgreSQL).")
# From the environment only in practice: a token on the command line shows in `ps`.
@click.option("--token", envvar="MIAM_ECONOMIES_TOKEN", show_envvar=True, hidden=True)
def serve(data: Path, database_url: str | None, fuseau: str | None, journal: Path | None,
          host: str, allow_non_loopback: bool, port: int, max_body: int, lock_timeout: int,
          body_timeout: float, header_timeout: float, metrics_public: bool, workers: int,
          token: str | None) -> None:
    """Serve POST /economies and GET /economies/bilan. On SQLite the projection runs
    in-process; on PostgreSQL run `miam-economies project` beside (ADR-0031)."""
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
    token, token_file, created = resolve_token(data, token)
    if token_file is not None:
        how = "created with mode 0600" if created else "existing"
        click.echo(f"bearer token: in {token_file.resolve()} ({how})", err=True)
    else:
        click.echo("bearer token: from MIAM_ECONOMIES_TOKEN", err=True)
    if fuseau is not None:
        _check_zone(fuseau)
    settings = Settings(data=data, token=token, max_body=max_body, lock_timeout=lock_timeout,
                        fuseau=fuseau, journal=journal, body_timeout=body_timeout,
                        metrics_public=metrics_public, database_url=database_url)
    click.echo(f"events in {_where(settings)}", err=True)
    try:  # fail before serving, with a message, rather than in the lifespan
        with open_services(settings, run_projections=False):
            pass
    except (ProjectionMismatch, ZoneInfoNotFoundError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    # ADR-0010: a request's line and headers must arrive within --header-timeout seconds
    # of connecting (or of the last response), its body within --body-timeout (then 408);
    # idle keep-alive connections close after 5 s; at most 64 connections at once (more
    # get a plain 503); headers are capped at 64 KiB (h11 while they arrive, HeaderCap
    # once parsed); the body is read whole before anything touches the store.
    # One JSON line per request (api.observability) replaces uvicorn's access log, which
    # would print query strings.
    configure_request_log()
    limits: dict[str, Any] = dict(
        host=host, port=port, log_level="info", access_log=False,
        h11_max_incomplete_event_size=MAX_HEADERS, timeout_keep_alive=5,
        limit_concurrency=64, timeout_graceful_shutdown=10)
    if workers == 1:
        uvicorn.run(create_app(settings), http=guarded_h11(header_timeout), **limits)
        return
    # Each worker is a fresh process (spawned): it rebuilds the app from these settings,
    # handed down through its environment, with the same protocol limits (api.workers).
    os.environ.update(worker_environment(settings, header_timeout))
    uvicorn.run(WORKER_APP, factory=True, workers=workers, http=WORKER_HTTP, **limits)


@main.command()
@data_option
@fuseau_option
@journal_option
def project(data: Path, database_url: str | None, fuseau: str | None,
            journal: Path | None) -> None:
    """Follow the event store and fold it into the bilan, in this process, until stopped
    (SIGTERM or Ctrl-C). The server does this itself on SQLite; on PostgreSQL run one
    beside `serve`. A second one started by mistake folds nothing twice (ADR-0031)."""
    if fuseau is not None:
        _check_zone(fuseau)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    settings = Settings(data=data, token="", fuseau=fuseau, journal=journal,
                        database_url=database_url)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    try:
        with open_services(settings, run_projections=False) as services:
            click.echo(f"projecting {_where(settings)} into "
                       f"{services.projection.tracking_name}", err=True)
            follow(services, stop)
    except (ProjectionMismatch, ZoneInfoNotFoundError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None


@main.command()
@data_option
@fuseau_option
@journal_option
@click.option("--par", metavar="NAME",
              help="Breakdown: client, jour, modele, demande, or a journal field "
                   "(preset, format...; journal.NAME for a field named like the others).")
@click.option("--depuis", metavar="YYYY-MM-DD", help="First day of --par jour (inclusive).")
@click.option("--jusqu-au", "jusqu_au", metavar="YYYY-MM-DD",
              help="Last day of --par jour (inclusive).")
@click.option("--json", "as_json", is_flag=True, help="Print the bilan as the API's JSON.")
def bilan(data: Path, database_url: str | None, fuseau: str | None, journal: Path | None,
          par: str | None, depuis: str | None, jusqu_au: str | None, as_json: bool) -> None:
    """Print the bilan, after folding any event (and journal line) not yet folded.

    A data directory without a store gives an empty bilan with zero totals and a warning
    on standard error, and creates nothing (contract, point 4: "Fichier absent : section à
    zéro").
    """
    try:
        check_bounds(par, depuis, jusqu_au)
    except ValueError as exc:
        message = str(exc).replace("jusqu_au", "--jusqu-au").replace("par=jour", "--par jour")
        raise click.BadParameter(message, param_hint="--depuis/--jusqu-au") from None
    if fuseau is not None:
        _check_zone(fuseau)
    if not Settings(data=data, token="", database_url=database_url).database.exists():
        click.echo(f"no event store in {data.resolve()}: empty bilan "
                   "(pass --data or set MIAM_ECONOMIES_DATA)", err=True)
    try:
        result = read_bilan(data, par=par, depuis=depuis, jusqu_au=jusqu_au, fuseau=fuseau,
                            journal=journal, database_url=database_url)
    except (ProjectionMismatch, ZoneInfoNotFoundError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        json.dump(result, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        _print_table(result)


FIGURES = ["delegations", "evites", "pilotage", "corrections", "net", "taux_reprise"]


def _cells(figures: dict[str, Any]) -> list[str]:
    taux = figures["taux_reprise"]
    return [f"{figures[c]:,}" for c in FIGURES[:-1]] + [
        "-" if taux is None else f"{taux:.1%}"]


def _print_table(result: dict[str, Any]) -> None:
    provenance = result["provenance"]
    title = (f"bilan (formule {result['formule']}, position {result['position']}, "
             f"fuseau {provenance['fuseau']})")
    table = Table(title=title, box=box.SIMPLE_HEAD)
    par = result.get("par")
    if par is not None:
        table.add_column(par)
    table.add_column("client")
    for column in FIGURES:
        table.add_column(column, justify="right")
    if par is None:
        for client, figures in result["economies"].items():
            table.add_row(client, *_cells(figures))
    else:
        for key, clients in result["groupes"].items():
            for client, figures in clients.items():
                table.add_row(key, client, *_cells(figures))
    table.add_section()
    if par is None:
        table.add_row("total", *_cells(result["total"]), style="bold")
    else:
        # The rows shown, summed: for bounded days, the period's total.
        rows = [f for clients in result["groupes"].values() for f in clients.values()]
        shown = Figures(*(sum(f[k] for f in rows)
                          for k in ("delegations", "evites", "pilotage", "corrections")))
        table.add_row("", "total", *_cells(shown.as_dict()), style="bold")
    # Off a terminal rich assumes 80 columns and would truncate the figures' names.
    console = Console(width=None if sys.stdout.isatty() else 140)
    console.print(table)
    console.print(_provenance_line(result), style="dim", soft_wrap=True, highlight=False)


def _provenance_line(result: dict[str, Any]) -> str:
    """Where the figures come from, in one line under the table: formula, position
    against the store's head, events folded, zone, when, journal lines joined."""
    p = result["provenance"]
    line = (f"provenance: formule {p['formule']}, position {p['position']:,} of tete "
            f"{p['tete']:,}, {p['evenements']:,} events, fuseau {p['fuseau']}, "
            f"genere_le {p['genere_le']}")
    journal = p.get("journal")
    if journal is not None:
        line += f", journal {journal.get('lignes', 0):,} lines"
        if journal.get("erreur"):
            line += f" (unreadable: {journal['erreur']})"
    if p.get("attente_expiree"):
        line += ", wait expired"
    return line


def _progress(*columns: Any) -> Progress:
    """A progress display on standard error, drawn only when it is a terminal: in a pipe
    or a log file the command stays quiet."""
    console = Console(stderr=True)
    return Progress(*columns, console=console, disable=not console.is_terminal)


def _is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_zone(fuseau: str) -> None:
    """Raise ``click.BadParameter`` unless ``fuseau`` is an IANA zone name."""
    try:
        ZoneInfo(fuseau)
    except (ZoneInfoNotFoundError, ValueError):
        raise click.BadParameter(f"{fuseau!r} is not an IANA time zone (such as "
                                 "Europe/Paris)", param_hint="--fuseau") from None


def _store_settings(data: Path, database_url: str | None) -> Settings:
    """The settings of an existing store; a usage error when there is none."""
    settings = Settings(data=data, token="", database_url=database_url)
    if not settings.database.exists():
        raise click.ClickException(f"no event store in {data.resolve()} (pass --data)")
    return settings


def _where(settings: Settings) -> str:
    """Where the events are, for a message (no password)."""
    database = settings.database
    return str(database) if database.is_postgres else str(database.path)


@main.command()
@data_option
@click.option("--formule", required=True, metavar="NAME",
              help=f"Formula to rebuild the bilan with: {', '.join(sorted(FORMULES))}.")
@click.option("--fuseau", metavar="ZONE", help="Time zone of the rebuilt bilan's days "
              "(default: the active bilan's).")
@click.option("--reconstruire", is_flag=True,
              help="Rebuild the projection from the first event even if it exists "
                   "(not the one that serves).")
def replay(data: Path, database_url: str | None, formule: str, fuseau: str | None,
           reconstruire: bool) -> None:
    """Rebuild the bilan from the event store under FORMULE (or ZONE), beside the one that
    serves, then switch to it. A running server keeps serving and ingesting, and follows
    the switch; interrupted, a replay resumes where it stopped."""
    if fuseau is not None and not fuseau.strip():
        raise click.BadParameter("give a zone, or leave the option out", param_hint="--fuseau")
    settings = _store_settings(data, database_url)
    try:  # refuse a bad formula or zone before drawing any progress
        formula_named(formule)
    except UnknownFormula as exc:
        raise click.ClickException(str(exc)) from None
    if fuseau is not None:
        _check_zone(fuseau)
    columns = (TextColumn("replay"), BarColumn(), MofNCompleteColumn(),
               TextColumn("events"), TextColumn("{task.fields[rate]}"),
               TimeRemainingColumn())
    with _progress(*columns) as bar:
        task = bar.add_task("replay", total=None, rate="")
        started = time.monotonic()
        first: list[int] = []

        def progress(done: int, total: int) -> None:
            if not first:
                first.append(done)
            elapsed = max(time.monotonic() - started, 1e-9)
            rate = f"{(done - first[0]) / elapsed:,.0f} events/s"
            bar.update(task, completed=done, total=total, rate=rate)

        try:
            result = replay_history(settings, formule, fuseau, progress,
                                    reconstruire=reconstruire)
        except (UnknownFormula, ReplayRefused, ZoneInfoNotFoundError, ValueError,
                ProjectionMismatch) as exc:
            raise click.ClickException(str(exc)) from None
    if result["active"] == result["projection"]:
        click.echo(f"{result['projection']}: {result['evenements']:,} events folded; "
                   "it serves the bilan")
    else:
        click.echo(f"{result['projection']}: {result['evenements']:,} events folded, but "
                   f"another replay switched to {result['active']} meanwhile: not switched",
                   err=True)


@main.command()
@data_option
@click.option("--formules", required=True, metavar="A,B",
              help="Formulas to compare, comma-separated (e.g. v1,pondere-v1).")
@click.option("--par", type=click.Choice(["client", "jour", "modele"]), default="client",
              show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
def compare(data: Path, database_url: str | None, formules: str, par: str,
            as_json: bool) -> None:
    """Show the bilan under several formulas side by side, per group. A dry run: nothing
    is written, nothing switches."""
    names = [name.strip() for name in formules.split(",") if name.strip()]
    try:
        result = compare_formulas(_store_settings(data, database_url), names, par)
    except UnknownFormula as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        json.dump(result, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
        return
    table = Table(title=f"compare {', '.join(names)} par {par} (fuseau {result['fuseau']})",
                  box=box.SIMPLE_HEAD)
    if par != "client":
        table.add_column(par)
    table.add_column("client")
    for name in names:
        table.add_column(f"net {name}", justify="right")
    if len(names) > 1:
        table.add_column(f"{names[-1]} - {names[0]}", justify="right")
    for key, clients in result["groupes"].items():
        for client, by_formula in clients.items():
            nets = [by_formula.get(name, {}).get("net", 0) for name in names]
            table.add_row(*([key] if par != "client" else []), client,
                          *(f"{n:,}" for n in nets),
                          *([f"{nets[-1] - nets[0]:+,}"] if len(names) > 1 else []))
    Console(width=None if sys.stdout.isatty() else 140).print(table)


@main.command()
@data_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
def anomalies(data: Path, database_url: str | None, as_json: bool) -> None:
    """List the stored events whose plugin figures differ from the server's recomputation
    (kinds: evites, estimation, par_subagent, cout, id)."""
    found = 0
    rows = list_anomalies(_store_settings(data, database_url))
    table = Table(box=box.SIMPLE_HEAD)
    for column in ("id", "type", "client", "anomalies", "recu_le"):
        table.add_column(column)
    for row in rows:
        found += 1
        if as_json:
            sys.stdout.write(json.dumps(row, ensure_ascii=False) + "\n")
        else:
            table.add_row(row["id"], row["type"], row["client"], ", ".join(row["anomalies"]),
                          row["recu_le"])
    if not as_json:
        Console(width=None if sys.stdout.isatty() else 160).print(table)
        click.echo(f"{found} event(s) with anomalies", err=True)


@main.command()
@data_option
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="Write to FILE (replaced when complete) instead of standard output.")
@click.option("--conflits", is_flag=True,
              help="Also write the differing re-sent versions kept as evidence (then an "
                   "id may appear twice; import records them as conflicts again).")
def export(data: Path, database_url: str | None, out: Path | None, conflits: bool) -> None:
    """Write the contract's economies.jsonl: one JSON line per stored event, the event as
    received plus recu_le, in store order. Streams; reads the store only."""
    settings = _store_settings(data, database_url)
    with closing(read_only_store(settings)) as store:
        columns = (TextColumn("export"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("events"), TimeRemainingColumn())
        with _progress(*columns) as bar, _output(out) as stream:
            task = bar.add_task("export", total=store.head())
            written = 0
            for line in export_lines(store, conflits=conflits,
                                     progress=lambda n: bar.advance(task, n)):
                stream.write(line)
                written += 1
    if out is not None:
        click.echo(f"{written:,} events written to {out}", err=True)


@contextmanager
def _output(out: Path | None) -> Iterator[Any]:
    """Standard output, or ``out`` written beside and renamed once complete (an
    interrupted export never leaves a truncated file under the asked name)."""
    if out is None:
        yield sys.stdout
        sys.stdout.flush()
        return
    partial = out.with_name(out.name + ".partiel")
    try:
        with _private(partial) as f:
            yield f
        os.replace(partial, out)
    finally:
        partial.unlink(missing_ok=True)


def _private(path: Path) -> Any:
    """``path`` opened for writing text, created (or truncated) with mode 0600: exports
    and reports hold session ids and figures, like the data files (ADR-0010)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # an existing file keeps its mode otherwise
    return open(fd, "w", encoding="utf-8", newline="\n")  # noqa: SIM115


@main.command(name="import")
@data_option
@click.argument("files", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--strict", is_flag=True,
              help="Import nothing if any line is refused (the files are read twice).")
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
def import_(data: Path, database_url: str | None, files: tuple[Path, ...], strict: bool,
            as_json: bool) -> None:
    """Ingest FILES of JSON lines (an exported economies.jsonl, or plain events) with the
    validation and dedup of POST /economies, 500 events a transaction, keeping each
    line's recu_le. Refused lines are listed with their number and skipped; with
    --strict nothing is imported then. A second import of the same files stores nothing
    (every event is a doublon). Exit status 1 when a line was refused."""
    paths = list(files)
    size = sum(p.stat().st_size for p in paths)
    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
               TransferSpeedColumn(), TimeRemainingColumn())
    with _progress(*columns) as bar:
        if strict:
            task = bar.add_task("check", total=size)
            checked = check_files(paths, progress=lambda n: bar.advance(task, n))
            if checked.refusees:
                bar.stop()
                _print_refused(checked.refusees)
                raise click.ClickException(
                    f"{len(checked.refusees):,} line(s) refused: nothing imported (--strict)")
        task = bar.add_task("import", total=size)
        settings = Settings(data=data, token="", database_url=database_url)
        try:
            with open_services(settings, run_projections=False) as services:
                report = import_files(services.store, paths,
                                      progress=lambda n: bar.advance(task, n))
        except (ProjectionMismatch, ZoneInfoNotFoundError, StoreUnavailable) as exc:
            raise click.ClickException(str(exc)) from None
    if as_json:
        json.dump(report.as_dict(), sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        _print_refused(report.refusees)
        click.echo(f"recus {report.recus:,}, doublons {report.doublons:,}, conflits "
                   f"{report.conflits:,}, refused lines {len(report.refusees):,} "
                   f"(of {report.lignes:,})")
    if report.refusees:
        sys.exit(1)


def _print_refused(refused: list[Any]) -> None:
    for line in refused:
        click.echo(f"refused: {line}", err=True)


@main.command()
@data_option
@fuseau_option
@journal_option
@click.option("--html", "html_file", required=True, metavar="FILE",
              type=click.Path(dir_okay=False, path_type=Path),
              help="The HTML file to write (self-contained: no network needed).")
@click.option("--depuis", metavar="YYYY-MM-DD", help="First day of the period (inclusive).")
@click.option("--jusqu-au", "jusqu_au", metavar="YYYY-MM-DD",
              help="Last day of the period (inclusive).")
def rapport(data: Path, database_url: str | None, fuseau: str | None, journal: Path | None,
            html_file: Path, depuis: str | None, jusqu_au: str | None) -> None:
    """Write the report: today's net and the period's, net per day, evites vs pilotage vs
    corrections per day, the taux de reprise per preset and format, cost per model,
    anomalies and conflicts, in one self-contained HTML page. Folds whatever is pending
    first, as bilan does."""
    try:
        check_bounds("jour", depuis, jusqu_au)
    except ValueError as exc:
        message = str(exc).replace("jusqu_au", "--jusqu-au")
        raise click.BadParameter(message, param_hint="--depuis/--jusqu-au") from None
    if fuseau is not None:
        _check_zone(fuseau)
    _store_settings(data, database_url)  # no store: say so rather than create one
    settings = Settings(data=data, token="", fuseau=fuseau, journal=journal,
                        database_url=database_url)
    try:
        with open_services(settings, run_projections=False) as services:
            services.runner.catch_up()
            page = render_report(services, depuis, jusqu_au)
    except (ProjectionMismatch, ZoneInfoNotFoundError) as exc:
        raise click.ClickException(str(exc)) from None
    with _private(html_file) as f:
        f.write(page)
    click.echo(f"report written to {html_file}", err=True)


@main.command()
@_data
@click.option("--from", "source", required=True, metavar="URL",
              callback=lambda ctx, param, value: _check_url(value),
              help="The event store to copy: sqlite:///PATH or postgresql://...")
@click.option("--to", "target", required=True, metavar="URL",
              callback=lambda ctx, param, value: _check_url(value),
              help="Where to copy it: postgresql://USER@HOST:PORT/DBNAME (or sqlite:///).")
def migrate(data: Path, source: str, target: str) -> None:
    """Copy every stored event of --from into --to (ids, payloads and recu_le unchanged,
    in the same order; events already there are skipped, so running it again copies
    nothing new), rebuild the bilan there by replay, and check it equals the source's
    (unless the target has taken events of its own since).
    Stop the server on --from first, or run it again afterwards for the tail."""
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeRemainingColumn())
    with _progress(*columns) as bar:
        tasks: dict[str, Any] = {}

        def progress(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total)
            bar.update(tasks[stage], completed=done, total=total)

        try:
            result = migrate_store(data, source, target, progress)
        except (ValueError, MigrationMismatch, StoreUnavailable, ProjectionMismatch) as exc:
            raise click.ClickException(str(exc)) from None
    checked = ("its bilan equal to the source's" if result.en_plus == 0 else
               f"not compared with the source's: the target holds {result.en_plus:,} "
               "events of its own")
    click.echo(f"copied {result.copies:,} events ({result.deja:,} already there) from "
               f"{redact(source)} to {redact(target)}; {result.projection} rebuilt there "
               f"({result.evenements:,} events), {checked}")
