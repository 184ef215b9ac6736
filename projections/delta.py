"""What one page of stored events adds to every read model (pure: no I/O).

The projection folds a page into a ``PageDelta`` in memory, then the view adds it to its
tables in one transaction with the page's tracking position (ADR-0004). Every table is a
sum over events, so the order of events inside and across pages does not matter; the only
non-additive values, a demande's delegation attributes (``retour``, ``agent_id``...), are
taken from the delegation with the smallest id, which is order-independent too (ADR-0006).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from datetime import tzinfo

from miam_economies.domain.anomalies import anomalies
from miam_economies.domain.bilan import Figures, FiguresModele, contribution, jour, parts_pilotage
from miam_economies.domain.events import (
    ConflitRecu,
    Correction,
    Delegation,
    EvenementRecu,
    Pilotage,
    Received,
)
from miam_economies.domain.formulas import Formule


@dataclass(frozen=True)
class DelegationVue:
    """A demande's delegation as the per-demande view keeps it (contract, "Événement
    delegation"): the attributes of the delegation with the smallest ``id``, and token
    counts summed over its delegations (normally exactly one)."""

    id: str
    agent_id: str | None
    par_subagent: bool
    retour: str
    methode: str
    tokens_entree: int
    tokens_sortie: int
    lus: int
    ecrits: int
    consigne: int
    rendus: int

    def merge(self, other: DelegationVue) -> DelegationVue:
        """Two delegations under one demande_id (a plugin bug): smallest id's attributes,
        summed counts."""
        first = self if self.id <= other.id else other
        return replace(
            first,
            tokens_entree=self.tokens_entree + other.tokens_entree,
            tokens_sortie=self.tokens_sortie + other.tokens_sortie,
            lus=self.lus + other.lus,
            ecrits=self.ecrits + other.ecrits,
            consigne=self.consigne + other.consigne,
            rendus=self.rendus + other.rendus,
        )

    @staticmethod
    def of(d: Delegation) -> DelegationVue:
        """The view's record of one delegation event."""
        e = d.estimation
        return DelegationVue(d.id, d.agent_id, d.par_subagent, d.retour, e.methode,
                             d.tokens_entree, d.tokens_sortie, e.lus, e.ecrits, e.consigne,
                             e.rendus)


@dataclass(slots=True)
class DemandeDelta:
    """What a page adds to one (client, demande): figures (``pilotage`` is its share,
    tokens; ``evenements`` unused), the number of pilotage parts it gets, corrections per
    ``outil`` as (cout, nombre), its delegation if one is in the page, and ``liens``: the
    ids of the pilotages and corrections that reach it (the conservation's ``en_attente``
    counts those whose delegation is missing)."""

    figures: Figures = field(default_factory=Figures)
    pilotages: int = 0
    corrections_nombre: int = 0
    par_outil: dict[str, tuple[int, int]] = field(default_factory=dict)
    delegation: DelegationVue | None = None
    liens: set[str] = field(default_factory=set)


@dataclass
class PageDelta:
    """Deltas of one page, by table key. ``zone`` buckets days; ``formule`` gives figures.

    ``clients[client]`` and ``jours[(client, jour)]`` are ``Figures``,
    ``modeles[(client, modele)]`` ``FiguresModele``, ``demandes[(client, demande_id)]``
    ``DemandeDelta``, ``anomalies[(client, kind)]`` and ``conflits[client]`` counts;
    ``evenements``: events in the page.
    """

    formule: Formule
    zone: tzinfo
    clients: defaultdict[str, Figures] = field(default_factory=lambda: defaultdict(Figures))
    jours: defaultdict[tuple[str, str], Figures] = field(
        default_factory=lambda: defaultdict(Figures))
    modeles: defaultdict[tuple[str, str], FiguresModele] = field(
        default_factory=lambda: defaultdict(FiguresModele))
    demandes: defaultdict[tuple[str, str], DemandeDelta] = field(
        default_factory=lambda: defaultdict(DemandeDelta))
    anomalies: defaultdict[tuple[str, str], int] = field(
        default_factory=lambda: defaultdict(int))
    conflits: defaultdict[str, int] = field(default_factory=lambda: defaultdict(int))
    evenements: int = 0

    def add(self, evenement: Received) -> None:
        """Fold one event into the deltas. Raises ``TypeError`` for anything but a
        ``Delegation``, ``Pilotage`` or ``Correction``."""
        figures = contribution(evenement, self.formule)
        client = evenement.client
        self.clients[client].add(figures)
        self.jours[(client, jour(evenement.date, self.zone))].add(figures)
        self.evenements += 1
        for kind in anomalies(evenement):
            self.anomalies[(client, kind)] += 1
        # A type switch, not singledispatch: this runs for every stored event.
        if isinstance(evenement, Delegation):
            self._delegation(evenement, figures)
        elif isinstance(evenement, Pilotage):
            self._pilotage(evenement, figures)
        else:
            self._correction(evenement, figures)

    def add_stored(self, stored: EvenementRecu) -> None:
        """Fold one stored event: a ``ConflitRecu`` counts under ``conflits``, any other is
        folded by ``add``."""
        if isinstance(stored, ConflitRecu):
            self.add_conflit(stored.client)
        else:
            self.add(stored.evenement())

    def add_conflit(self, client: str) -> None:
        """Count one differing re-sent version (a stored ``ConflitRecu``) for ``client``,
        the kept version's: a stored event, folded into no figure but ``conflits`` (SPEC,
        "Wire contract")."""
        self.clients[client].evenements += 1
        self.conflits[client] += 1
        self.evenements += 1

    def _delegation(self, evenement: Delegation, figures: Figures) -> None:
        demande = self.demandes[(evenement.client, evenement.demande_id)]
        demande.figures.delegations += figures.delegations
        demande.figures.evites += figures.evites
        vue = DelegationVue.of(evenement)
        demande.delegation = vue if demande.delegation is None else demande.delegation.merge(vue)

    def _pilotage(self, evenement: Pilotage, figures: Figures) -> None:
        self.modeles[(evenement.client, evenement.modele)].add_turn(evenement, figures.pilotage)
        for demande_id, part in parts_pilotage(figures.pilotage, evenement.demande_ids):
            demande = self.demandes[(evenement.client, demande_id)]
            demande.figures.pilotage += part
            demande.pilotages += 1
            demande.liens.add(evenement.id)

    def _correction(self, evenement: Correction, figures: Figures) -> None:
        demande = self.demandes[(evenement.client, evenement.demande_id)]
        demande.figures.corrections += figures.corrections
        demande.corrections_nombre += 1
        demande.liens.add(evenement.id)
        cout, nombre = demande.par_outil.get(evenement.outil, (0, 0))
        demande.par_outil[evenement.outil] = (cout + figures.corrections, nombre + 1)
