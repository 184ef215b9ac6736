"""``classement``: which preset (or format, client...) is ahead, and how sure that is."""

from __future__ import annotations

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
    data_option,
    fuseau_option,
    journal_option,
    lock_timeout_option,
    main,
    refused,
)
from miam_economies.api.service.answers import PERIMETRE, classement_answer
from miam_economies.api.service.csv_answers import classement_csv
from miam_economies.api.service.reading import classement_lu
from miam_economies.api.service.results import ClassementLu
from miam_economies.api.service.settings import Settings
from miam_economies.domain.argent import dollars, usd
from miam_economies.domain.classement import (
    CRITERES,
    DEFAULT_MIN,
    MAX_COMPARED,
    SELON,
    ClassementError,
    Groupe,
    check_parametres,
)
from miam_economies.domain.intervalles import Intervalle
from miam_economies.domain.verdict_words import LEVEL, derive_phrases, lettres, phrases


@main.command()
@data_option
@fuseau_option
@journal_option
@click.option("--par", metavar="NAME", required=True,
              help="The groups to rank: client, or a journal field (preset, format...).")
@click.option("--selon", metavar=f"[{'|'.join(sorted(CRITERES))}]", default=SELON,
              show_default=True,
              help="Rank by taux (taux_reprise, less rework first) or net (per demande).")
@click.option("--min", "minimum", type=int, default=DEFAULT_MIN, show_default=True,
              help="Demandes a group needs to be ranked.")
@click.option("--apparier", metavar="FIELD", default=None,
              help="Compare the groups on the tasks both ran: the journal field of a task "
                   "(test_id...).")
@click.option("--depuis", metavar="YYYY-MM-DD",
              help="Keep the demandes delegated on or after this day (the window).")
@click.option("--jusqu-au", "jusqu_au", metavar="YYYY-MM-DD",
              help="Keep the demandes delegated on or before this day (the window).")
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON document.")
@csv_option
@lock_timeout_option
def classement(data: Path, database_url: str | None, fuseau: str | None,
               journal: Path | None, par: str, selon: str, minimum: int,
               apparier: str | None, depuis: str | None, jusqu_au: str | None,
               as_json: bool, as_csv: bool, lock_timeout: int) -> None:
    """Rank the groups of --par by the taux de reprise (or net per demande), with 95 %
    intervals, and say which group is ahead of which (99 %, adjusted for the number of
    pairs) or that they cannot be told apart yet, after folding whatever is pending (SPEC,
    "Ranking presets: the classement"; ADR-0081).

    Groups with at least --min demandes (and, by taux, evites above 0) are ranked (rang
    1, 2...); the others follow, unranked. Groups sharing a letter cannot be told apart.
    --csv prints one row per group (the pairs' verdicts are in --json only).
    --depuis/--jusqu-au rank only the demandes delegated within those days; a group whose
    recent quarter differs from the rest of its history is said to have changed (ADR-0167).
    """
    one_output(as_json, as_csv)
    try:
        check_parametres(par, selon, apparier, minimum, depuis, jusqu_au)
    except ClassementError as exc:  # the domain's rules and words; the flag named here
        raise click.BadParameter(str(exc), param_hint=f"--{exc.parametre.replace('_', '-')}"
                                 ) from None
    if fuseau is not None:
        _check_zone(fuseau)
    if not Settings(data=data, database_url=database_url).database.exists():
        click.echo(f"no event store in {data.resolve()}: nothing to rank "
                   "(pass --data or set MIAM_ECONOMIES_DATA)", err=True)
    with refused():
        lu = classement_lu(data, par=par, minimum=minimum, selon=selon, apparier=apparier,
                           depuis=depuis, jusqu_au=jusqu_au, fuseau=fuseau, journal=journal,
                           database_url=database_url, lock_timeout=lock_timeout)
    if not lu.champ_vu:
        _note_champ_unseen("--par or --apparier")
    if as_json:
        _print_json(classement_answer(lu))
    elif as_csv:
        print_csv(classement_csv(lu))
    else:
        _print_table(lu)


