"""``replay``, ``compare`` and ``anomalies``: the history under another formula or zone
(ADR-0009)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import click
from rich import box
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from miam_economies.api.cli.main import (
    _check_zone,
    _console,
    _print_json,
    _progress,
    _store_settings,
    data_option,
    main,
    refused,
)
from miam_economies.api.service.formules import builtin_names
from miam_economies.api.service.replay import compare as compare_formulas
from miam_economies.api.service.replay import (
    list_anomalies,
    replay_formula,
)
from miam_economies.api.service.replay import replay as replay_history


@main.command()
@data_option
@click.option("--formule", required=True, metavar="NAME",
              help=f"Formula to rebuild the bilan with: {builtin_names()}, or a name of "
                   "yours recorded with --tarifs.")
@click.option("--tarifs", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              metavar="FILE", help="TOML price file (USD per million tokens) to freeze under "
                                   "NAME, a new name (or the same file again): the bilan "
                                   "weighs tokens at these prices (docs/formulas.md).")
@click.option("--fuseau", metavar="ZONE", help="Time zone of the rebuilt bilan's days "
              "(default: the active bilan's).")
@click.option("--reconstruire", is_flag=True,
              help="Rebuild the projection from the first event even if it exists "
                   "(not the one that serves).")
def replay(data: Path, database_url: str | None, formule: str, tarifs: Path | None,
           fuseau: str | None, reconstruire: bool) -> None:
    """Rebuild the bilan from the event store under FORMULE (or ZONE), beside the one that
    serves, then switch to it. A running server keeps serving and ingesting, and follows
    the switch; interrupted, a replay resumes where it stopped. With --tarifs, FORMULE is
    your prices, recorded with the file's checksum (ADR-0131)."""
    if fuseau is not None and not fuseau.strip():
        raise click.BadParameter("give a zone, or leave the option out", param_hint="--fuseau")
    settings = _store_settings(data, database_url)
    with refused():  # refuse a bad formula, price file or zone before drawing progress
        replay_formula(settings, formule, tarifs)
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
            if done >= total:
                # What follows the last page takes a while, and an interrupt there leaves
                # the groups to be computed later (ADR-0179): say it is at work.
                rate += "; now the journal, the groups and the classement"
            bar.update(task, completed=done, total=total, rate=rate)

        with refused():
            result = replay_history(settings, formule, fuseau, progress,
                                    reconstruire=reconstruire, tarifs=tarifs)
    if result["prix"] is not None:
        click.echo(f"{formule}: prices of {result['prix']['fichier']}, sha256 "
                   f"{result['prix']['sha256']}")
    unpriced_warning(formule, result["non_tarifes"])
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
              help="Formulas to compare, comma-separated (e.g. v1,pondere-v1): built in, "
                   "or yours recorded by replay --tarifs.")
@click.option("--par", type=click.Choice(["client", "jour", "modele"]), default="client",
              show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
def compare(data: Path, database_url: str | None, formules: str, par: str,
            as_json: bool) -> None:
    """Show the bilan under several formulas side by side, per group. A dry run: nothing
    is written, nothing switches."""
    names = [name.strip() for name in formules.split(",") if name.strip()]
    with refused():
        result = compare_formulas(_store_settings(data, database_url), names, par)
    for name, unpriced in result["non_tarifes"].items():
        unpriced_warning(name, unpriced)
    if as_json:
        _print_json(result)
        return
    table = Table(title=f"compare {', '.join(names)} par {par} (fuseau {result['fuseau']})",
                  box=box.SIMPLE_HEAD)
    if par != "client":
        table.add_column(par)
    table.add_column("client")
    for name in names:
        table.add_column(f"net {name}", justify="right", overflow="fold")
    if len(names) > 1:
        table.add_column(f"{names[-1]} - {names[0]}", justify="right", overflow="fold")
    for key, clients in result["groupes"].items():
        for client, by_formula in clients.items():
            nets = [by_formula.get(name, {}).get("net", 0) for name in names]
            table.add_row(*([key] if par != "client" else []), client,
                          *(f"{n:,}" for n in nets),
                          *([f"{nets[-1] - nets[0]:+,}"] if len(names) > 1 else []))
    _console().print(table)


def unpriced_warning(formule: str, unpriced: dict[str, Any] | None) -> None:
    """One line on standard error naming the store's models that weighted formula
    ``formule``'s table does not price (``unpriced``: the service's ``non_tarifes``),
    whose pilotage weighs as its reference model; nothing when it prices them all or
    weighs nothing (ADR-0162). Not an error: a table may leave out a model on purpose."""
    if unpriced and unpriced["modeles"]:
        click.echo(f"warning: {formule} has no prices for {', '.join(unpriced['modeles'])} "
                   f"(models of this store): their pilotage weighs as "
                   f"{unpriced['reference']}, the reference", err=True)


def _values_text(values: dict[str, dict[str, Any]]) -> str:
    """One event's anomalies for the table: ``kind plugin -> serveur`` each, ``; ``
    between them (token counts with thousands separators, ``estimation``'s three
    counters named)."""
    def value(v: Any) -> str:
        if isinstance(v, dict):
            return " ".join(f"{k} {value(n)}" for k, n in v.items())
        return f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)
    return "; ".join(f"{kind} {value(e['plugin'])} -> {value(e['serveur'])}"
                     for kind, e in values.items())


@main.command()
@data_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
def anomalies(data: Path, database_url: str | None, as_json: bool) -> None:
    """List the stored events whose plugin figures differ from the server's recomputation
    (kinds: evites, estimation, par_subagent, cout, id), each with the plugin's value and
    the server's."""
    found = 0
    rows = list_anomalies(_store_settings(data, database_url))
    table = Table(box=box.SIMPLE_HEAD)
    for column in ("id", "type", "client", "anomalies (plugin -> serveur)", "recu_le"):
        table.add_column(column, overflow="fold")
    for row in rows:
        found += 1
        if as_json:
            sys.stdout.write(json.dumps(row, ensure_ascii=False) + "\n")
        else:
            table.add_row(row["id"], row["type"], row["client"], _values_text(row["valeurs"]),
                          row["recu_le"])
    if not as_json:
        _console().print(table)
        click.echo(f"{found} event(s) with anomalies", err=True)


