"""``classement``: which preset (or format, client...) is ahead, and how sure that is."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfoNotFoundError

import click
from rich import box
from rich.table import Table

from miam_economies.api.cli.main import (
    _check_zone,
    _console,
    data_option,
    fuseau_option,
    journal_option,
    lock_timeout_option,
    main,
)
from miam_economies.api.service.reading import read_classement
from miam_economies.api.service.services import DEFAULT_MIN, NOT_RANKED
from miam_economies.api.service.settings import Settings
from miam_economies.projections.view import ProjectionMismatch


@main.command()
@data_option
@fuseau_option
@journal_option
@click.option("--par", metavar="NAME", required=True,
              help="The groups to rank: client, or a journal field (preset, format...).")
@click.option("--min", "minimum", type=click.IntRange(min=1), default=DEFAULT_MIN,
              show_default=True, help="Demandes a group needs to be ranked.")
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON document.")
@lock_timeout_option
def classement(data: Path, database_url: str | None, fuseau: str | None,
               journal: Path | None, par: str, minimum: int, as_json: bool,
               lock_timeout: int) -> None:
    """Rank the groups of --par by net per demande, with 95 % intervals, after folding
    whatever is pending (SPEC, "Ranking presets: the classement"; ADR-0072).

    Groups with at least --min demandes are ranked (rang 1, 2...); the others follow,
    unranked. Overlapping intervals mean the order between two groups is not yet sure.
    """
    if par in NOT_RANKED:
        raise click.BadParameter(f"{par!r} does not group demandes: use client or a "
                                 "journal field (preset, format...)", param_hint="--par")
    if fuseau is not None:
        _check_zone(fuseau)
    if not Settings(data=data, database_url=database_url).database.exists():
        click.echo(f"no event store in {data.resolve()}: nothing to rank "
                   "(pass --data or set MIAM_ECONOMIES_DATA)", err=True)
    try:
        result = read_classement(data, par=par, minimum=minimum, fuseau=fuseau,
                                 journal=journal, database_url=database_url,
                                 lock_timeout=lock_timeout)
    except (ProjectionMismatch, ZoneInfoNotFoundError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        json.dump(result, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        _print_table(result)


def _interval(bounds: list[float] | None, fmt: str) -> str:
    return "-" if bounds is None else f"[{bounds[0]:{fmt}}, {bounds[1]:{fmt}}]"


def _print_table(result: dict[str, Any]) -> None:
    title = (f"classement par {result['par']} (formule {result['formule']}, position "
             f"{result['position']:,}, min {result['min']}, by {result['critere']})")
    table = Table(title=title, box=box.SIMPLE_HEAD)
    for column in ("rang", result["par"], "demandes", "net", "net/demande", "95 % interval",
                   "taux_reprise", "95 % interval"):
        table.add_column(column, justify="left" if column == result["par"] else "right")
    for g in result["groupes"]:
        taux = g["taux_reprise"]
        table.add_row(
            "-" if g["rang"] is None else str(g["rang"]), g["cle"], f"{g['demandes']:,}",
            f"{g['net']:,}", f"{g['net_par_demande']:,.0f}",
            _interval(g["intervalle_net_par_demande"], ",.0f"),
            "-" if taux is None else f"{taux:.1%}",
            _interval(g["intervalle_taux_reprise"], ".1%"),
            style=None if g["suffisant"] else "dim")
    console = _console()
    console.print(table)
    if not result["groupes"]:
        console.print(f"no demande with a delegation to rank by {result['par']}", style="dim")
    elif any(g["rang"] is None for g in result["groupes"]):
        console.print(f"rang -: fewer than {result['min']} demandes, not ranked", style="dim")
