"""One Claude Code session as read (``SessionLu``) and its wire shapes: the JSON document
of ``GET /economies/sessions/{session_id}``, ``miam-economies session --json`` and
``read_session``, and the bilan's ``rapprochement`` summary (SPEC, "Claude Code's own
record: relevés, sessions, and the share saved"; ADR-0176, ADR-0177).

The view gives the session's rows (``projections.view.SessionLue``); the pure rules
(``domain.sessions``: the replies' cost and the share saved; ``domain.rapprochement``:
the verdicts and the summary) make the figures, under the serving projection's formula.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from miam_economies.api.service.answers import en_usd
from miam_economies.domain.argent import usd
from miam_economies.domain.bilan import Figures
from miam_economies.domain.formulas import Formule, Prix
from miam_economies.domain.rapprochement import (
    Rapproche,
    SessionRapprochee,
    rapprochement,
    resume,
)
from miam_economies.domain.sessions import Claude, claude_of, part_economisee, total_of
from miam_economies.projections.session_rows import SessionLue, SessionRapprocheeLue


@dataclass(frozen=True)
class SessionLu:
    """One session as read: ``session_id``; ``figures``, the plugin's figures of its
    events (every client summed, tokens; zeros when the plugin sent nothing);
    ``claude``, what its merged replies cost (None when none was imported);
    ``entries``, the rapprochement of each subagent with a pilotage (by agent id);
    ``prix``, the formula's price table under a weighted formula (then every figure is
    in its weighted tokens and has its ``en_usd``: ADR-0130), else None."""

    session_id: str
    figures: Figures
    claude: Claude | None
    entries: list[Rapproche]
    prix: Prix | None = None

    @property
    def part_economisee(self) -> float | None:
        """net / (claude.cout + net), a fraction; None without ``claude`` or when that
        denominator is <= 0 (``domain.sessions.part_economisee``)."""
        return part_economisee(self.figures.net, self.claude)


def session_lu(session_id: str, lue: SessionLue, formule: Formule) -> SessionLu | None:
    """The ``SessionLu`` of the view's rows ``lue`` under ``formule`` (the serving
    projection's: its cost rule for the replies), or None when neither source has seen
    the session (no plugin event, no reply: a 404)."""
    if lue.figures is None and not lue.replies:
        return None
    claude = claude_of(lue.replies, formule)
    return SessionLu(session_id, lue.figures or Figures(), claude,
                     rapprochement(lue.pilotages, claude), formule.prix)


def session_answer(lu: SessionLu) -> dict[str, Any]:
    """The session's document (SPEC, "A session"): ``{"session_id", "economies":
    {"delegations", "evites", "pilotage", "corrections", "net", "taux_reprise"}, "claude":
    {"reponses", "incompletes", "usage", "cout", "par_agent"} or null, "part_economisee",
    "rapprochement": [{"agent_id", "plugin", "releve", "ecart", "verdict"}, ...]}``,
    tokens (exact integers) but the two ratios. Under a weighted formula ``economies``
    and ``claude`` each have their ``en_usd`` (exact decimal text; ADR-0130)."""
    economies: dict[str, Any] = lu.figures.as_dict()
    claude = None if lu.claude is None else lu.claude.as_dict()
    if lu.prix is not None:
        rate = lu.prix.usd_par_million
        economies["en_usd"] = en_usd(lu.figures, rate)
        if claude is not None and lu.claude is not None:
            claude["en_usd"] = {"cout": usd(lu.claude.total.cout, rate)}
    return {"session_id": lu.session_id, "economies": economies, "claude": claude,
            "part_economisee": lu.part_economisee,
            "rapprochement": [entry.as_dict() for entry in lu.entries]}


def ligne(lu: SessionLu) -> str:
    """The session in one line of text for Claude Code's status line (SPEC, "Where a
    person looks"): the net (tokens, thousands separated), the share saved when known
    (a percentage, one decimal) and the delegations; no newline."""
    parts = [f"MIAM net {lu.figures.net:,} tokens"]
    share = lu.part_economisee
    if share is not None:
        parts.append(f"{share:.1%} saved")
    n = lu.figures.delegations
    parts.append(f"{n} delegation{'' if n == 1 else 's'}")
    return " · ".join(parts)


def rapprochement_resume(sessions: Mapping[str, SessionRapprocheeLue]) -> dict[str, Any]:
    """The bilan's ``rapprochement`` (SPEC, "In the bilan"; ``domain.rapprochement.
    resume``) of ``sessions``: the view's sessions with plugin events and replies
    (``BilanView.sessions_rapprochees``), their replies summed per agent under the
    projection's formula by the fold (ADR-0177)."""
    both = []
    for lue in sessions.values():
        if not lue.par_agent:
            continue
        claude = Claude(total_of(lue.par_agent.values()), lue.par_agent)
        both.append(SessionRapprochee(lue.figures.net, claude,
                                      rapprochement(lue.pilotages, claude)))
    return resume(both)
