"""``session``: one Claude Code session, the plugin's figures beside Claude Code's own
replies, the share saved and the rapprochement (SPEC, "Claude Code's own record: relevés,
sessions, and the share saved", "A session"; ADR-0176, ADR-0177)."""

from __future__ import annotations

from pathlib import Path

import click

from miam_economies.api.cli.main import (
    _check_zone,
    _print_json,
    data_option,
    fuseau_option,
    lock_timeout_option,
    main,
    refused,
)
from miam_economies.api.service.reading import session_lu_of
from miam_economies.api.service.session_answers import SessionLu, session_answer


@main.command()
@click.argument("session_id", metavar="ID")
@data_option
@fuseau_option
@lock_timeout_option
@click.option("--json", "as_json", is_flag=True,
              help="Print the session as the API's JSON (GET /economies/sessions/ID).")
def session(session_id: str, data: Path, database_url: str | None, fuseau: str | None,
            lock_timeout: int, as_json: bool) -> None:
    """One Claude Code session (ID: its session_id, the transcript's file name): the
    plugin's figures of its events, what Claude Code's own replies cost it (imported by
    `miam-economies releves`), the share of its spend the delegations saved
    (part_economisee = net / (cost + net)), and each subagent's pilotage set beside its
    own replies with a verdict. Figures in tokens. A session neither source has seen is
    an error (exit status 1)."""
    if fuseau is not None:
        _check_zone(fuseau)
    with refused():
        lu = session_lu_of(session_id, data, fuseau=fuseau, database_url=database_url,
                           lock_timeout=lock_timeout)
    if lu is None:
        raise click.ClickException(f"no event and no reply for session {session_id!r} "
                                   "(pass --data; import transcripts with "
                                   "`miam-economies releves`)")
    if as_json:
        _print_json(session_answer(lu))
        return
    for line in lines(lu):
        click.echo(line)


def lines(lu: SessionLu) -> list[str]:
    """The session in words, one figure group a line (tokens, thousands separated)."""
    f = lu.figures
    out = [f"session {lu.session_id}",
           f"  plugin: delegations {f.delegations:,}, evites {f.evites:,}, pilotage "
           f"{f.pilotage:,}, corrections {f.corrections:,}, net {f.net:,}"]
    if lu.claude is None:
        out.append("  claude: no reply imported (miam-economies releves)")
    else:
        t = lu.claude.total
        out.append(f"  claude: {t.reponses:,} repl{'y' if t.reponses == 1 else 'ies'} "
                   f"({t.incompletes:,} incomplete), "
                   f"cost {t.cout:,}")
    share = lu.part_economisee
    out.append("  part_economisee: " + ("unknown" if share is None else f"{share:.1%}"))
    for entry in lu.entries:
        releve = "no reply imported" if entry.releve is None else (
            f"releve {entry.releve.cout:,}, ecart {entry.ecart:,}")
        turns = entry.plugin.tours
        out.append(f"  agent {entry.agent_id}: plugin {entry.plugin.cout:,} over "
                   f"{turns:,} turn{'' if turns == 1 else 's'}, {releve}: {entry.verdict}")
    return out
