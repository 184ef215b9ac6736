"""The live objects of one process, and the reads every edge makes of them (``lire``: one
answer's ``Lecture``): the bilan, one demande and the classement (SPEC, "Interfaces"), as
typed results (ADR-0163) from the projection that serves (``api.service.switching``),
never through the runner (ADR-0120)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from miam_economies.api.service.answers import demande_answer
from miam_economies.api.service.lecture import Lecture
from miam_economies.api.service.pacing import IngestFirst
from miam_economies.api.service.results import BilanLu, ClassementLu
from miam_economies.api.service.session_answers import SessionLu
from miam_economies.api.service.settings import Settings
from miam_economies.api.service.switching import ActiveProjection
from miam_economies.api.store.application import EventStore
from miam_economies.domain.classement import DEFAULT_MIN, SELON
from miam_economies.projections.journal import JournalFollower
from miam_economies.projections.projection import BilanProjection
from miam_economies.projections.runner import CatchUpRunner


@dataclass(frozen=True)
class FoldHealth:
    """How the fold of the serving projection stands, read for ``/healthz`` and the
    metrics (ADR-0136): ``tete`` (the store's head) and ``position`` (notification ids),
    ``retard`` (events stored, not yet passed), ``ecartes`` (events set aside: ADR-0135),
    and ``arrete_depuis``: seconds the fold has not advanced while events wait, once
    past ``Settings.fold_stall_after`` (None while it advances, or has nothing to do)."""

    tete: int
    position: int
    retard: int
    ecartes: int
    arrete_depuis: float | None


@dataclass(frozen=True)
class Services:
    """The live objects of one process: ``store`` (appends), ``serving`` (which projection
    serves: ``projection``), ``journal`` (MIAM's journal as joined), ``runner`` (folds the
    serving projection and the journal), and ``pacing`` (when it may: ADR-0011)."""

    settings: Settings
    store: EventStore
    serving: ActiveProjection
    journal: JournalFollower | None
    runner: CatchUpRunner
    pacing: IngestFirst
    opened: float = field(default_factory=time.time)

    @property
    def folding_failed(self) -> bool:
        """Whether the last page failed, in this process's runner or in the process that
        folds for it (``serve``'s projector, ``miam-economies project``: ADR-0115)."""
        return self.runner.last_error is not None or self.pacing.failing()

    @property
    def projection(self) -> BilanProjection:
        """The projection that serves now: a replay's switch, made by another process, is
        taken at the next read (ADR-0009)."""
        return self.serving.now()

    def fold_health(self) -> FoldHealth:
        """How the serving projection's fold stands (``FoldHealth``): the store's head,
        then the view's progression. The fold has stopped when events wait and, for
        ``Settings.fold_stall_after`` seconds, no page moved the position while the
        oldest of them was stored (so the first event after a quiet hour is no stop),
        counted from when this process opened at the earliest (a fold that never ran,
        such as no ``project`` beside a PostgreSQL server, shows so too). The time of a
        page is the folding process's clock, an event's its server's (ADR-0136). Raises
        ``PersistenceError``."""
        head = self.store.head()
        projection = self.projection
        progress = projection.view.progression(projection.tracking_name)
        retard = max(0, head - progress.position)
        bound = self.settings.fold_stall_after
        since = max(progress.avance_le or 0.0, self.opened)
        if retard > 0 and time.time() - since > bound:
            # Only now the third read: the waiting event may be younger than the bound.
            waiting = self.store.stored_after(progress.position)
            if waiting is not None:
                since = max(since, waiting.timestamp())
        idle = time.time() - since
        stalled = retard > 0 and idle > bound
        return FoldHealth(head, progress.position, retard, progress.ecartes,
                          round(idle, 1) if stalled else None)

    @contextmanager
    def lire(self) -> Iterator[Lecture]:
        """The reads of one answer (``Lecture``): the serving projection taken once, its
        view read in one read transaction where the backend allows (ADR-0163). Raises
        ``PersistenceError`` when a database cannot be read."""
        projection = self.projection
        with projection.view.reading():
            yield Lecture(projection, self.store, self.journal)

    def bilan(self, par: str | None = None, depuis: str | None = None,
              jusqu_au: str | None = None, puis: str | None = None) -> BilanLu:
        """``Lecture.bilan`` in a read of its own."""
        with self.lire() as lecture:
            return lecture.bilan(par, depuis, jusqu_au, puis)

    def classement(self, par: str, minimum: int = DEFAULT_MIN, selon: str = SELON,
                   apparier: str | None = None, depuis: str | None = None,
                   jusqu_au: str | None = None) -> ClassementLu:
        """``Lecture.classement`` in a read of its own."""
        with self.lire() as lecture:
            return lecture.classement(par, minimum, selon, apparier, depuis, jusqu_au)

    def session(self, session_id: str) -> SessionLu | None:
        """``Lecture.session`` in a read of its own: None for a session never seen."""
        with self.lire() as lecture:
            return lecture.session(session_id)

    def demande(self, demande_id: str) -> dict[str, Any] | None:
        """One demande's figures (SPEC, ``GET /economies/demandes/{id}``: ``answers.
        demande_answer``), or None for an id never seen. Should two clients share the id,
        the first by name is given and ``autres_clients`` lists the others."""
        with self.lire() as lecture:
            return demande_answer(lecture.demande(demande_id))
