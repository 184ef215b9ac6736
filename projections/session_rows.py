"""What the view gives back of a Claude Code session (ADR-0176, ADR-0177): its rows as the
session route reads them (``SessionLue``) and as the bilan's rapprochement reads them
(``SessionRapprocheeLue``). Values only; the tables are ``sql_par_session``'s and
``sql_releves_agents``'."""

from __future__ import annotations

from typing import NamedTuple

from miam_economies.domain.bilan import Figures
from miam_economies.domain.rapprochement import PilotageAgent
from miam_economies.domain.releves import Observation
from miam_economies.domain.sessions import Consommation

__all__ = ["SessionLue", "SessionRapprocheeLue"]


class SessionLue(NamedTuple):
    """One session as the view holds it: ``figures`` (its plugin events' figures, every
    client summed, tokens; None when the plugin sent nothing for it), ``pilotages`` (each
    subagent's, by agent id, every client summed) and ``replies`` (Claude Code's merged
    replies of the session, in key order; empty when none was imported)."""

    figures: Figures | None
    pilotages: dict[str, PilotageAgent]
    replies: list[Observation]


class SessionRapprocheeLue(NamedTuple):
    """One session both sources saw, as the bilan's rapprochement reads it: ``figures``
    (its plugin figures, every client summed, tokens), ``pilotages`` (each subagent's,
    by agent id) and ``par_agent`` (its replies summed per agent, None: the main agent;
    ADR-0177)."""

    figures: Figures
    pilotages: dict[str, PilotageAgent]
    par_agent: dict[str | None, Consommation]
