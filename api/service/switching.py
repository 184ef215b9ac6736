"""Which projection serves now: the one the view names active (ADR-0009, ADR-0120).

A replay builds a projection beside the live one, then switches the view's pointer to it;
a running server (its runner and its reads) takes the switch at its next page or read,
without restart. Reads and the runner both ask ``ActiveProjection.now``.
"""

from __future__ import annotations

import logging
import threading
from zoneinfo import ZoneInfo

from miam_economies.api.service.formules import formula_for
from miam_economies.projections.projection import BilanProjection

log = logging.getLogger(__name__)


class ActiveProjection:
    """The projection that serves, following the view's switch.

    ``projection``: the one active when opened. Each ``now()`` reads the view's active
    name (one read transaction) and, when a replay switched it, moves to that projection
    (its recorded zone and formula). Safe from any thread: the move is made under a
    lock, so two readers meeting a switch build one projection, and never move back.
    """

    def __init__(self, projection: BilanProjection):
        self._projection = projection
        self._moving = threading.Lock()

    def now(self) -> BilanProjection:
        """The projection that serves now. Raises the view's ``PersistenceError``, and
        ``UnknownFormula`` for a formula neither built in nor recorded."""
        projection = self._projection
        view = projection.view
        active = view.active()
        if active is None or active == projection.tracking_name:
            return projection
        with self._moving:
            # Read again under the lock: a reader that saw an older switch must not
            # move back over a newer one another thread took meanwhile.
            projection, active = self._projection, view.active()
            if active is None or active == projection.tracking_name:
                return projection
            settings = view.settings_of(active)
            if settings is None:
                return projection
            projection = BilanProjection(view, ZoneInfo(settings.fuseau),
                                         formula_for(view, settings.formule))
            self._projection = projection
        log.info("projection switched to %s", active)
        return projection
