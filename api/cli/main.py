"""The ``miam-economies`` command group, the options its commands share, and the helpers
they share (progress bars, usage errors, refusals, JSON output; the files they write are
``api.cli.output_files``'s).

Thin over functions: each command resolves ``Settings`` from its flags and the
``MIAM_ECONOMIES_*`` environment, then calls the service layer or the HTTP app.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import click
from eventsourcing.persistence import PersistenceError
from rich.console import Console
from rich.progress import (
    Progress,
)

from miam_economies.api.service.settings import (
    DEFAULT_DATA,
    Settings,
    not_a_zone,
)
from miam_economies.api.store.backends import Database
from miam_economies.domain.errors import MiamEconomiesError

OURS: tuple[type[Exception], ...] = (MiamEconomiesError,)
"""Our refusals, which any command may meet: the root (ADR-0123)."""

REFUSED: tuple[type[Exception], ...] = (ZoneInfoNotFoundError, ValueError)
"""The standard library's refusals a command's work may meet (a zone the zone database
lacks, a value the layers below refuse), caught only around that work (``refused``)."""

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
    """``value`` if it is a database URL ``api.store.backends`` reads, else a usage error."""
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


lock_timeout_option = click.option(
    "--lock-timeout", default=5, show_default=True, type=click.IntRange(min=1),
    envvar="MIAM_ECONOMIES_LOCK_TIMEOUT", show_envvar=True,
    help="Seconds to wait for a database's lock; past them the figures are read as they "
         "stand (marked attente_expiree).",
)


class _Commands(click.Group):
    """The command group; a refusal of ours (``OURS``: a missing extra such as a
    PostgreSQL URL without the driver, a store unavailable, a projection built with
    another zone...) or a database that cannot be used (locked past the lock timeout,
    unreachable) is one line of error and exit status 1, never a traceback (ADR-0044,
    ADR-0104, ADR-0123).
    The library's warnings (a projection rebuilt, projections locked, a journal missing)
    are printed on standard error as ``warning: ...`` lines while nothing else handles
    the process's logs (``project`` configures its own)."""

    def invoke(self, ctx: click.Context) -> Any:
        warnings = logging.StreamHandler(sys.stderr)
        warnings.setLevel(logging.WARNING)
        warnings.setFormatter(logging.Formatter("warning: %(message)s"))
        # What Python's last-resort handler would print, said as a warning; a command that
        # configured the root logger routes them itself.
        warnings.addFilter(lambda record: not logging.getLogger().handlers)
        logger = logging.getLogger("miam_economies")
        logger.addHandler(warnings)
        try:
            return super().invoke(ctx)
        except OURS as exc:
            raise click.ClickException(str(exc)) from None
        except (PersistenceError, sqlite3.Error) as exc:
            # sqlite3's own: the library opens connections outside its error translation.
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise click.ClickException(f"the database cannot be used: {first}") from None
        finally:
            logger.removeHandler(warnings)


@click.group(cls=_Commands)
def main() -> None:
    """Token savings of MIAM's Claude Code plugin: ingestion and bilan."""


def _console() -> Console:
    """Standard output for tables. Off a terminal rich would assume 80 columns and cut
    figures short; there it gets all the room a table needs (a figure is never cut: see
    the figure columns' ``overflow="fold"``)."""
    return Console(width=None if sys.stdout.isatty() else 1_000)


def _progress(*columns: Any) -> Progress:
    """A progress display on standard error, drawn only when it is a terminal: in a pipe
    or a log file the command stays quiet."""
    console = Console(stderr=True)
    return Progress(*columns, console=console, disable=not console.is_terminal)


@contextmanager
def refused() -> Iterator[None]:
    """Around a command's work (a read, a replay, an import...): ``REFUSED`` is one line
    of error and exit status 1, as ``OURS`` is everywhere. Elsewhere a ``ValueError``
    stays a traceback: a bug."""
    try:
        yield
    except REFUSED as exc:
        raise click.ClickException(str(exc)) from None


def _print_json(document: Any, indent: int | None = 2) -> None:
    """``document`` on standard output as JSON (UTF-8 as is), then a newline."""
    json.dump(document, sys.stdout, ensure_ascii=False, indent=indent)
    sys.stdout.write("\n")


def _note_champ_unseen(options: str) -> None:
    """Say on standard error what an answer's ``"champ_vu": false`` says in its JSON
    (ADR-0164): no journal line with a field was read yet, so whether ``options`` (the
    command's, e.g. ``"--par or --puis"``) name a field cannot be known."""
    click.echo("note: MIAM's journal has no line with a field yet, so whether "
               f"{options} names one cannot be known: every demande is under (inconnu)",
               err=True)


def _check_zone(fuseau: str) -> None:
    """Raise ``click.BadParameter`` unless ``fuseau`` is an IANA zone name."""
    try:
        ZoneInfo(fuseau)
    except (ZoneInfoNotFoundError, ValueError):
        raise click.BadParameter(not_a_zone(fuseau), param_hint="--fuseau") from None


def _store_settings(data: Path, database_url: str | None) -> Settings:
    """The settings of an existing store; a usage error when there is none."""
    settings = Settings(data=data, database_url=database_url)
    if not settings.database.exists():
        raise click.ClickException(f"no event store in {data.resolve()} (pass --data)")
    return settings


def _where(settings: Settings) -> str:
    """Where the events are, for a message (no password)."""
    database = settings.database
    return str(database) if database.is_postgres else str(database.path)
