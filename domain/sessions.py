"""A Claude Code session's own spend (pure): what Claude Code's replies cost it
(``claude``) and the share of it the plugin's net saved (``part_economisee``); each
subagent's pilotage set beside those replies is ``domain.rapprochement``.

Source: SPEC, "Claude Code's own record: relevés, sessions, and the share saved", item "A
session"; contract ``000_*.txt``, "Calcul du coût"
(the cost rule); ADR-0176, ADR-0177. Token figures are exact integers (ADR-0051); a share
is a float fraction. Pure: no I/O; the replies come from the projection
(``domain.releves.Observation``, merged).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from miam_economies.domain.events import Usage
from miam_economies.domain.formulas import Formule, poids
from miam_economies.domain.releves import COUNTERS, Observation, cost

PRINCIPAL = "(principal)"
"""The key of the main agent (a reply without agent) in ``claude.par_agent`` (SPEC)."""

NO_USAGE = Usage(0, 0, 0, 0)
"""The four counters at zero."""


def usage_dict(usage: Usage) -> dict[str, int]:
    """The four counters as the wire writes them, in ``releves.COUNTERS``' order."""
    return {name: getattr(usage, name) for name in COUNTERS}


def added(a: Usage, b: Usage) -> Usage:
    """``a`` and ``b`` counter by counter (tokens)."""
    return Usage(a.input_tokens + b.input_tokens, a.output_tokens + b.output_tokens,
                 a.cache_read_input_tokens + b.cache_read_input_tokens,
                 a.cache_creation_input_tokens + b.cache_creation_input_tokens)


def cout_reponse(reply: Observation, formule: Formule) -> int:
    """One merged reply's cost, tokens, in ``formule``'s unit. For the contract's token
    counts (no price table: ``v1``, ``v1-serveur``) the contract's cost rule, input +
    cache_creation + output + round(cache_read / 10) halves up (``releves.cost``); under a
    weighted formula the reply's counters weighed at its model's prices, rounded once, as
    that formula weighs a pilotage (SPEC, "A session": "claude and the share are in that
    formula's weighted tokens")."""
    if formule.prix is None:
        return cost(reply)
    u = reply.usage
    return poids(reply.model, formule.prix.catalogue).arrondi(
        u.input_tokens, u.output_tokens, u.cache_creation_input_tokens,
        u.cache_read_input_tokens)


@dataclass(frozen=True)
class Consommation:
    """Replies of one agent, or of a whole session: ``reponses`` (merged replies, never
    lines), ``incompletes`` (those without a ``stop_reason``), ``usage`` (the four
    counters summed over them, tokens) and ``cout`` (each reply's ``cout_reponse``,
    summed, tokens)."""

    reponses: int = 0
    incompletes: int = 0
    usage: Usage = NO_USAGE
    cout: int = 0

    def plus(self, reply: Observation, cout: int) -> Consommation:
        """These replies and ``reply``, whose cost is ``cout`` (tokens)."""
        return Consommation(self.reponses + 1, self.incompletes + reply.incomplete,
                            added(self.usage, reply.usage), self.cout + cout)

    def as_dict(self) -> dict[str, Any]:
        """``{"reponses", "incompletes", "usage": {the four counters}, "cout"}``."""
        return {"reponses": self.reponses, "incompletes": self.incompletes,
                "usage": usage_dict(self.usage), "cout": self.cout}


def total_of(parts: Iterable[Consommation]) -> Consommation:
    """Several agents' ``Consommation`` summed (an empty iterable gives zeros)."""
    total = Consommation()
    for part in parts:
        total = Consommation(total.reponses + part.reponses,
                             total.incompletes + part.incompletes,
                             added(total.usage, part.usage), total.cout + part.cout)
    return total


@dataclass(frozen=True)
class Claude:
    """What Claude Code's replies of one session cost it (SPEC, "A session", ``claude``):
    ``total`` over every reply, main agent and subagents, and ``par_agent``: the same per
    agent, keyed by agent id (``None``: the main agent)."""

    total: Consommation
    par_agent: Mapping[str | None, Consommation]

    def as_dict(self) -> dict[str, Any]:
        """The wire shape: ``total``'s four keys and ``"par_agent": {"<agent_id or
        (principal)>": the same}``, agents by name, the main agent under ``PRINCIPAL``."""
        agents = {PRINCIPAL if agent is None else agent: c
                  for agent, c in self.par_agent.items()}
        return {**self.total.as_dict(),
                "par_agent": {name: agents[name].as_dict() for name in sorted(agents)}}


def claude_of(replies: Iterable[Observation], formule: Formule) -> Claude | None:
    """The ``Claude`` of one session's merged ``replies`` under ``formule`` (costs by
    ``cout_reponse``); None when there is none (SPEC: ``claude`` is null when no reply of
    the session was imported)."""
    total = Consommation()
    agents: dict[str | None, Consommation] = {}
    for reply in replies:
        cout = cout_reponse(reply, formule)
        total = total.plus(reply, cout)
        agents[reply.agent_id] = agents.get(reply.agent_id, Consommation()).plus(reply, cout)
    return None if total.reponses == 0 else Claude(total, agents)


def part_economisee(net: int, claude: Claude | None) -> float | None:
    """The share of what the session would have spent without delegating that
    delegating saved: net / (claude.cout + net), a fraction, not a percentage (SPEC, "A
    session"; seed ``003_*``'s savingsPercentage = saved / (used + saved)). None when
    ``claude`` is None or the denominator is <= 0. ``net`` in the same unit as the cost."""
    if claude is None:
        return None
    return share(net, claude.total.cout)


def share(net: int, depense: int) -> float | None:
    """net / (depense + net), or None when that denominator is <= 0 (tokens in, a float
    fraction out)."""
    denominator = depense + net
    return None if denominator <= 0 else net / denominator