def _interval(bounds: Intervalle | None, fmt: str, none: str = "-") -> str:
    if bounds is None:
        return "-"
    low, high = (none if b is None else f"{b:{fmt}}" for b in bounds)
    return f"[{low}, {high}]"


def _taux_interval(g: Groupe) -> str:
    bounds = g.intervalle_taux_reprise
    if bounds is not None and g.corrections == 0:
        return "no correction yet"
    if bounds is None and (g.sessions or 0) >= 2 and g.evites > 0:
        return "no spread yet"  # corrections proportional to evites (ADR-0166)
    return _interval(bounds, ".1%", none="?")


def _net_interval(g: Groupe) -> str:
    if g.intervalle_net_par_demande is None and (g.sessions or 0) >= 2:
        return "no spread yet"  # every demande's net alike: never [x, x] (ADR-0166)
    return _interval(g.intervalle_net_par_demande, ",.0f")


def _print_table(lu: ClassementLu) -> None:
    critere = CRITERES[lu.selon]
    paired = "" if lu.apparier is None else f", paired on {lu.apparier}"
    window = "".join(f", {name} {day}" for name, day in (("depuis", lu.depuis),
                                                          ("jusqu_au", lu.jusqu_au)) if day)
    title = (f"classement par {lu.par} (formule {lu.formule}, position "
             f"{lu.position:,}, min {lu.minimum}, by {critere}{paired}{window})")
    ranked = [g.cle for g in lu.groupes if g.rang is not None]
    # verdict_words reads the verdicts in their wire shape (Comparaison.as_dict).
    comparaisons = [v.as_dict() for v in lu.verdicts]
    letters = lettres(ranked, comparaisons)
    # Under a weighted formula the net in USD too, exact, as the bilan table's (ADR-0130).
    rate = None if lu.prix is None else lu.prix.usd_par_million
    table = Table(title=title, box=box.SIMPLE_HEAD)
    for column in ("rang", lu.par, "demandes", "sessions", "taux_reprise", "95 % interval",
                   "net/demande", "95 % interval", "net",
                   *(() if rate is None else ("net USD",)), "groupe"):
        table.add_column(column, justify="left" if column in (lu.par, "groupe")
                         else "right")
    for g in lu.groupes:
        taux = g.taux_reprise
        table.add_row(
            "-" if g.rang is None else str(g.rang), g.cle, f"{g.demandes:,}",
            "-" if g.sessions is None else f"{g.sessions:,}",
            "-" if taux is None else f"{taux:.1%}", _taux_interval(g),
            f"{g.net_par_demande:,.0f}", _net_interval(g), f"{g.net:,}",
            *(() if rate is None else (dollars(usd(g.net, rate)),)),
            letters.get(g.cle, ""), style=None if g.rang is not None else "dim")
    console = _console()
    console.print(table)
    if not lu.groupes:
        console.print(f"no demande with a delegation to rank by {lu.par}", style="dim")
        return
    for sentence in phrases(ranked, comparaisons):
        console.print(f"  {sentence}")
    for sentence in derive_phrases([g.as_dict() for g in lu.groupes], critere):
        console.print(f"  {sentence}")
    # Why a group's taux here can differ from the bilan's (ADR-0165).
    console.print(f"figures: {PERIMETRE} (the bilan counts en_attente too: its taux "
                  "may differ)", style="dim")
    if letters and len(ranked) > 1:
        console.print(f"groupe: groups sharing a letter cannot be told apart ({LEVEL} "
                      "over all pairs)", style="dim")
    if lu.apparier is not None and len(ranked) > 1:
        console.print(f"rang: by each group's own {critere}; verdicts, letters: "
                      f"on the tasks both ran ({lu.apparier})", style="dim")
    if lu.ranked > MAX_COMPARED:
        console.print(f"only the {MAX_COMPARED} best-ranked groups are compared",
                      style="dim")
    if any(g.rang is None for g in lu.groupes):
        console.print(f"rang -: fewer than {lu.minimum} demandes"
                      + (" or no evites, not ranked" if critere == "taux_reprise"
                         else ", not ranked"), style="dim")
