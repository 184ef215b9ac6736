"""What ``compare`` keeps of a history under one formula (pure: no I/O; ADR-0180).

``compare`` shows, for each formula, the figures per client, per day and per model: three
sums over events, each a few rows per client and day whatever the history's length. The
page fold (``delta.PageDelta``) also keeps every demande, demande-day, session and
subagent, which a replay writes to the view page by page; folded over a whole history in
memory they grew with it (1.9 GB at 1,000,000 events for two formulas). This fold keeps
the three sums only, computed as ``PageDelta`` computes its ``clients``, ``jours`` and
``modeles`` (a property test holds the two equal on any history).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from miam_economies.domain.bilan import Figures, FiguresModele, Jours
from miam_economies.domain.events import (
    Conflit,
    Correction,
    Delegation,
    Ecarte,
    Pilotage,
    Stored,
)
from miam_economies.domain.formulas import Formule
from miam_economies.domain.releves import Observation


class FormulaFigures:
    """The figures of every event folded under ``formule``: ``clients[client]`` and
    ``jours[(client, jour)]`` (``Figures``; ``jour`` ``YYYY-MM-DD`` by ``jours_of``, the
    projection's zone) and ``modeles[(client, modele)]`` (``FiguresModele``, summed over
    the days). Each equals ``PageDelta``'s table of the same events (``modeles`` once
    summed over its days), ``evenements`` included: a ``Conflit`` counts for its client
    and an ``Ecarte`` or a relevé's ``Observation`` in no figure (SPEC, "The bilan";
    ADR-0135, ADR-0173). Memory: a few objects per client, day and model."""

    __slots__ = ("formule", "clients", "jours", "modeles", "_jour")

    def __init__(self, formule: Formule, jours_of: Jours):
        self.formule = formule
        self.clients: defaultdict[str, Figures] = defaultdict(Figures)
        self.jours: defaultdict[tuple[str, str], Figures] = defaultdict(Figures)
        self.modeles: defaultdict[tuple[str, str], FiguresModele] = defaultdict(FiguresModele)
        self._jour = jours_of

    def add_all(self, values: Iterable[Stored]) -> None:
        """Fold stored events' values (``EventSource.read``), in any order. Raises
        ``TypeError`` for a value of no stored event's type."""
        # One dict look-up per event, as PageDelta.add_all (ADR-0062); bound here, not
        # kept on self, so that no cycle holds the fold.
        fold: dict[type, Callable[[Any], None]] = {
            Delegation: self._delegation, Pilotage: self._pilotage,
            Correction: self._correction, Conflit: self._conflit,
            Ecarte: _ignored, Observation: _ignored}
        for value in values:
            method = fold.get(type(value))
            if method is None:
                raise TypeError(f"not a stored event's value: {value!r}")
            method(value)

    def _conflit(self, conflit: Conflit) -> None:
        self.clients[conflit.client].evenements += 1

    def _delegation(self, evenement: Delegation) -> None:
        evites = self.formule.evites(evenement)
        figures = self.clients[evenement.client]
        figures.evenements += 1
        figures.delegations += 1
        figures.evites += evites
        day = self.jours[(evenement.client, self._jour(evenement.date))]
        day.evenements += 1
        day.delegations += 1
        day.evites += evites

    def _pilotage(self, evenement: Pilotage) -> None:
        cout = self.formule.cout_pilotage(evenement)
        figures = self.clients[evenement.client]
        figures.evenements += 1
        figures.pilotage += cout
        day = self.jours[(evenement.client, self._jour(evenement.date))]
        day.evenements += 1
        day.pilotage += cout
        self.modeles[(evenement.client, evenement.modele)].add_turn(evenement, cout)

    def _correction(self, evenement: Correction) -> None:
        cout = self.formule.cout_correction(evenement)
        figures = self.clients[evenement.client]
        figures.evenements += 1
        figures.corrections += cout
        day = self.jours[(evenement.client, self._jour(evenement.date))]
        day.evenements += 1
        day.corrections += cout


def _ignored(_: object) -> None:
    # Set aside (ADR-0135) or Claude Code's own record (ADR-0173): in no formula's figure.
    pass
