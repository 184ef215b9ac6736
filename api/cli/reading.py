"""``bilan`` and ``rapport``: the bilan as a table or JSON, and the report page."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import cast

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
from miam_economies.domain.bilan import FIGURES, Figures, FiguresModele
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


MODELE = ["tours", "pilotage", "usd"]
"""A model's columns in the table (``FiguresModele``): its turns, its pilotage (the
formula's ``cout``) and ``usd`` at the model's own prices; a model saves nothing itself
(ADR-0006), so its delegations, evites and corrections would print 0, its net −pilotage."""

Row = tuple[tuple[str, ...], str, list[str]]
"""A table row: the keys of ``par`` (and ``puis``), the client, the cells."""


def _cells(figures: Figures, rate: Fraction | None) -> list[str]:
    # The six figures as the table prints them, then under a weighted formula (``rate``,
    # USD per million) the net in USD, exact (ADR-0130).
    taux = figures.taux_reprise
    cells = [f"{n:,}" for n in (figures.delegations, figures.evites, figures.pilotage,
                                figures.corrections, figures.net)]
    cells.append("-" if taux is None else f"{taux:.1%}")
    return cells + ([] if rate is None else [dollars(usd(figures.net, rate))])


def _modele_cells(tours: int, pilotage: int, micro: int | None,
                  rate: Fraction | None) -> list[str]:
    # ``micro``: the model's own-price cost in micro-dollars (≥ 0), None without a known
    # price, printed with its six decimals as the report does; under a weighted formula
    # the pilotage in USD at its reference model's, exact.
    own = "-" if micro is None else dollars(f"{micro // 1_000_000}.{micro % 1_000_000:06d}")
    cells = [f"{tours:,}", f"{pilotage:,}", own]
    return cells + ([] if rate is None else [dollars(usd(pilotage, rate))])


def _par_modele(lu: BilanLu, at: int, rate: Fraction | None) -> tuple[list[Row], list[str]]:
    """The rows of a breakdown by ``modele`` (its key the ``at``-th) and their total row's
    cells: turns, pilotage, ``usd`` (the rows' amounts summed, each rounded to the
    micro-dollar first: with ``--puis`` a period, a report's total per model, rounded
    once, may differ by a micro-dollar a row; ``-`` when a model has no known price)."""
    rows: list[Row] = []
    tours = pilotage = 0
    total_micro: int | None = 0
    for names, client, cell in lu.lignes():
        # check_bounds pairs modele with periods or client only: every cell is a model's.
        model = cast(FiguresModele, cell)
        price = model.usd(names[at])
        micro = None if price is None else round(price * 1_000_000)  # usd() is whole micros
        rows.append((names, client, _modele_cells(model.tours, model.cout, micro, rate)))
        tours, pilotage = tours + model.tours, pilotage + model.cout
        total_micro = None if total_micro is None or micro is None else total_micro + micro
    return rows, _modele_cells(tours, pilotage, total_micro, rate)


def _print_table(lu: BilanLu) -> None:
    snapshot = lu.snapshot
    title = (f"bilan (formule {snapshot.formule}, position {snapshot.position:,}, "
             f"fuseau {snapshot.fuseau})")
    table = Table(title=title, box=box.SIMPLE_HEAD)
    rate = None if lu.prix is None else lu.prix.usd_par_million
    keys = [k for k in (snapshot.par, snapshot.puis) if k is not None]
    # A key named client is each row's client already (lignes gives it twice): one column.
    by_client = "client" in keys
    labels = keys if by_client else [*keys, "client"]
    if "modele" in keys:
        rows, total_cells = _par_modele(lu, keys.index("modele"), rate)
        columns = MODELE + (["pilotage USD"] if rate is not None else [])
    else:
        rows = [(names, client, _cells(figures(cell), rate))
                for names, client, cell in lu.lignes()]
        # The rows shown, summed (BilanLu.total_des_lignes): for bounded days, the period's.
        total_cells = _cells(lu.total_des_lignes(), rate)
        columns = [*FIGURES, *(["net USD"] if rate is not None else [])]
    for label in labels:
        table.add_column(label)
    for column in columns:
        table.add_column(column, justify="right", overflow="fold")
    for names, client, cells in rows:
        table.add_row(*names, *(() if by_client else (client,)), *cells)
    table.add_section()
    table.add_row(*[""] * (len(labels) - 1), "total", *total_cells, style="bold")
    console = _console()
    console.print(table)
    if "modele" in keys:
        console.print(_modele_line(lu), style="dim", soft_wrap=True, highlight=False)
    console.print(_provenance_line(lu), style="dim", soft_wrap=True, highlight=False)
    console.print(_checks_line(lu), style="dim", soft_wrap=True, highlight=False)


def _modele_line(lu: BilanLu) -> str:
    """What a breakdown by ``modele``'s columns hold, in one line under its table: a
    model's pilotage only, ``usd`` at the model's own prices, and under a weighted
    formula ``pilotage USD`` at the reference model's (ADR-0130)."""
    line = ("by modele: a model's turns and their pilotage only (it saves nothing itself); "
            "usd: those turns at the model's own API base prices (-: no known price)")
    if lu.prix is not None:
        line += f"; pilotage USD: at {lu.prix.reference}'s prices, the formula's unit"
    return line


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


