"""Anomalies: where the plugin's figures disagree with the server's recomputation (pure).

An anomalous event is kept and counted, never refused (SPEC, "Replay after a formula
change"): the bilan shows a plugin bug instead of hiding it. Kinds, in the wire format:

* ``evites``: ``estimation.evites`` differs from ``v1-serveur``'s recomputation;
* ``estimation``: ``lus``, ``ecrits`` or (for ``complet``) ``rendus`` differ from the
  contract's formulas of ``tokens_entree``, ``tokens_sortie`` and ``consigne``;
* ``par_subagent``: it is not ``agent_id`` being non-null;
* ``cout``: a pilotage's or a correction's ``cout`` differs from its counters' formula;
* ``id``: the stable id does not follow the contract's pattern
  (``<client>:<demande_id>``, ``<client>:<session_id>:<agent_id>:<turn_id>``,
  ``<client>:<session_id>:<tool_use_id>``).
"""

from __future__ import annotations

from functools import singledispatch

from miam_economies.domain.events import Correction, Delegation, Pilotage, Received
from miam_economies.domain.formulas import (
    counts_serveur,
    cout_correction,
    cout_pilotage,
    evites_of_counts,
)


@singledispatch
def anomalies(evenement: Received) -> tuple[str, ...]:
    """The anomaly kinds of one event (empty when the plugin's figures all agree).

    Raises ``TypeError`` for anything but a received event.
    """
    raise TypeError(f"not a received event: {evenement!r}")


@anomalies.register
def _(d: Delegation) -> tuple[str, ...]:
    e = d.estimation
    found = []
    counts = counts_serveur(d)
    if e.evites != evites_of_counts(d, *counts):
        found.append("evites")
    if (e.lus, e.ecrits, e.rendus) != counts:
        found.append("estimation")
    if d.par_subagent != (d.agent_id is not None):
        found.append("par_subagent")
    if d.id != f"{d.client}:{d.demande_id}":
        found.append("id")
    return tuple(found)


@anomalies.register
def _(p: Pilotage) -> tuple[str, ...]:
    found = []
    if p.cout != cout_pilotage(p.usage):
        found.append("cout")
    if p.id != f"{p.client}:{p.session_id}:{p.agent_id}:{p.turn_id}":
        found.append("id")
    return tuple(found)


@anomalies.register
def _(c: Correction) -> tuple[str, ...]:
    found = []
    if c.cout != cout_correction(c.tokens_lus, c.tokens_ecrits):
        found.append("cout")
    if c.id != f"{c.client}:{c.session_id}:{c.tool_use_id}":
        found.append("id")
    return tuple(found)
