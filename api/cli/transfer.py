"""``export``, ``import`` and ``migrate``: the store to a file, files to the store
(ADR-0022), and one backend to another (ADR-0031)."""

from __future__ import annotations

import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import click
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from miam_economies.api.cli.main import (
    _check_url,
    _check_zone,
    _data,
    _print_json,
    _progress,
    _store_settings,
    data_option,
    fuseau_option,
    main,
    refused,
)
from miam_economies.api.cli.output_files import OUTPUT_FILE, writing
from miam_economies.api.service.bootstrap import open_services, open_store
from miam_economies.api.service.export import export_lines
from miam_economies.api.service.importing import check_files, import_files
from miam_economies.api.service.migrate import migrate as migrate_store
from miam_economies.api.service.settings import (
    DEFAULT_MAX_BODY,
    Settings,
)
from miam_economies.api.store.backends import redact


@main.command()
@data_option
@click.option("--out", type=OUTPUT_FILE, metavar="FILE",
              help="Write to FILE (replaced when complete) instead of standard output, "
                   "the default ('-' is refused); its folder must exist.")
@click.option("--conflits", is_flag=True,
              help="Also write the differing re-sent versions kept as evidence (then an "
                   "id may appear twice; import records them as conflicts again).")
def export(data: Path, database_url: str | None, out: Path | None, conflits: bool) -> None:
    """Write the contract's economies.jsonl: one JSON line per stored event, the event as
    received plus recu_le, in store order. Streams; reads the store only."""
    settings = _store_settings(data, database_url)
    with closing(open_store(settings.database, read_only=True)) as store:
        columns = (TextColumn("export"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("events"), TimeRemainingColumn())
        with _progress(*columns) as bar, writing(out) as stream:
            task = bar.add_task("export", total=store.head())
            written = 0
            for line in export_lines(store, conflits=conflits,
                                     progress=lambda n: bar.advance(task, n)):
                stream.write(line)
                written += 1
    if out is not None:
        click.echo(f"{written:,} events written to {out}", err=True)


@main.command(name="import")
@data_option
@click.argument("files", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--strict", is_flag=True,
              help="Import nothing if any line is refused (the files are read twice).")
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
@click.option("--max-body", default=DEFAULT_MAX_BODY, show_default=True,
              type=click.IntRange(min=1), envvar="MIAM_ECONOMIES_MAX_BODY", show_envvar=True,
              help="The body limit of the server whose export this is, bytes: a line may "
                   "hold 8 times it (ADR-0135).")
@fuseau_option
def import_(data: Path, database_url: str | None, files: tuple[Path, ...], strict: bool,
            as_json: bool, max_body: int, fuseau: str | None) -> None:
    """Ingest FILES of JSON lines (an exported economies.jsonl, or plain events) or batch
    documents {"evenements": [...]} (such as the contract's example), with the
    validation and dedup of POST /economies, 500 events a transaction, keeping each
    event's recu_le. Refused events are listed with their line number (or index in a
    document) and skipped; with --strict nothing is imported then. A second import of
    the same files stores nothing (every event is a doublon). Exit status 1 when an
    event was refused. A new data directory's bilan takes --fuseau's zone, as the
    commands that read it next do (MIAM_ECONOMIES_TZ), not the machine's."""
    if fuseau is not None:
        _check_zone(fuseau)
    paths = list(files)
    size = sum(p.stat().st_size for p in paths)
    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
               TransferSpeedColumn(), TimeRemainingColumn())
    with _progress(*columns) as bar:
        if strict:
            task = bar.add_task("check", total=size)
            checked = check_files(paths, progress=lambda n: bar.advance(task, n),
                                  max_body=max_body)
            if checked.refusees:
                bar.stop()
                _print_refused(checked.refusees)
                raise click.ClickException(
                    f"{len(checked.refusees):,} line(s) refused: nothing imported (--strict)")
        task = bar.add_task("import", total=size)
        settings = Settings(data=data, database_url=database_url, fuseau=fuseau)
        with refused(), open_services(settings, run_projections=False) as services:
            report = import_files(services.store, paths,
                                  progress=lambda n: bar.advance(task, n),
                                  max_body=max_body)
    if as_json:
        _print_json(report.as_dict(), indent=None)
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

        with refused():
            result = migrate_store(data, source, target, progress)
    checked = ("its bilan equal to the source's" if result.en_plus == 0 else
               f"not compared with the source's: the target holds {result.en_plus:,} "
               "events of its own")
    click.echo(f"copied {result.copies:,} events ({result.deja:,} already there) from "
               f"{redact(source)} to {redact(target)}; {result.projection} rebuilt there "
               f"({result.evenements:,} events), {checked}")
