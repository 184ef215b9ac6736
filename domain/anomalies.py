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


def anomalies(evenement: Received) -> tuple[str, ...]:
    """The anomaly kinds of one event (empty when the plugin's figures all agree), in
    the order of the module's list: ``anomaly_values``' keys.

    Raises ``TypeError`` for anything but a received event.
    """
    return tuple(anomaly_values(evenement))


AnomalyValues = dict[str, object]
"""One anomaly's two values: ``{"plugin": what the event says, "serveur": the
recomputation}`` (token counts as ints, ``estimation`` as ``{lus, ecrits, rendus}``)."""


@singledispatch
def anomaly_values(evenement: Received) -> dict[str, AnomalyValues]:
    """Each anomaly kind of one event with the two values that differ (empty when the
    plugin's figures all agree): what a reader needs to tell a plugin bug from a
    formula's (``miam-economies anomalies``). The values are built only for a kind
    found, so the fold pays for the checks alone.

    Raises ``TypeError`` for anything but a received event.
    """
    raise TypeError(f"not a received event: {evenement!r}")


def _values(plugin: object, serveur: object) -> AnomalyValues:
    return {"plugin": plugin, "serveur": serveur}


@anomaly_values.register
def _(d: Delegation) -> dict[str, AnomalyValues]:
    e = d.estimation
    found: dict[str, AnomalyValues] = {}
    counts = counts_serveur(d)
    evites = evites_of_counts(d, *counts)
    if e.evites != evites:
        found["evites"] = _values(e.evites, evites)
    if (e.lus, e.ecrits, e.rendus) != counts:
        names = ("lus", "ecrits", "rendus")
        found["estimation"] = _values(dict(zip(names, (e.lus, e.ecrits, e.rendus),
                                              strict=True)),
                                     dict(zip(names, counts, strict=True)))
    if d.par_subagent != (d.agent_id is not None):
        found["par_subagent"] = _values(d.par_subagent, d.agent_id is not None)
    if d.id != f"{d.client}:{d.demande_id}":
        found["id"] = _values(d.id, f"{d.client}:{d.demande_id}")
    return found


@anomaly_values.register
def _(p: Pilotage) -> dict[str, AnomalyValues]:
    found: dict[str, AnomalyValues] = {}
    if p.cout != cout_pilotage(p.usage):
        found["cout"] = _values(p.cout, cout_pilotage(p.usage))
    if p.id != f"{p.client}:{p.session_id}:{p.agent_id}:{p.turn_id}":
        found["id"] = _values(p.id, f"{p.client}:{p.session_id}:{p.agent_id}:{p.turn_id}")
    return found


@anomaly_values.register
def _(c: Correction) -> dict[str, AnomalyValues]:
    found: dict[str, AnomalyValues] = {}
    if c.cout != cout_correction(c.tokens_lus, c.tokens_ecrits):
        found["cout"] = _values(c.cout, cout_correction(c.tokens_lus, c.tokens_ecrits))
    if c.id != f"{c.client}:{c.session_id}:{c.tool_use_id}":
        found["id"] = _values(c.id, f"{c.client}:{c.session_id}:{c.tool_use_id}")
    return found
