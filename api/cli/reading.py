"""``bilan`` and ``rapport``: the bilan as a table or JSON, and the report page."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import click
from rich import box
from rich.table import Table

from miam_economies.api.cli.csv_output import csv_option, one_output, print_csv
from miam_economies.api.cli.main import (
    _check_zone,
    _console,
    _note_champ_unseen,
    _print_json,
    _store_settings,
    data_option,
    fuseau_option,
    journal_option,
    lock_timeout_option,
    main,
    refused,
)
from miam_economies.api.cli.output_files import OUTPUT_FILE
from miam_economies.api.cli.output_files import private as _private
from miam_economies.api.http.report import drawing, render_report
from miam_economies.api.service.answers import bilan_answer
from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.csv_answers import bilan_csv
from miam_economies.api.service.reading import bilan_lu, locked
from miam_economies.api.service.results import BilanLu, figures
from miam_economies.api.service.settings import (
    Settings,
)
from miam_economies.domain.argent import dollars, usd
from miam_economies.domain.bilan import Figures
from miam_economies.domain.breakdowns import BoundNames, BoundsError, check_bounds

FLAGS = BoundNames(depuis="--depuis", jusqu_au="--jusqu-au", par="--par", puis="--puis")
"""The breakdown's parameters in ``check_bounds``'s messages, as the commands spell them."""


@main.command()
@data_option
@fuseau_option
@journal_option
@click.option("--par", metavar="NAME",
              help="Breakdown: client, jour, semaine, mois, modele, demande, session "
                   "(alone), or a journal field (preset, format...; journal.NAME for a "
                   "field named like the others).")
@click.option("--puis", metavar="NAME",
              help="Split each group of --par by a second dimension (the same names).")
@click.option("--depuis", metavar="YYYY-MM-DD",
              help="First day read (inclusive), when --par or --puis is a period.")
@click.option("--jusqu-au", "jusqu_au", metavar="YYYY-MM-DD",
              help="Last day read (inclusive), when --par or --puis is a period.")
@click.option("--json", "as_json", is_flag=True, help="Print the bilan as the API's JSON.")
@csv_option
@lock_timeout_option
def bilan(data: Path, database_url: str | None, fuseau: str | None, journal: Path | None,
          par: str | None, puis: str | None, depuis: str | None, jusqu_au: str | None,
          as_json: bool, as_csv: bool, lock_timeout: int) -> None:
    """Print the bilan, after folding any event (and journal line) not yet folded: a
    table, the API's JSON (--json) or one row per client and group as CSV (--csv).

    A data directory without a store gives an empty bilan with zero totals and a warning
    on standard error, and creates nothing (contract, point 4: "Fichier absent : section à
    zéro"). Projections locked by another process past --lock-timeout: the bilan as it
    stands, marked attente_expiree, with a warning (ADR-0104).
    """
    one_output(as_json, as_csv)
    try:
        check_bounds(par, depuis, jusqu_au, FLAGS, puis)
    except BoundsError as exc:
        raise click.UsageError(str(exc)) from None
    if fuseau is not None:
        _check_zone(fuseau)
    if not Settings(data=data, database_url=database_url).database.exists():
        click.echo(f"no event store in {data.resolve()}: empty bilan "
                   "(pass --data or set MIAM_ECONOMIES_DATA)", err=True)
    with refused():
        lu = bilan_lu(data, par=par, depuis=depuis, jusqu_au=jusqu_au, fuseau=fuseau,
                      journal=journal, database_url=database_url,
                      lock_timeout=lock_timeout, puis=puis)
    if not lu.champ_vu:
        _note_champ_unseen("--par or --puis")
    if as_json:
        _print_json(bilan_answer(lu))
    elif as_csv:
        print_csv(bilan_csv(lu))
    else:
        _print_table(lu)


FIGURES = ["delegations", "evites", "pilotage", "corrections", "net", "taux_reprise"]


def _cells(figures: Figures, rate: Fraction | None) -> list[str]:
    # The six figures as the table prints them, then under a weighted formula (``rate``,
    # USD per million) the net in USD, exact (ADR-0130).
    taux = figures.taux_reprise
    cells = [f"{n:,}" for n in (figures.delegations, figures.evites, figures.pilotage,
                                figures.corrections, figures.net)]
    cells.append("-" if taux is None else f"{taux:.1%}")
    return cells + ([] if rate is None else [dollars(usd(figures.net, rate))])


def _print_table(lu: BilanLu) -> None:
    snapshot = lu.snapshot
    title = (f"bilan (formule {snapshot.formule}, position {snapshot.position}, "
             f"fuseau {snapshot.fuseau})")
    table = Table(title=title, box=box.SIMPLE_HEAD)
    rate = None if lu.prix is None else lu.prix.usd_par_million
    keys = [k for k in (snapshot.par, snapshot.puis) if k is not None]
    for key in keys:
        table.add_column(key)
    table.add_column("client")
    for column in FIGURES + (["net USD"] if rate is not None else []):
        table.add_column(column, justify="right", overflow="fold")
    for names, client, cell in lu.lignes():
        table.add_row(*names, client, *_cells(figures(cell), rate))
    table.add_section()
    # The rows shown, summed (BilanLu.total_des_lignes): for bounded days, the period's.
    table.add_row(*[""] * len(keys), "total", *_cells(lu.total_des_lignes(), rate),
                  style="bold")
    console = _console()
    console.print(table)
    console.print(_provenance_line(lu), style="dim", soft_wrap=True, highlight=False)
    console.print(_checks_line(lu), style="dim", soft_wrap=True, highlight=False)


def _checks_line(lu: BilanLu) -> str:
    """What the JSON has beside the figures, in one line under the provenance (ADR-0165):
    anomalies by kind, conflicts, and the pilotages and corrections en_attente, which
    these figures count and the classement's do not (its taux may differ)."""
    kinds = lu.anomalies()
    detail = ", ".join(f"{kind} {n:,}" for kind, n in sorted(kinds.items()))
    return (f"anomalies {sum(kinds.values()):,}" + (f" ({detail})" if detail else "")
            + f", conflits {lu.conflits:,}, en_attente {lu.snapshot.en_attente:,} "
            "(pilotages and corrections whose delegation has not arrived: counted here, "
            "not in the classement)")


def _provenance_line(lu: BilanLu) -> str:
    """Where the figures come from, in one line under the table: formula, position
    against the store's head, events folded, zone, when, journal lines joined (and
    values left out), events set aside (ADR-0135)."""
    snapshot = lu.snapshot
    line = (f"provenance: formule {snapshot.formule}, position {snapshot.position:,} of "
            f"tete {lu.tete:,}, {snapshot.evenements:,} events, fuseau {snapshot.fuseau}, "
            f"genere_le {lu.genere_le}")
    journal = lu.journal
    if journal is not None:
        line += f", journal {journal.get('lignes', 0):,} lines"
        if journal.get("valeurs_ecartees"):
            line += f" ({journal['valeurs_ecartees']:,} values left out)"
        if journal.get("erreur"):
            line += f" (unreadable: {journal['erreur']})"
    if snapshot.ecartes:  # never silent (ADR-0135): the server's log names each by position
        line += f", {snapshot.ecartes:,} events set aside (see the folding process's log)"
    if lu.attente_expiree:
        line += ", wait expired"
    return line


@main.command()
@data_option
@fuseau_option
@journal_option
@click.option("--html", "html_file", required=True, metavar="FILE",
              type=OUTPUT_FILE,
              help="The HTML file to write (self-contained: no network needed); its "
                   "folder must exist, and '-' is refused (no standard output).")
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
        raise click.UsageError(str(exc)) from None
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


