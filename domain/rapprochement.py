"""The rapprochement (pure): each subagent's pilotages, as the plugin read them, set beside
Claude Code's own replies of that agent, the gap, a verdict, and the bilan's summary of
them over every session both sources saw.

Source: SPEC, "Claude Code's own record: relevés, sessions, and the share saved", items
"Rapprochement" and "In the bilan"; ADR-0177. Token figures are exact integers
(ADR-0051); a share is a float fraction. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from miam_economies.domain.events import Usage
from miam_economies.domain.sessions import Claude, Consommation, share, usage_dict

VERDICTS = ("concorde", "plugin_sous_releve", "plugin_au_dessus", "releve_incomplet",
            "non_observe")
"""The rapprochement's verdicts, in the SPEC's words; the bilan's summary counts each."""

COMPARED = ("concorde", "plugin_sous_releve", "plugin_au_dessus")
"""The verdicts of a complete relevé: the bilan's ``ecart`` sums over these alone."""


@dataclass(frozen=True)
class PilotageAgent:
    """The plugin's pilotages of one agent in one session, summed: ``tours`` (pilotage
    events), ``usage`` (their four counters, tokens) and ``cout`` (their cost under the
    fold's formula, tokens: the plugin's own ``cout`` under ``v1``)."""

    tours: int
    usage: Usage
    cout: int

    def as_dict(self) -> dict[str, Any]:
        """``{"tours", "usage", "cout"}`` (SPEC, "Rapprochement", ``plugin``)."""
        return {"tours": self.tours, "usage": usage_dict(self.usage), "cout": self.cout}


def verdict(plugin_cout: int, releve: Consommation | None) -> str:
    """The rapprochement's verdict of one agent (SPEC, "Rapprochement"): ``non_observe``
    without a relevé; ``releve_incomplet`` when any of its replies is incomplete;
    ``concorde`` when |plugin_cout - releve.cout| <= max(10, 1 % of releve.cout) (exact:
    100 |ecart| <= releve.cout, no float); else ``plugin_sous_releve`` when the plugin's
    cost is lower (its net is overstated), ``plugin_au_dessus`` when higher. Tokens."""
    if releve is None:
        return "non_observe"
    if releve.incompletes:
        return "releve_incomplet"
    ecart = plugin_cout - releve.cout
    if abs(ecart) <= 10 or 100 * abs(ecart) <= releve.cout:
        return "concorde"
    return "plugin_sous_releve" if ecart < 0 else "plugin_au_dessus"


@dataclass(frozen=True)
class Rapproche:
    """One agent's rapprochement entry: ``agent_id``, the plugin's ``plugin`` figures,
    its own replies ``releve`` (None: none imported), ``ecart`` = plugin.cout -
    releve.cout (tokens; None without relevé, given when incomplete) and ``verdict``."""

    agent_id: str
    plugin: PilotageAgent
    releve: Consommation | None
    ecart: int | None
    verdict: str

    def as_dict(self) -> dict[str, Any]:
        """``{"agent_id", "plugin", "releve", "ecart", "verdict"}`` (SPEC)."""
        return {"agent_id": self.agent_id, "plugin": self.plugin.as_dict(),
                "releve": None if self.releve is None else self.releve.as_dict(),
                "ecart": self.ecart, "verdict": self.verdict}


def rapprochement(pilotages: Mapping[str, PilotageAgent], claude: Claude | None
                  ) -> list[Rapproche]:
    """One entry per agent of the session that has a pilotage (``pilotages``, by agent
    id), its relevé from ``claude.par_agent`` (the replies of the same agent id), sorted
    by ``agent_id`` (SPEC, "Rapprochement")."""
    agents = {} if claude is None else claude.par_agent
    entries = []
    for agent_id in sorted(pilotages):
        plugin, releve = pilotages[agent_id], agents.get(agent_id)
        entries.append(Rapproche(agent_id, plugin, releve,
                                 None if releve is None else plugin.cout - releve.cout,
                                 verdict(plugin.cout, releve)))
    return entries


@dataclass(frozen=True)
class SessionRapprochee:
    """What the bilan's summary takes of one session both sources saw: the plugin's
    ``net`` (tokens, every client of the session), Claude Code's ``claude`` (not None)
    and the session's rapprochement ``entries``."""

    net: int
    claude: Claude
    entries: list[Rapproche]


def resume(sessions: Iterable[SessionRapprochee]) -> dict[str, Any]:
    """The bilan's ``rapprochement`` over the sessions with plugin events and replies
    (SPEC, "In the bilan"): ``sessions`` (their count), ``agents`` (their entries), one
    count per verdict as a flat key (every verdict of ``VERDICTS``, zeros included),
    ``ecart`` (the entries' ecart summed over the ``COMPARED`` verdicts, tokens),
    ``depense_claude`` (their claude.cout summed, tokens) and ``part_economisee`` (their
    net / (depense_claude + their net); None when that denominator is <= 0)."""
    counts = dict.fromkeys(VERDICTS, 0)
    n = agents = ecart = depense = net = 0
    for session in sessions:
        n += 1
        depense += session.claude.total.cout
        net += session.net
        for entry in session.entries:
            agents += 1
            counts[entry.verdict] += 1
            if entry.verdict in COMPARED and entry.ecart is not None:
                ecart += entry.ecart
    return {"sessions": n, "agents": agents, **counts, "ecart": ecart,
            "depense_claude": depense, "part_economisee": share(net, depense)}
