"""The per-client bilan: a projection of the event store and its read model (view).

The projection folds a page of stored events into per-client deltas under one named
formula; the view adds the deltas and records the page's tracking position in the same
transaction, so each stored event counts exactly once across crashes and restarts
(ADR-0004). Each (projection, formula) pair has its own tracking name, ``bilan:<formule>``,
so a rebuild under another formula never shares a position with the live one
(NOTES-eventsourcing, "Projections", pitfall).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from eventsourcing.persistence import IntegrityError, Tracking, TrackingRecorder
from eventsourcing.projection import Projection
from eventsourcing.sqlite import SQLiteCursor, SQLiteDatastore, SQLiteTrackingRecorder

from domain.bilan import Figures, contribution, total
from domain.events import EvenementRecu
from domain.formulas import V1, Formule


@dataclass(frozen=True)
class BilanSnapshot:
    """One consistent read of the view.

    ``position``: last notification id folded in (0 before any); ``evenements``: number of
    events folded in; ``clients``: figures by client name.
    """

    formule: str
    position: int
    evenements: int
    clients: Mapping[str, Figures]

    def as_dict(self, tete: int, genere_le: str) -> dict[str, Any]:
        """The bilan's wire shape (SPEC, "Interfaces"): ``economies`` (clients sorted by
        name), ``total``, ``formule``, ``position`` and ``provenance``.

        ``tete``: the store's last notification id when read; ``genere_le``: when, ISO 8601.
        No events gives an empty ``economies`` and zero totals.
        """
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
                "genere_le": genere_le,
            },
        }


class BilanView(TrackingRecorder, ABC):
    """Read model of the per-client figures, with its tracking position.

    Contract for every backend:

    * ``fold(tracking, deltas, evenements, previous)`` adds ``deltas`` (figures by client)
      and ``evenements`` (events in the page) under the projection named
      ``tracking.application_name`` and moves its position to ``tracking.notification_id``
      — all in one transaction. The move is a compare-and-set: it happens only if the
      position still is ``previous``, the one the page was read after; otherwise another
      runner folded some of these events first, and ``fold`` raises
      ``eventsourcing.persistence.IntegrityError`` and changes nothing. (A monotonic check
      alone would let a longer page overlapping a shorter one count events twice.)
      ``previous=None`` is for a page of one event, where the monotonic check suffices.
    * ``snapshot(name, formule)`` reads position, count and figures in one transaction.
    * ``reset(name)`` forgets a projection's figures and position.
    """

    @abstractmethod
    def fold(self, tracking: Tracking, deltas: Mapping[str, Figures], evenements: int,
             previous: int | None) -> None:
        """Add one page's deltas and move its tracking position, atomically."""

    @abstractmethod
    def snapshot(self, name: str, formule: str) -> BilanSnapshot:
        """The figures of projection ``name`` as they stand, with their position."""

    @abstractmethod
    def reset(self, name: str) -> None:
        """Delete projection ``name``'s figures and tracking position."""


