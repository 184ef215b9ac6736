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

from miam_economies.domain.events import EvenementRecu
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
    Pages are folded whole: one view transaction per page, not per event.
    """

    name = "bilan"

    def __init__(self, view: BilanView, zone: tzinfo, formule: Formule = V1):
        super().__init__(view)
        self.zone = zone
        self.formule = formule
        self.tracking_name = projection_name(formule.name, str(zone))

    def process_event(self, domain_event: Any, tracking: Tracking) -> None:
        """Fold one event (the library's per-event entry point): a page of one."""
        self.process_page([domain_event], tracking.notification_id, previous=None)

    def process_page(self, events: Sequence[EvenementRecu], last_id: int,
                     previous: int | None) -> None:
        """Fold ``events``, the notifications after position ``previous`` up to ``last_id``
        read back through the store's mapper, in one commit (the runner's path: a page,
        one view transaction; ADR-0004, ADR-0043).

        Raises ``IntegrityError`` when the position is no longer ``previous`` (another
        runner folded some of them first); nothing is then changed.
        """
        delta = PageDelta(self.formule, self.zone)
        for stored in events:
            delta.add_stored(stored)
        self.view.fold(Tracking(self.tracking_name, last_id), delta, previous)

    def snapshot(self, par: str | None = None, depuis: str | None = None,
                 jusqu_au: str | None = None) -> BilanSnapshot:
        """The view's figures for this projection, with breakdown ``par`` if asked, in one
        read (see ``BilanView.snapshot``)."""
        return self.view.snapshot(self.tracking_name, self.formule.name, par, depuis,
                                  jusqu_au)

    def position(self) -> int:
        """Last notification id folded in by this projection (0 before any)."""
        return self.view.max_tracking_id(self.tracking_name) or 0
