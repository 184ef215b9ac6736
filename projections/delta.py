"""What one page of stored events adds to every read model (pure: no I/O).

The projection folds a page into a ``PageDelta`` in memory, then the view adds it to its
tables in one transaction with the page's tracking position (ADR-0004). Every table is a
sum over events, so the order of events inside and across pages does not matter; the only
non-additive values, a demande's delegation attributes (``retour``, ``agent_id``...), are
taken from the delegation with the smallest id, which is order-independent too (ADR-0006).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import tzinfo
from typing import Any, NamedTuple

from miam_economies.domain.anomalies import anomaly_values
from miam_economies.domain.bilan import Figures, FiguresModele, Jours, parts_pilotage
from miam_economies.domain.events import (
    Conflit,
    Correction,
    Delegation,
    Ecarte,
    Pilotage,
    Received,
    Stored,
)
from miam_economies.domain.formulas import Formule
from miam_economies.domain.releves import Observation, ReplyKey, merge


class DelegationVue(NamedTuple):
    """A demande's delegation as the per-demande view keeps it (contract, "Événement
    delegation"): the attributes of the delegation with the smallest ``id`` (its
    ``session_id`` too: the Claude Code session the demande belongs to in the classement,
    ADR-0166; and ``jour``, its day ``YYYY-MM-DD`` in the projection's zone: the
    demande's day in the classement's window and clusters, ADR-0167), and token counts
    summed over its delegations (normally exactly one). A
    named tuple: one is built per folded delegation, at a fifth of a frozen dataclass's
    cost (ADR-0062)."""

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
    session_id: str
    jour: str

    def merge(self, other: DelegationVue) -> DelegationVue:
        """Two delegations under one demande_id (a plugin bug): smallest id's attributes,
        summed counts."""
        first = self if self.id <= other.id else other
        return first._replace(
            tokens_entree=self.tokens_entree + other.tokens_entree,
            tokens_sortie=self.tokens_sortie + other.tokens_sortie,
            lus=self.lus + other.lus,
            ecrits=self.ecrits + other.ecrits,
            consigne=self.consigne + other.consigne,
            rendus=self.rendus + other.rendus,
        )

    @staticmethod
    def of(d: Delegation, jour: str) -> DelegationVue:
        """The view's record of one delegation event, whose date falls on ``jour``
        (``YYYY-MM-DD`` in the projection's zone)."""
        e = d.estimation
        return DelegationVue(d.id, d.agent_id, d.par_subagent, d.retour, e.methode,
                             d.tokens_entree, d.tokens_sortie, e.lus, e.ecrits, e.consigne,
                             e.rendus, d.session_id, jour)


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

    ``clients[client]``, ``jours[(client, jour)]`` and ``demandes_jours[(client,
    demande_id, jour)]`` (what each demande gets on each day: the journal-field groups
    by day are their sums; ADR-0133) are ``Figures``, ``modeles[(client, modele, jour)]``
    ``FiguresModele``, ``demandes[(client, demande_id)]`` ``DemandeDelta``,
    ``anomalies[(client, kind)]`` and ``conflits[client]`` counts; ``ecartes``: the
    events set aside (ADR-0135), in no other table; ``releves``: the page's relevés
    merged by reply key (``releves.merge``), in no other table, and ``releves_lus``: how
    many relevé events the page holds (ADR-0173); ``sessions[(session_id, client)]``:
    each Claude Code session's ``Figures`` (each event under its own ``session_id``)
    and ``agents[(session_id, agent_id, client)]``: each subagent's pilotages in it
    (``FiguresModele``: turns, counters, cost), for the session read (ADR-0176);
    ``evenements``: events folded (the set-aside ones apart, the relevés in).
    ``jours_of``: the day of a date in ``zone`` (``domain.bilan.Jours``; a fold passes
    its own so the memo outlives the page).
    """

    formule: Formule
    zone: tzinfo
    clients: defaultdict[str, Figures] = field(default_factory=lambda: defaultdict(Figures))
    jours: defaultdict[tuple[str, str], Figures] = field(
        default_factory=lambda: defaultdict(Figures))
    modeles: defaultdict[tuple[str, str, str], FiguresModele] = field(
        default_factory=lambda: defaultdict(FiguresModele))
    demandes: defaultdict[tuple[str, str], DemandeDelta] = field(
        default_factory=lambda: defaultdict(DemandeDelta))
    demandes_jours: defaultdict[tuple[str, str, str], Figures] = field(
        default_factory=lambda: defaultdict(Figures))
    anomalies: defaultdict[tuple[str, str], int] = field(
        default_factory=lambda: defaultdict(int))
    conflits: defaultdict[str, int] = field(default_factory=lambda: defaultdict(int))
    ecartes: list[Ecarte] = field(default_factory=list)
    releves: dict[ReplyKey, Observation] = field(default_factory=dict)
    releves_lus: int = 0
    sessions: defaultdict[tuple[str, str], Figures] = field(
        default_factory=lambda: defaultdict(Figures))
    agents: defaultdict[tuple[str, str, str], FiguresModele] = field(
        default_factory=lambda: defaultdict(FiguresModele))
    evenements: int = 0
    jours_of: Jours | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._jour = self.jours_of if self.jours_of is not None else Jours(self.zone)

    def add(self, evenement: Received) -> None:
        """Fold one event into the deltas. Raises ``TypeError`` for anything but a
        ``Delegation``, ``Pilotage`` or ``Correction``."""
        if isinstance(evenement, Conflit | Ecarte):
            raise TypeError(f"not a received event: {evenement!r}")
        self.add_all((evenement,))

    def add_all(self, values: Iterable[Stored]) -> None:
        """Fold stored events' values (``EventSource.read``): a ``Conflit`` counts under
        ``conflits``; an ``Ecarte`` goes to ``ecartes``; a relevé's ``Observation`` is
        merged into ``releves``; a ``Delegation``, ``Pilotage`` or ``Correction`` is
        folded into every other table. Raises ``TypeError`` for any other value."""
        # Which method folds a value of each type: one dict look-up per event (a chain of
        # isinstance tests, or singledispatch, costs more at this rate: ADR-0062). Bound
        # here, not kept on self: a delta referring to itself would wait for the cyclic
        # garbage collector instead of being freed with its page.
        fold: dict[type, Callable[[Any], None]] = {
            Delegation: self._delegation, Pilotage: self._pilotage,
            Correction: self._correction, Conflit: self._conflit,
            Ecarte: self.ecartes.append, Observation: self._releve}
        for value in values:
            method = fold.get(type(value))
            if method is None:
                raise TypeError(f"not a stored event's value: {value!r}")
            method(value)

    def _conflit(self, conflit: Conflit) -> None:
        # One differing re-sent version (a stored ``ConflitRecu``), counted for the kept
        # version's client: a stored event, folded into no figure but ``conflits`` (SPEC,
        # "Wire contract").
        self.clients[conflit.client].evenements += 1
        self.conflits[conflit.client] += 1
        self.evenements += 1

    def _releve(self, releve: Observation) -> None:
        # A relevé: merged with the page's other observations of its reply (a join:
        # any order gives one result), then with the view's row (ADR-0173).
        kept = self.releves.get(releve.key)
        self.releves[releve.key] = releve if kept is None else merge(kept, releve)
        self.releves_lus += 1
        self.evenements += 1

    # The three folds below each count the event in its client's and its day's figures
    # and its anomalies, written out in each: a shared helper call per event costs more
    # than the lines it would save (ADR-0062).

    def _delegation(self, evenement: Delegation) -> None:
        client = evenement.client
        evites = self.formule.evites(evenement)
        self.evenements += 1
        for kind in _anomalies_delegation(evenement):
            self.anomalies[(client, kind)] += 1
        figures = self.clients[client]
        figures.evenements += 1
        figures.delegations += 1
        figures.evites += evites
        jour = self._jour(evenement.date)
        day = self.jours[(client, jour)]
        day.evenements += 1
        day.delegations += 1
        day.evites += evites
        demande = self.demandes[(client, evenement.demande_id)]
        demande.figures.delegations += 1
        demande.figures.evites += evites
        on_day = self.demandes_jours[(client, evenement.demande_id, jour)]
        on_day.delegations += 1
        on_day.evites += evites
        session = self.sessions[(evenement.session_id, client)]
        session.delegations += 1
        session.evites += evites
        vue = DelegationVue.of(evenement, jour)
        demande.delegation = vue if demande.delegation is None else demande.delegation.merge(vue)

    def _pilotage(self, evenement: Pilotage) -> None:
        client = evenement.client
        cout = self.formule.cout_pilotage(evenement)
        self.evenements += 1
        for kind in _anomalies_pilotage(evenement):
            self.anomalies[(client, kind)] += 1
        figures = self.clients[client]
        figures.evenements += 1
        figures.pilotage += cout
        jour = self._jour(evenement.date)
        day = self.jours[(client, jour)]
        day.evenements += 1
        day.pilotage += cout
        self.modeles[(client, evenement.modele, jour)].add_turn(evenement, cout)
        session_id = evenement.session_id
        self.sessions[(session_id, client)].pilotage += cout
        self.agents[(session_id, evenement.agent_id, client)].add_turn(evenement, cout)
        demandes, demandes_jours = self.demandes, self.demandes_jours
        for demande_id, part in parts_pilotage(cout, evenement.demande_ids):
            demande = demandes[(client, demande_id)]
            demande.figures.pilotage += part
            demande.pilotages += 1
            demande.liens.add(evenement.id)
            demandes_jours[(client, demande_id, jour)].pilotage += part

    def _correction(self, evenement: Correction) -> None:
        client = evenement.client
        cout = self.formule.cout_correction(evenement)
        self.evenements += 1
        for kind in _anomalies_correction(evenement):
            self.anomalies[(client, kind)] += 1
        figures = self.clients[client]
        figures.evenements += 1
        figures.corrections += cout
        jour = self._jour(evenement.date)
        day = self.jours[(client, jour)]
        day.evenements += 1
        day.corrections += cout
        demande = self.demandes[(client, evenement.demande_id)]
        demande.figures.corrections += cout
        self.demandes_jours[(client, evenement.demande_id, jour)].corrections += cout
        self.sessions[(evenement.session_id, client)].corrections += cout
        demande.corrections_nombre += 1
        demande.liens.add(evenement.id)
        outil = evenement.outil
        sums, nombre = demande.par_outil.get(outil, (0, 0))
        demande.par_outil[outil] = (sums + cout, nombre + 1)


# The anomaly checks of each type, looked up once (``anomaly_values`` dispatches on every call);
# iterated, their answers give the kinds found.
_anomalies_delegation = anomaly_values.dispatch(Delegation)
_anomalies_pilotage = anomaly_values.dispatch(Pilotage)
_anomalies_correction = anomaly_values.dispatch(Correction)
