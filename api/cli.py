"""The ``miam-economies`` console script (SPEC, "Interfaces"): ``serve`` and ``bilan``.

Thin over functions: each command resolves ``Settings`` from its flags and the
``MIAM_ECONOMIES_*`` environment, then calls the app or the services.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
import uvicorn
from rich import box
from rich.console import Console
from rich.table import Table

from api.app import create_app
from api.services import open_services
from api.settings import DEFAULT_DATA, DEFAULT_MAX_BODY, Settings, resolve_token
from api.store import iso_utc
from domain.formulas import V1
from projections.bilan import BilanSnapshot

data_option = click.option(
    "--data", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_DATA,
    envvar="MIAM_ECONOMIES_DATA", show_default=True, show_envvar=True,
    help="Data directory: event store, projections and token file.",
)


@click.group()
def main() -> None:
    """Token savings of MIAM's Claude Code plugin: ingestion and bilan."""


@main.command()
@data_option
@click.option("--host", default="127.0.0.1", show_default=True, envvar="MIAM_ECONOMIES_HOST",
              show_envvar=True, help="Interface to bind; keep loopback unless behind a proxy.")
@click.option("--port", default=8090, show_default=True, type=int, envvar="MIAM_ECONOMIES_PORT",
              show_envvar=True, help="TCP port (MIAM's MCP server port).")
@click.option("--max-body", default=DEFAULT_MAX_BODY, show_default=True,
              type=click.IntRange(min=1),
              envvar="MIAM_ECONOMIES_MAX_BODY", show_envvar=True,
              help="Largest accepted request body, bytes.")
@click.option("--lock-timeout", default=5, show_default=True, type=click.IntRange(min=1),
              envvar="MIAM_ECONOMIES_LOCK_TIMEOUT", show_envvar=True,
              help="Seconds to wait for the store's write lock before answering 503.")
# From the environment only in practice: a token on the command line shows in `ps`.
@click.option("--token", envvar="MIAM_ECONOMIES_TOKEN", show_envvar=True, hidden=True)
def serve(data: Path, host: str, port: int, max_body: int, lock_timeout: int,
          token: str | None) -> None:
    """Serve POST /economies and GET /economies/bilan; the projection runs in-process."""
    token, token_file, created = resolve_token(data, token)
    if token_file is not None:
        how = "created with mode 0600" if created else "existing"
        click.echo(f"bearer token: in {token_file.resolve()} ({how})", err=True)
    else:
        click.echo("bearer token: from MIAM_ECONOMIES_TOKEN", err=True)
    settings = Settings(data=data, token=token, max_body=max_body, lock_timeout=lock_timeout)
    uvicorn.run(create_app(settings), host=host, port=port, log_level="info",
                timeout_keep_alive=5)


@main.command()
@data_option
@click.option("--json", "as_json", is_flag=True, help="Print the bilan as JSON.")
def bilan(data: Path, as_json: bool) -> None:
    """Print the bilan, after folding any event the projection has not seen yet.

    A data directory without a store gives an empty bilan with zero totals and a warning
    on standard error (contract, point 4: "Fichier absent : section à zéro").
    """
    if (data / "economies.sqlite").exists():
        with open_services(Settings(data=data, token=""), run_projections=False) as services:
            services.runner.catch_up()
            result = services.bilan()
    else:
        # Read-only: asking for a bilan must not create a store where there is none.
        click.echo(f"no event store in {data.resolve()}: empty bilan "
                   "(pass --data or set MIAM_ECONOMIES_DATA)", err=True)
        result = BilanSnapshot(V1.name, 0, 0, {}).as_dict(0, iso_utc(datetime.now(UTC)))
    if as_json:
        json.dump(result, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        _print_table(result)


def _print_table(result: dict[str, Any]) -> None:
    table = Table(title=f"bilan (formule {result['formule']}, position {result['position']})",
                  box=box.SIMPLE_HEAD)
    columns = ["delegations", "evites", "pilotage", "corrections", "net", "taux_reprise"]
    table.add_column("client")
    for column in columns:
        table.add_column(column, justify="right")

    def cells(figures: dict[str, Any]) -> list[str]:
        taux = figures["taux_reprise"]
        return [f"{figures[c]:,}" for c in columns[:-1]] + [
            "-" if taux is None else f"{taux:.1%}"]

    for client, figures in result["economies"].items():
        table.add_row(client, *cells(figures))
    table.add_section()
    table.add_row("total", *cells(result["total"]), style="bold")
    # Off a terminal rich assumes 80 columns and would truncate the figures' names.
    Console(width=None if sys.stdout.isatty() else 120).print(table)
