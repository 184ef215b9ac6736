"""``releves``: Claude Code's transcripts into the store as relevés (SPEC, "Claude Code's
own record: relevés, sessions, and the share saved", "Import"; ADR-0174)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from miam_economies.api.cli.main import (
    _check_zone,
    _print_json,
    data_option,
    fuseau_option,
    main,
    refused,
)
from miam_economies.api.service.releves import import_releves
from miam_economies.api.service.transcripts import TranscriptPathMissing


@main.command()
@data_option
@click.argument("paths", metavar="[PATH]...", nargs=-1,
                type=click.Path(exists=True, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
@fuseau_option
def releves(data: Path, database_url: str | None, paths: tuple[Path, ...],
            as_json: bool, fuseau: str | None) -> None:
    """Import Claude Code's transcripts as relevés: each reply's lines merged by key (the
    largest of each counter, never a sum), one relevé a reply, stored once. Each PATH is
    a transcript file or a folder searched for *.jsonl; without PATH, the projects
    folders of $CLAUDE_CONFIG_DIR (comma-separated), else of ~/.claude and
    ~/.config/claude. Read-only on the transcripts; a second import of the same files
    stores nothing. A PATH that does not exist is refused before anything is read; a
    file that cannot be read is named and skipped (what was read of it before the fault
    is kept), and the exit status is 1. A new data directory's bilan takes --fuseau's
    zone (MIAM_ECONOMIES_TZ), as the reading commands do."""
    if fuseau is not None:
        _check_zone(fuseau)
    with refused():
        try:
            done = import_releves(paths, data, database_url=database_url, fuseau=fuseau)
        except TranscriptPathMissing as exc:  # gone since the check above
            raise click.BadParameter(str(exc), param_hint="PATH") from None
    for unreadable in done.illisibles:
        click.echo(f"unreadable, skipped: {unreadable}", err=True)
    if not paths and not done.fichiers and not done.illisibles:
        click.echo("no transcript read: no Claude Code projects folder with a *.jsonl file "
                   "was found (name one as PATH, or set CLAUDE_CONFIG_DIR)", err=True)
    if as_json:
        _print_json(done.as_dict(), indent=None)
    else:
        click.echo(f"files {done.fichiers:,}, lines {done.lignes:,}, replies "
                   f"{done.reponses:,}, new relevés {done.nouvelles:,}, doublons "
                   f"{done.doublons:,}, incomplete replies {done.incompletes:,}, "
                   f"ignored lines {done.ignorees:,}")
    if done.illisibles:
        sys.exit(1)
