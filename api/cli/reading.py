"""``bilan`` and ``rapport``: the bilan as a table or JSON, and the report page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich import box
from rich.table import Table

from miam_economies.api.cli.main import (
    _check_zone,
    _console,
    _print_json,
    _private,
    _store_settings,
    data_option,
    fuseau_option,
    journal_option,
    lock_timeout_option,
    main,
    refused,
)
from miam_economies.api.http.report import drawing, render_report
from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.reading import locked, read_bilan
from miam_economies.api.service.settings import (
    Settings,
)
from miam_economies.domain.bilan import BoundNames, BoundsError, Figures, check_bounds

FLAGS = BoundNames(jusqu_au="--jusqu-au", par_jour="--par jour")
"""The day bounds' parameters in ``check_bounds``'s messages, as the commands spell them
(``depuis`` left bare, as these messages have always had it)."""


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
@lock_timeout_option
def bilan(data: Path, database_url: str | None, fuseau: str | None, journal: Path | None,
          par: str | None, depuis: str | None, jusqu_au: str | None, as_json: bool,
          lock_timeout: int) -> None:
    """Print the bilan, after folding any event (and journal line) not yet folded.

    A data directory without a store gives an empty bilan with zero totals and a warning
    on standard error, and creates nothing (contract, point 4: "Fichier absent : section à
    zéro"). Projections locked by another process past --lock-timeout: the bilan as it
    stands, marked attente_expiree, with a warning (ADR-0104).
    """
    try:
        check_bounds(par, depuis, jusqu_au, FLAGS)
    except BoundsError as exc:
        raise click.BadParameter(str(exc), param_hint="--depuis/--jusqu-au") from None
    if fuseau is not None:
        _check_zone(fuseau)
    if not Settings(data=data, database_url=database_url).database.exists():
        click.echo(f"no event store in {data.resolve()}: empty bilan "
                   "(pass --data or set MIAM_ECONOMIES_DATA)", err=True)
    with refused():
        result = read_bilan(data, par=par, depuis=depuis, jusqu_au=jusqu_au, fuseau=fuseau,
                            journal=journal, database_url=database_url,
                            lock_timeout=lock_timeout)
    if as_json:
        _print_json(result)
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
        table.add_column(column, justify="right", overflow="fold")
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
    console = _console()
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
@lock_timeout_option
def rapport(data: Path, database_url: str | None, fuseau: str | None, journal: Path | None,
            html_file: Path, depuis: str | None, jusqu_au: str | None,
            lock_timeout: int) -> None:
    """Write the report: today's net and the period's, net per day, evites vs pilotage vs
    corrections per day, the taux de reprise per preset and format, cost per model,
    anomalies and conflicts, in one self-contained HTML page. Folds whatever is pending
    first, as bilan does (projections locked past --lock-timeout: the report of the
    figures as they stand, with a warning)."""
    try:
        check_bounds("jour", depuis, jusqu_au, FLAGS)
    except BoundsError as exc:
        raise click.BadParameter(str(exc), param_hint="--depuis/--jusqu-au") from None
    if fuseau is not None:
        _check_zone(fuseau)
    drawing()  # without the report extra, say so (MissingExtra) before opening anything
    _store_settings(data, database_url)  # no store: say so rather than create one
    settings = Settings(data=data, fuseau=fuseau, journal=journal,
                        database_url=database_url, lock_timeout=lock_timeout)
    with refused(), open_services(settings, run_projections=False) as services:
        caught_up = services.runner.catch_up_unless_locked()
        page = render_report(services, depuis, jusqu_au)
        if not caught_up:
            locked(services.projection.position(), services.store.head())
    with _private(html_file) as f:
        f.write(page)
    click.echo(f"report written to {html_file}", err=True)


