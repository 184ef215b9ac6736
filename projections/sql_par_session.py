"""Each Claude Code session's figures (``bilan_par_session``) and each subagent's
pilotages in it (``bilan_session_agents``): what a page's fold adds to them, and the
reads of one session and of every session both sources saw (ADR-0176, ADR-0177).

Both tables are sums over events keyed by the event's own ``session_id``, so any order of
events, pages and replays gives the same rows, as for every other table (ADR-0004); token
sums are exact by the dialect's rule (ADR-0051) and read back as Python integers. A read
keyed by session is a primary-key range: its cost is the session's rows, not the
history's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from miam_economies.domain.bilan import Figures
from miam_economies.domain.events import Usage
from miam_economies.domain.rapprochement import PilotageAgent
from miam_economies.projections.delta import PageDelta
from miam_economies.projections.session_rows import SessionLue, SessionRapprocheeLue
from miam_economies.projections.sql_dialect import SqlDialect
from miam_economies.projections.sql_releves import RelevesWriter
from miam_economies.projections.sql_releves_agents import ReleveAgentsWriter
from miam_economies.projections.sql_schema import FIGURES, USAGE_SUMS, Cursor, chunks


class SessionsFiguresWriter:
    """Adds a page's per-session figures and per-agent pilotages to their tables, and
    reads them back."""

    def __init__(self, dialect: SqlDialect):
        self.dialect = dialect
        added = dialect.added
        self._sessions = (
            "INSERT INTO bilan_par_session VALUES (?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (projection, session_id, client) DO UPDATE SET "
            + added("bilan_par_session", ("delegations",),
                    ("evites", "pilotage", "corrections")))
        self._agents = (
            "INSERT INTO bilan_session_agents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (projection, session_id, agent_id, client) DO UPDATE SET "
            + added("bilan_session_agents", ("tours",), USAGE_SUMS))

    def fold(self, c: Cursor, name: str, delta: PageDelta) -> None:
        """Add ``delta.sessions`` and ``delta.agents`` to projection ``name``'s rows, in
        primary-key order, in ``c``'s write transaction."""
        tk = self.dialect.tokens
        if delta.sessions:
            c.executemany(self._sessions, [
                (name, session_id, client, f.delegations, tk(f.evites), tk(f.pilotage),
                 tk(f.corrections))
                for (session_id, client), f in sorted(delta.sessions.items())])
        if delta.agents:
            c.executemany(self._agents, [
                (name, session_id, agent_id, client, m.tours, tk(m.input_tokens),
                 tk(m.output_tokens), tk(m.cache_read_input_tokens),
                 tk(m.cache_creation_input_tokens), tk(m.cout))
                for (session_id, agent_id, client), m in sorted(delta.agents.items())])

    @staticmethod
    def pair(c: Cursor, name: str, delta: PageDelta) -> None:
        """Note in ``bilan_sessions_rapprochees`` each session of ``delta`` (its plugin
        events' or its relevés') that now has both plugin rows and replies, after the
        page's rows are written; lookups by key, for the page's sessions only (ADR-0177).
        """
        plugin = sorted({session_id for session_id, _ in delta.sessions})
        releves = sorted({key.session_id for key in delta.releves})
        both: set[str] = set()
        for sessions, other in ((plugin, "bilan_releves"), (releves, "bilan_par_session")):
            for chunk in chunks(sessions):
                c.execute(f"SELECT DISTINCT session_id FROM {other} WHERE projection = ? "
                          f"AND session_id IN ({', '.join('?' * len(chunk))})",
                          [name, *chunk])
                both.update(str(row[0]) for row in c.fetchall())
        if both:
            c.executemany("INSERT INTO bilan_sessions_rapprochees VALUES (?, ?) "
                          "ON CONFLICT DO NOTHING", [(name, s) for s in sorted(both)])

    @staticmethod
    def session(c: Cursor, name: str, session_id: str) -> SessionLue:
        """Session ``session_id`` of projection ``name`` (``SessionLue``), three reads by
        key in ``c``'s transaction."""
        c.execute(f"SELECT {FIGURES} FROM bilan_par_session "
                  "WHERE projection = ? AND session_id = ?", (name, session_id))
        rows = c.fetchall()
        figures = None if not rows else sum(
            (Figures(*map(int, row)) for row in rows), Figures())
        c.execute(f"SELECT session_id, agent_id, tours, {', '.join(USAGE_SUMS)} "
                  "FROM bilan_session_agents WHERE projection = ? AND session_id = ?",
                  (name, session_id))
        pilotages = _pilotages(c.fetchall()).get(session_id, {})
        return SessionLue(figures, pilotages, RelevesWriter.replies(c, name, session_id))

    @staticmethod
    def sessions_rapprochees(c: Cursor, name: str) -> dict[str, SessionRapprocheeLue]:
        """Every session of projection ``name`` with plugin events and replies, by id
        (the bilan's ``rapprochement``, SPEC "In the bilan"): three reads of the rows of
        the sessions ``pair`` noted, a row per client or agent, never a reply."""
        both = "SELECT session_id FROM bilan_sessions_rapprochees WHERE projection = ?"
        c.execute(f"SELECT session_id, {FIGURES} FROM bilan_par_session "
                  f"WHERE projection = ? AND session_id IN ({both})", (name, name))
        figures: defaultdict[str, Figures] = defaultdict(Figures)
        for session_id, *row in c.fetchall():
            figures[session_id].add(Figures(*map(int, row)))
        if not figures:
            return {}
        c.execute(f"SELECT session_id, agent_id, tours, {', '.join(USAGE_SUMS)} "
                  "FROM bilan_session_agents "
                  f"WHERE projection = ? AND session_id IN ({both})", (name, name))
        pilotages = _pilotages(c.fetchall())
        replies = ReleveAgentsWriter.of_paired_sessions(c, name)
        return {session_id: SessionRapprocheeLue(figures[session_id],
                                                 pilotages.get(session_id, {}),
                                                 replies.get(session_id, {}))
                for session_id in sorted(figures)}

    @staticmethod
    def breakdown(c: Cursor, name: str) -> dict[str, dict[str, Figures]]:
        """``?par=session``: ``{session_id: {client: figures}}``, sessions in id order,
        clients by name (tokens)."""
        c.execute(f"SELECT session_id, client, {FIGURES} FROM bilan_par_session "
                  "WHERE projection = ? ORDER BY session_id, client", (name,))
        out: defaultdict[str, dict[str, Figures]] = defaultdict(dict)
        for session_id, client, *row in c.fetchall():
            out[session_id][client] = Figures(*map(int, row))
        return dict(out)


def _pilotages(rows: Iterable[tuple[object, ...]]) -> dict[str, dict[str, PilotageAgent]]:
    # Rows (session_id, agent_id, tours, four counters, cout) of any clients, summed by
    # session and agent.
    sums: defaultdict[tuple[str, str], list[int]] = defaultdict(lambda: [0] * 6)
    for session_id, agent_id, *values in rows:
        acc = sums[(str(session_id), str(agent_id))]
        for i, value in enumerate(values):
            acc[i] += int(value)  # type: ignore[call-overload]
    out: defaultdict[str, dict[str, PilotageAgent]] = defaultdict(dict)
    for (session_id, agent_id), (tours, i, o, cr, cc, cout) in sorted(sums.items()):
        out[session_id][agent_id] = PilotageAgent(tours, Usage(i, o, cr, cc), cout)
    return dict(out)
