"""The ``miam-economies`` console script (SPEC, "Interfaces"): ``serve`` and ``bilan``.

Thin over functions: each command resolves ``Settings`` from its flags and the
``MIAM_ECONOMIES_*`` environment, then calls the app or the services.
"""

from __future__ import annotations

import json
import sys
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
@click.option("--host", default="127.0.0.1", show_default=True, envvar="MIAM_ECONOMIES_HOST")
@click.option("--port", default=8090, show_default=True, type=int, envvar="MIAM_ECONOMIES_PORT")
@click.option("--max-body", default=DEFAULT_MAX_BODY, show_default=True, type=int,
              envvar="MIAM_ECONOMIES_MAX_BODY", show_envvar=True,
              help="Largest accepted request body, bytes.")
@click.option("--token", envvar="MIAM_ECONOMIES_TOKEN", show_envvar=True, hidden=True)
def serve(data: Path, host: str, port: int, max_body: int, token: str | None) -> None:
    """Serve POST /economies and GET /economies/bilan; the projection runs in-process."""
    token, token_file = resolve_token(data, token)
    if token_file is not None:
        click.echo(f"bearer token: in {token_file} (mode 0600)", err=True)
    else:
        click.echo("bearer token: from MIAM_ECONOMIES_TOKEN", err=True)
    settings = Settings(data=data, token=token, max_body=max_body)
    uvicorn.run(create_app(settings), host=host, port=port, log_level="info",
                timeout_keep_alive=5)


@main.command()
@data_option
@click.option("--json", "as_json", is_flag=True, help="Print the bilan as JSON.")
def bilan(data: Path, as_json: bool) -> None:
    """Print the bilan, after folding any event the projection has not seen yet.

    An empty or new data directory gives an empty bilan with zero totals (contract,
    point 4: "Fichier absent : section à zéro").
    """
    settings = Settings(data=data, token="")
    with open_services(settings, run_projections=False) as services:
        services.runner.catch_up()
        result = services.bilan()
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