class SQLiteBilanView(SQLiteTrackingRecorder, BilanView):
    """``BilanView`` in an SQLite file (its own file, beside the event store's; ADR-0004)."""

    def __init__(self, datastore: SQLiteDatastore):
        super().__init__(datastore)

    def construct_create_table_statements(self) -> list[str]:
        statements = super().construct_create_table_statements()
        statements += [
            "CREATE TABLE IF NOT EXISTS bilan_clients ("
            "projection TEXT NOT NULL, client TEXT NOT NULL, "
            "delegations INTEGER NOT NULL, evites INTEGER NOT NULL, "
            "pilotage INTEGER NOT NULL, corrections INTEGER NOT NULL, "
            "PRIMARY KEY (projection, client)) WITHOUT ROWID",
            "CREATE TABLE IF NOT EXISTS bilan_state ("
            "projection TEXT PRIMARY KEY, evenements INTEGER NOT NULL) WITHOUT ROWID",
        ]
        return statements

    def create_table(self) -> None:
        """Create the tables if missing. Two processes starting on a fresh directory race
        to insert the library's ``__migration__`` tracking row: the loser retries once."""
        try:
            super().create_table()
        except IntegrityError:
            super().create_table()

    def fold(self, tracking: Tracking, deltas: Mapping[str, Figures], evenements: int,
             previous: int | None) -> None:
        """See ``BilanView.fold``: one transaction, tracking row first."""
        with self.datastore.transaction(commit=True) as c:
            # Tracking row first: it takes the write lock before any read (no snapshot
            # upgrade failure), and it is the arbiter between runners (NOTES, pitfalls).
            self._advance(c, tracking, previous)
            name = tracking.application_name
            c.executemany(
                "INSERT INTO bilan_clients VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (projection, client) DO UPDATE SET "
                "delegations = delegations + excluded.delegations, "
                "evites = evites + excluded.evites, "
                "pilotage = pilotage + excluded.pilotage, "
                "corrections = corrections + excluded.corrections",
                [(name, client, f.delegations, f.evites, f.pilotage, f.corrections)
                 for client, f in deltas.items()],
            )
            c.execute(
                "INSERT INTO bilan_state VALUES (?, ?) ON CONFLICT (projection) "
                "DO UPDATE SET evenements = evenements + excluded.evenements",
                (name, evenements),
            )

    def _advance(self, c: SQLiteCursor, tracking: Tracking, previous: int | None) -> None:
        if previous is None:
            self._insert_tracking(c, tracking)
            return
        c.execute(
            "UPDATE tracking SET notification_id = ? "
            "WHERE application_name = ? AND notification_id = ? RETURNING notification_id",
            (tracking.notification_id, tracking.application_name, previous),
        )
        if c.fetchone() is not None:
            return
        if previous == 0:
            # First page: the row must not exist yet; the primary key refuses a second one.
            c.execute("INSERT INTO tracking VALUES (?, ?)",
                      (tracking.application_name, tracking.notification_id))
            return
        raise IntegrityError(
            f"{tracking.application_name}: position moved past {previous} meanwhile")

    def reset(self, name: str) -> None:
        """See ``BilanView.reset``."""
        with self.datastore.transaction(commit=True) as c:
            c.execute("DELETE FROM tracking WHERE application_name = ?", (name,))
            c.execute("DELETE FROM bilan_clients WHERE projection = ?", (name,))
            c.execute("DELETE FROM bilan_state WHERE projection = ?", (name,))

    def snapshot(self, name: str, formule: str) -> BilanSnapshot:
        """See ``BilanView.snapshot``."""
        with self.datastore.transaction(commit=False) as c:
            position = self._max_tracking_id(name, c) or 0
            c.execute("SELECT evenements FROM bilan_state WHERE projection = ?", (name,))
            row = c.fetchone()
            c.execute(
                "SELECT client, delegations, evites, pilotage, corrections "
                "FROM bilan_clients WHERE projection = ?",
                (name,),
            )
            clients = {r[0]: Figures(r[1], r[2], r[3], r[4]) for r in c.fetchall()}
        return BilanSnapshot(formule, position, row[0] if row else 0, clients)


class BilanProjection(Projection[BilanView]):
    """Folds stored events into per-client figures under one formula (default ``v1``).

    ``tracking_name`` (``bilan:<formule>``) names this projection's position and rows in
    the view. Pages are folded whole: one view transaction per page, not per event.
    """

    name = "bilan"

    def __init__(self, view: BilanView, formule: Formule = V1):
        super().__init__(view)
        self.formule = formule
        self.tracking_name = f"{self.name}:{formule.name}"

    def process_event(self, domain_event: Any, tracking: Tracking) -> None:
        """Fold one event (the library's per-event entry point): a page of one."""
        self.process_page([domain_event], tracking.notification_id, previous=None)

    def process_page(self, events: Sequence[EvenementRecu], last_id: int,
                     previous: int | None) -> None:
        """Fold ``events``, the notifications after position ``previous`` up to ``last_id``,
        in one commit.

        Raises ``IntegrityError`` when the position is no longer ``previous`` (another
        runner folded some of them first); nothing is then changed.
        """
        deltas: defaultdict[str, Figures] = defaultdict(Figures)
        for stored in events:
            evenement = stored.evenement()
            deltas[evenement.client] += contribution(evenement, self.formule)
        self.view.fold(Tracking(self.tracking_name, last_id), deltas, len(events), previous)

    def snapshot(self) -> BilanSnapshot:
        """The view's current figures for this projection."""
        return self.view.snapshot(self.tracking_name, self.formule.name)

    def position(self) -> int:
        """Last notification id folded in by this projection (0 before any)."""
        return self.view.max_tracking_id(self.tracking_name) or 0
