"""The bilan projection: folds pages of stored events into every breakdown of the view.

The projection folds a page into a ``PageDelta`` under one named formula and one time
zone; the view adds it and records the page's tracking position in the same transaction,
so each stored event counts exactly once across crashes, restarts and concurrent runners
(ADR-0004). Each (formula, zone) pair has its own tracking name,
``bilan:<formule>:<fuseau>``, so a replay never shares a position with the live one
(NOTES-eventsourcing, "Projections", pitfall).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import tzinfo
from typing import Any

from eventsourcing.persistence import Tracking
from eventsourcing.projection import Projection

from miam_economies.domain.bilan import Jours
from miam_economies.domain.events import EvenementRecu, Stored
from miam_economies.domain.formulas import V1, Formule
from miam_economies.projections.delta import PageDelta
from miam_economies.projections.view import BilanSnapshot, BilanView


def projection_name(formule: str, fuseau: str) -> str:
    """The tracking name (and view key) of the bilan folded under ``formule`` with days cut
    in ``fuseau``: ``bilan:<formule>:<fuseau>``. Each pair is its own projection, so a
    replay builds beside the live one (ADR-0009)."""
    return f"{BilanProjection.name}:{formule}:{fuseau}"


class BilanProjection(Projection[BilanView]):
    """Folds stored events into the view under ``formule`` (default ``v1``), cutting days
    in ``zone``. ``tracking_name`` (``projection_name``) names its position and rows.
    Pages are folded whole: one view transaction per page, not per event. ``groupes``:
    whether pages fold the journal-field groups too (see ``BilanView.fold``; a replay
    turns it off, then calls ``view.rebuild_groups``).
    """

    name = "bilan"

    def __init__(self, view: BilanView, zone: tzinfo, formule: Formule = V1):
        super().__init__(view)
        self.zone = zone
        self.formule = formule
        self.tracking_name = projection_name(formule.name, str(zone))
        self._jours = Jours(zone)  # the days' memo, kept from page to page
        self.groupes = True

    def process_event(self, domain_event: Any, tracking: Tracking) -> None:
        """Fold one stored domain event (an ``EvenementRecu``: the library's per-event
        entry point): a page of one."""
        stored: EvenementRecu = domain_event
        self.process_page([stored.value()], tracking.notification_id, previous=None)

    def process_page(self, values: Sequence[Stored], last_id: int,
                     previous: int | None) -> None:
        """Fold ``values``, the typed values of the stored events after position
        ``previous`` up to ``last_id`` (``EventSource.read``), in one commit (the runner's
        path: a page, one view transaction; ADR-0004, ADR-0062).

        Raises ``IntegrityError`` when the position is no longer ``previous`` (another
        runner folded some of them first); nothing is then changed.
        """
        delta = self.new_delta()
        delta.add_all(values)
        self.commit(delta, last_id, previous)

    def new_delta(self) -> PageDelta:
        """An empty page delta under this projection's formula and zone (its days' memo
        shared from page to page)."""
        return PageDelta(self.formule, self.zone, jours_of=self._jours)

    def commit(self, delta: PageDelta, last_id: int, previous: int | None,
               identite: str | None = None) -> None:
        """Add ``delta``, the fold of the events after position ``previous`` up to
        ``last_id``, to the view and move the position there, with ``identite``, the
        identity of the store's event at ``last_id`` (ADR-0105), in one transaction.
        Raises as ``process_page``."""
        self.view.fold(Tracking(self.tracking_name, last_id), delta, previous,
                       self.groupes, identite)

    def snapshot(self, par: str | None = None, depuis: str | None = None,
                 jusqu_au: str | None = None, puis: str | None = None) -> BilanSnapshot:
        """The view's figures for this projection, with breakdown ``par`` (then ``puis``)
        if asked, in one read (see ``BilanView.snapshot``)."""
        return self.view.snapshot(self.tracking_name, self.formule.name, par, depuis,
                                  jusqu_au, puis)

    def position(self) -> int:
        """Last notification id folded in by this projection (0 before any)."""
        return self.view.max_tracking_id(self.tracking_name) or 0

    def source(self) -> tuple[int, str | None]:
        """This projection's position and the identity of the store's event there, as
        recorded with it (``BilanView.source``)."""
        return self.view.source(self.tracking_name)
