"""The bilan's figures and how one event contributes to them (pure).

Source: contract ``000_*.txt``, "À implémenter dans MIAM", point 4; SPEC.md, "The bilan".
Every figure is a sum over events, so folding is commutative and associative: any arrival
order gives the same figures, provided each stored event is folded exactly once (the
store's uniqueness and the projection's tracking position see to that; ADR-0002, ADR-0004).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import singledispatch
from typing import Any

from domain.events import Correction, Delegation, Pilotage, Received
from domain.formulas import Formule


@dataclass(frozen=True)
class Figures:
    """Running sums for one client (or the total), tokens except ``delegations`` (a count).

    ``net`` and ``taux_reprise`` are derived, never stored.
    """

    delegations: int = 0
    evites: int = 0
    pilotage: int = 0
    corrections: int = 0

    def __add__(self, other: Figures) -> Figures:
        return Figures(
            self.delegations + other.delegations,
            self.evites + other.evites,
            self.pilotage + other.pilotage,
            self.corrections + other.corrections,
        )

    @property
    def net(self) -> int:
        """evites - pilotage - corrections, tokens (contract, "Gain net")."""
        return self.evites - self.pilotage - self.corrections

    @property
    def taux_reprise(self) -> float | None:
        """corrections / evites; None when evites <= 0 (contract, point 4)."""
        return self.corrections / self.evites if self.evites > 0 else None

    def as_dict(self) -> dict[str, Any]:
        """The six figures of the wire format, in the contract's order."""
        return {
            "delegations": self.delegations,
            "evites": self.evites,
            "pilotage": self.pilotage,
            "corrections": self.corrections,
            "net": self.net,
            "taux_reprise": self.taux_reprise,
        }


@singledispatch
def contribution(evenement: Received, formule: Formule) -> Figures:
    """What one event adds to its client's figures under ``formule``.

    Raises ``TypeError`` for anything but a ``Delegation``, ``Pilotage`` or ``Correction``.
    """
    raise TypeError(f"not a received event: {evenement!r}")


@contribution.register
def _(evenement: Delegation, formule: Formule) -> Figures:
    return Figures(delegations=1, evites=formule.evites(evenement))


@contribution.register
def _(evenement: Pilotage, formule: Formule) -> Figures:
    return Figures(pilotage=formule.cout_pilotage(evenement))


@contribution.register
def _(evenement: Correction, formule: Formule) -> Figures:
    return Figures(corrections=formule.cout_correction(evenement))


def total(figures: Iterable[Figures]) -> Figures:
    """The sum of several clients' figures (an empty iterable gives zeros)."""
    return sum(figures, Figures())
