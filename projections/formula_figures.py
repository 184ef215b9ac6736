"""What ``compare`` keeps of a history under several formulas (pure: no I/O; ADR-0180).

``compare`` shows, for each formula, the figures per client, per day and per model: sums
over events, a few rows per client and day however many events the days hold. The page
fold (``delta.PageDelta``) also keeps every demande, demande-day, session and subagent,
which a replay writes to the view page by page; folded over a whole history in memory
they grew with it (1.9 GB at 1,000,000 events for two formulas). This fold keeps a row of
integers per (client, day) and per (client, model), with each formula's figures side by
side in it, and derives the clients' figures from their days: each event is looked up
once whatever the number of formulas. Its figures are ``PageDelta``'s, computed as it
computes them (a property test holds the two equal on any history).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
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

# A day's row: the formula-free counts, then (evites, pilotage, corrections) per formula.
_EVENEMENTS, _DELEGATIONS, _DAY_FREE = 0, 1, 2
# A model's row: tours and the four usage counters, then cout per formula.
_MODEL_FREE = 5


class FormulaFigures:
    """The figures of every event folded, under each of ``formules`` (tokens, exact):
    ``jours(k)`` per (client, ``jour``), ``clients(k)`` per client and ``modeles(k)`` per
    (client, ``modele``) for the ``k``-th formula. ``jour`` is ``YYYY-MM-DD`` by
    ``jours_of`` (the projection's zone). Each equals ``PageDelta``'s table of the same
    events under that formula (``modeles`` once summed over its days), ``evenements``
    included: a ``Conflit`` counts for its client; an ``Ecarte`` or a relevé's
    ``Observation`` in no figure (SPEC, "The bilan"; ADR-0135, ADR-0173). Memory: a
    row of integers per (client, day) and per (client, model)."""

    __slots__ = ("formules", "_jours", "_modeles", "_conflits", "_jour", "_evites",
                 "_pilotage", "_corrections", "_day_width", "_model_width")

    def __init__(self, formules: Sequence[Formule], jours_of: Jours):
        self.formules = tuple(formules)
        self._jours: dict[tuple[str, str], list[int]] = {}
        self._modeles: dict[tuple[str, str], list[int]] = {}
        self._conflits: dict[str, int] = {}
        self._jour = jours_of
        # Each formula's function with the index its figure goes to in a day's row.
        at = [_DAY_FREE + 3 * k for k in range(len(self.formules))]
        self._evites = tuple(zip(at, (f.evites for f in self.formules), strict=True))
        self._pilotage = tuple(zip(at, (f.cout_pilotage for f in self.formules),
                                   strict=True))
        self._corrections = tuple(zip(at, (f.cout_correction for f in self.formules),
                                      strict=True))
        self._day_width = _DAY_FREE + 3 * len(self.formules)
        self._model_width = _MODEL_FREE + len(self.formules)

    def add_all(self, values: Iterable[Stored]) -> None:
        """Fold stored events' values (``EventSource.read``), in any order. Raises
        ``TypeError`` for a value of no stored event's type."""
        # One dict look-up per event, as PageDelta.add_all (ADR-0062); bound here, not
        # kept on self, so that no cycle holds the fold.
        fold: dict[type, Callable[[Any], None]] = {
            Delegation: self._delegation, Pilotage: self._pilotage_turn,
            Correction: self._correction, Conflit: self._conflit,
            Ecarte: _ignored, Observation: _ignored}
        for value in values:
            method = fold.get(type(value))
            if method is None:
                raise TypeError(f"not a stored event's value: {value!r}")
            method(value)

    def jours(self, k: int) -> dict[tuple[str, str], Figures]:
        """The ``k``-th formula's figures per (client, jour); ``k`` from 0 to the number
        of formulas less one (another raises ``IndexError`` once a day is folded)."""
        i = _DAY_FREE + 3 * k
        return {key: Figures(row[_DELEGATIONS], row[i], row[i + 1], row[i + 2],
                             row[_EVENEMENTS])
                for key, row in self._jours.items()}

    def clients(self, k: int) -> dict[str, Figures]:
        """The ``k``-th formula's figures per client: its days' sums, and its conflicts
        among its ``evenements`` (``k`` as in ``jours``)."""
        out: dict[str, Figures] = {}
        for (client, _), figures in self.jours(k).items():
            kept = out.get(client)
            if kept is None:
                out[client] = figures
            else:
                kept.add(figures)
        for client, n in self._conflits.items():
            out.setdefault(client, Figures()).evenements += n
        return out

    def modeles(self, k: int) -> dict[tuple[str, str], FiguresModele]:
        """The ``k``-th formula's turns, usage counters and cost per (client, modele),
        over every day (``k`` as in ``jours``)."""
        return {key: FiguresModele(row[0], row[1], row[2], row[3], row[4], row[_MODEL_FREE + k])
                for key, row in self._modeles.items()}

    def _row(self, client: str, date: str) -> list[int]:
        key = (client, self._jour(date))
        row = self._jours.get(key)
        if row is None:
            row = self._jours[key] = [0] * self._day_width
        row[_EVENEMENTS] += 1
        return row

    def _conflit(self, conflit: Conflit) -> None:
        self._conflits[conflit.client] = self._conflits.get(conflit.client, 0) + 1

    def _delegation(self, evenement: Delegation) -> None:
        row = self._row(evenement.client, evenement.date)
        row[_DELEGATIONS] += 1
        for i, evites in self._evites:
            row[i] += evites(evenement)

    def _pilotage_turn(self, evenement: Pilotage) -> None:
        row = self._row(evenement.client, evenement.date)
        key = (evenement.client, evenement.modele)
        model = self._modeles.get(key)
        if model is None:
            model = self._modeles[key] = [0] * self._model_width
        u = evenement.usage
        model[0] += 1
        model[1] += u.input_tokens
        model[2] += u.output_tokens
        model[3] += u.cache_read_input_tokens
        model[4] += u.cache_creation_input_tokens
        j = _MODEL_FREE
        for i, cout_pilotage in self._pilotage:
            cout = cout_pilotage(evenement)
            row[i + 1] += cout
            model[j] += cout
            j += 1

    def _correction(self, evenement: Correction) -> None:
        row = self._row(evenement.client, evenement.date)
        for i, cout_correction in self._corrections:
            row[i + 2] += cout_correction(evenement)


def _ignored(_: object) -> None:
    # Set aside (ADR-0135) or Claude Code's own record (ADR-0173): in no formula's figure.
    pass
