"""Claude Code's replies summed per session and agent (``bilan_releves_agents``), kept as
the replies' rows change, so that the bilan's rapprochement reads a row per agent of the
sessions both sources saw, not every reply (ADR-0177).

A reply's row is the join of its relevés (``sql_releves``, ADR-0173): a later relevé may
grow its counters, give it a ``stop_reason`` or an agent. So a page's fold reads each of
its replies' row as it stands, merges it with the page's observation by
``domain.releves.merge`` (the rule the row's upsert writes in SQL), and moves the reply's
part of its agent's sums from what it was to what it is: the sums are those of the rows,
whatever the order of relevés and pages. A reply's cost is ``domain.sessions.
cout_reponse`` under the projection's formula, exact tokens (ADR-0051).
"""

from __future__ import annotations

from collections import defaultdict

from miam_economies.domain.events import Usage
from miam_economies.domain.formulas import Formule
from miam_economies.domain.releves import Observation, ReplyKey, merge
from miam_economies.domain.sessions import Consommation, cout_reponse
from miam_economies.projections.delta import PageDelta
from miam_economies.projections.sql_dialect import SqlDialect
from miam_economies.projections.sql_schema import USAGE_SUMS, Cursor

MAIN = ""
"""The main agent's ``agent_key`` (a key column cannot be NULL on PostgreSQL)."""

Part = list[int]
"""A reply's part of its agent's sums: reponses, incompletes, four counters, cout."""


def _part(reply: Observation, formule: Formule, sign: int) -> Part:
    u = reply.usage
    return [sign, sign * reply.incomplete, sign * u.input_tokens, sign * u.output_tokens,
            sign * u.cache_read_input_tokens, sign * u.cache_creation_input_tokens,
            sign * cout_reponse(reply, formule)]


class ReleveAgentsWriter:
    """Keeps ``bilan_releves_agents`` beside ``bilan_releves`` (see the module)."""

    def __init__(self, dialect: SqlDialect):
        self.dialect = dialect
        self._upsert = ("INSERT INTO bilan_releves_agents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                        "ON CONFLICT (projection, session_id, agent_key) DO UPDATE SET "
                        + dialect.added("bilan_releves_agents", ("reponses", "incompletes"),
                                        USAGE_SUMS))

    def fold(self, c: Cursor, name: str, delta: PageDelta,
             stored: dict[ReplyKey, Observation]) -> None:
        """Move each of ``delta.releves``' replies' part from its row as ``stored`` (read
        before the page's upsert; absent: a new reply) to its merge with the page's, in
        ``c``'s write transaction."""
        changes: defaultdict[tuple[str, str], Part] = defaultdict(lambda: [0] * 7)
        for key, seen in delta.releves.items():
            before = stored.get(key)
            after = seen if before is None else merge(before, seen)
            if after == before:
                continue
            for reply, sign in ((before, -1), (after, 1)):
                if reply is None:
                    continue
                acc = changes[(key.session_id, reply.agent_id or MAIN)]
                for i, value in enumerate(_part(reply, delta.formule, sign)):
                    acc[i] += value
        tk = self.dialect.tokens
        c.executemany(self._upsert, [
            (name, session_id, agent, n, k, *(tk(v) for v in sums))
            for (session_id, agent), (n, k, *sums) in sorted(changes.items())])

    @staticmethod
    def of_paired_sessions(c: Cursor, name: str
                           ) -> dict[str, dict[str | None, Consommation]]:
        """Each session of ``bilan_sessions_rapprochees``: its replies summed per agent
        (None: the main agent), agents with no reply left out."""
        c.execute("SELECT session_id, agent_key, reponses, incompletes, "
                  f"{', '.join(USAGE_SUMS)} "
                  "FROM bilan_releves_agents WHERE projection = ? AND session_id IN "
                  "(SELECT session_id FROM bilan_sessions_rapprochees WHERE projection = ?)",
                  (name, name))
        out: defaultdict[str, dict[str | None, Consommation]] = defaultdict(dict)
        for session_id, agent, n, k, i, o, cr, cc, cout in c.fetchall():
            if int(n) > 0:
                out[session_id][agent or None] = Consommation(
                    int(n), int(k), Usage(int(i), int(o), int(cr), int(cc)), int(cout))
        return dict(out)
