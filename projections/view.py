"""The bilan's read model: its abstract contract and the shapes it reads back.

One view holds every table of a projection (per client, day, model, demande, and the
journal-field groups), so a page's deltas and its tracking position commit together
(ADR-0004). Backends implement ``BilanView``; the SQLite one is ``SQLiteBilanView``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from eventsourcing.persistence import Tracking, TrackingRecorder

from domain.bilan import Figures, total
from projections.delta import PageDelta

INCONNU = "(inconnu)"
"""Group key of demandes without a value for the journal field asked (SPEC, "Breakdowns")."""

RESERVED_PAR = ("client", "jour", "modele", "demande")
"""Breakdowns the view keeps itself; any other ``par`` is a journal field (also reachable
as ``journal.<field>``, for a journal field named like one of these)."""


@dataclass(frozen=True)
class JournalLine:
    """One usable line of MIAM's ``delegations.jsonl``: its ``demande_id`` and its scalar
    fields as text (``valeurs``: field name -> value; JSON text for numbers/booleans)."""

    demande_id: str
    valeurs: Mapping[str, str]


@dataclass(frozen=True)
class BilanSnapshot:
    """One consistent read of a projection's headline figures.

    ``position``: last notification id folded in (0 before any); ``evenements``: stored
    events read by the runner up to ``position`` (the conservation's ``stockes``);
    ``clients``: figures by client (their ``evenements`` summed is ``comptes``);
    ``en_attente``: pilotage parts and corrections held by demandes whose delegation has not
    arrived; ``fuseau``: the time zone the days were cut in (None before any fold).
    """

    formule: str
    position: int
    evenements: int
    clients: Mapping[str, Figures]
    en_attente: int = 0
    fuseau: str | None = None

    def as_dict(self, tete: int, genere_le: str, fuseau: str) -> dict[str, Any]:
        """The bilan's wire shape (SPEC, "Interfaces"): ``economies`` (clients sorted by
        name), ``total``, ``formule``, ``position``, ``provenance`` and ``conservation``.

        ``tete``: the store's last notification id when read; ``genere_le``: when, ISO
        8601; ``fuseau``: the configured zone, used when the view has not recorded one.
        No events gives an empty ``economies`` and zero totals.
        """
        comptes = sum(f.evenements for f in self.clients.values())
        return {
            "economies": {name: self.clients[name].as_dict() for name in sorted(self.clients)},
            "total": total(self.clients.values()).as_dict(),
            "formule": self.formule,
            "position": self.position,
            "provenance": {
                "formule": self.formule,
                "position": self.position,
                "tete": tete,
                "evenements": self.evenements,
                "fuseau": self.fuseau or fuseau,
                "genere_le": genere_le,
            },
            "conservation": {
                "stockes": self.evenements,
                "comptes": comptes,
                "en_attente": self.en_attente,
            },
        }


class BilanView(TrackingRecorder, ABC):
    """Read model of every breakdown of the bilan, with tracking positions.

    Contract for every backend (one contract test runs against each):

    * ``fold(tracking, delta, previous)`` adds a ``PageDelta`` under the projection named
      ``tracking.application_name`` and moves its position to
      ``tracking.notification_id`` — in one transaction. The move is a compare-and-set:
      only if the position still is ``previous`` (the one the page was read after);
      otherwise another runner folded some of these events first, and it raises
      ``eventsourcing.persistence.IntegrityError`` changing nothing. (A monotonic check
      alone would let a longer page overlapping a shorter one count events twice.)
      ``previous=None`` is for a page of one event, where a monotonic check suffices.
    * ``record_fuseau(name, fuseau)`` fixes the zone a projection's days are cut in.
    * ``fold_journal(chemin, previous, offset, lines, malformees)`` records journal lines
      read from byte ``previous`` to ``offset`` of file ``chemin`` (the first line of a
      demande wins) and adds the figures of their demandes to the groups of every
      projection, in one transaction, with the same compare-and-set on the offset.
    * Reads (``snapshot``, ``groupes``, ``demande``, ``journal_offset``) each run in one
      transaction; ``reset(name)`` forgets a projection (figures, groups, position).
    """

    @abstractmethod
    def fold(self, tracking: Tracking, delta: PageDelta, previous: int | None) -> None:
        """Add one page's deltas and move its tracking position, atomically."""

    @abstractmethod
    def fold_journal(self, chemin: str, previous: int, offset: int,
                     lines: Sequence[JournalLine], malformees: int) -> None:
        """Join new journal lines, and move the journal's offset (bytes), atomically."""

    @abstractmethod
    def journal_offset(self, chemin: str) -> int:
        """Bytes of journal ``chemin`` already read (0 before any)."""

    @abstractmethod
    def journal_counts(self, chemin: str) -> dict[str, int]:
        """``{"lignes": joined, "malformees": skipped, "sans_demande": without id}``."""

    @abstractmethod
    def record_fuseau(self, name: str, fuseau: str) -> str:
        """Fix projection ``name``'s time zone to ``fuseau`` unless one is fixed already;
        return the zone it is fixed to (atomic: concurrent callers agree)."""

    @abstractmethod
    def snapshot(self, name: str, formule: str) -> BilanSnapshot:
        """The headline figures of projection ``name`` as they stand, with position."""

    @abstractmethod
    def groupes(self, name: str, par: str, depuis: str | None = None,
                jusqu_au: str | None = None) -> dict[str, dict[str, dict[str, Any]]]:
        """``{group key: {client: figures}}`` for breakdown ``par`` (``client``, ``jour``
        with optional inclusive ``YYYY-MM-DD`` bounds, ``modele``, ``demande``, or a journal
        field, whose demandes without a value fall under ``INCONNU``)."""

    @abstractmethod
    def demande(self, name: str, demande_id: str) -> list[dict[str, Any]]:
        """One entry per client that has events for ``demande_id`` (normally one; none
        for an id never seen), in the shape of ``GET /economies/demandes/{id}``."""

    @abstractmethod
    def reset(self, name: str) -> None:
        """Delete projection ``name``'s figures, groups and tracking position."""
