"""The live objects of one process, and the reads every edge makes of them: the bilan, one
demande and the classement (SPEC, "Interfaces"), from the projection that serves
(``api.service.switching``), never through the runner (ADR-0120)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from miam_economies.api.service.answers import bilan_answer, classement_answer, demande_answer
from miam_economies.api.service.pacing import IngestFirst
from miam_economies.api.service.settings import Settings
from miam_economies.api.service.switching import ActiveProjection
from miam_economies.api.store.application import EventStore
from miam_economies.domain.appariees import Tache, comparaisons_appariees
from miam_economies.domain.breakdowns import check_bounds
from miam_economies.domain.classement import (
    DEFAULT_MIN,
    MAX_COMPARED,
    SELON,
    check_parametres,
    classement,
)
from miam_economies.domain.comparaisons import comparaisons
from miam_economies.domain.echantillon import Echantillon
from miam_economies.domain.instants import iso_utc
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

    def bilan(self, par: str | None = None, depuis: str | None = None,
              jusqu_au: str | None = None, puis: str | None = None) -> dict[str, Any]:
        """The bilan as MIAM reads it (SPEC, "Interfaces", ``GET /economies/bilan``).

        Figures come from the projection's view, never from the events: the cost is that
        of the answer, not of the history. With ``par`` (``client``, ``jour``,
        ``semaine``, ``mois``, ``modele``, ``demande`` or a journal field) it adds
        ``par`` and ``groupes``, each group split by ``puis`` if given (ADR-0133);
        ``depuis`` and ``jusqu_au`` (``YYYY-MM-DD``, inclusive) bound the days when
        either is a period. Under a weighted formula every figure has its value in USD
        (``en_usd``) and ``provenance.prix`` names the reference model (ADR-0130).
        ``provenance`` says which formula, zone and position the figures stand for, and
        the store's head when read. Raises ``PersistenceError`` if a database cannot be
        read, and ``BoundsError`` (a ``ValueError``) for unsound parameters
        (``domain.breakdowns.check_bounds``).
        """
        check_bounds(par, depuis, jusqu_au, puis=puis)
        snapshot = self.projection.snapshot(par, depuis, jusqu_au, puis)
        head = self.store.head()
        # Whether the events counted are this store's: the store's event at the position
        # must be the one folded there (a store replaced by another of any length shows;
        # the next fold rebuilds the projection: ADR-0105).
        position, identite = snapshot.position, snapshot.identite
        meme_source = (True if position == 0 else None if identite is None
                       else self.store.identity(position) == identite)
        return bilan_answer(snapshot, head, self.store.count_up_to(position, head),
                            iso_utc(datetime.now(UTC)), meme_source,
                            None if self.journal is None else self.journal.state(),
                            self.projection.formule.prix)

    def classement(self, par: str, minimum: int = DEFAULT_MIN, selon: str = SELON,
                   apparier: str | None = None) -> dict[str, Any]:
        """The classement of the groups of ``par`` (SPEC, "Ranking presets: the
        classement"): ``{"par", "formule", "position", "min", "critere", "groupes",
        "comparaisons"}`` (and ``"apparier"`` when asked): each group's exact sums
        (tokens), ratios, 95 % intervals and rank by ``selon`` (``taux``: taux_reprise
        ascending; ``net``: net per demande descending), and the verdict of every pair of
        ranked groups, compared on the tasks both ran when ``apparier`` names the journal
        field of a task (ADR-0081). Past ``MAX_COMPARED`` ranked groups, only the first
        ones are compared and ``comparaisons_limite`` says how many: the answer stays
        within its bound.

        Read from the projection's samples and, for ``apparier``, its demandes joined with
        the journal, in one read transaction, never from the events (ADR-0073). Raises
        ``ClassementError`` (a ``ValueError``) for parameters the SPEC refuses,
        ``PersistenceError`` when a database cannot be read.
        """
        check_parametres(par, selon, apparier, minimum)
        projection = self.projection
        position, samples, tasks = projection.view.samples(
            projection.tracking_name, par, apparier)
        echantillons = {cle: Echantillon(*sums) for cle, sums in samples.items()}
        groupes = classement(echantillons, minimum, selon)
        ranked = [g.cle for g in groupes if g.rang is not None]
        compared = ranked[:MAX_COMPARED]
        if tasks is None:
            verdicts = comparaisons([(cle, echantillons[cle]) for cle in compared], selon)
        else:
            verdicts = comparaisons_appariees(
                compared, {cle: {task: Tache(*sums) for task, sums in by_task.items()}
                           for cle, by_task in tasks.items()}, selon)
        return classement_answer(par, projection.formule.name, position, minimum, selon,
                                 groupes, verdicts, len(ranked), apparier,
                                 projection.formule.prix)

    def demande(self, demande_id: str) -> dict[str, Any] | None:
        """One demande's figures (SPEC, ``GET /economies/demandes/{id}``), or None for an
        id never seen. Should two clients share the id, the first by name is given and
        ``autres_clients`` lists the others."""
        projection = self.projection
        return demande_answer(projection.view.demande(projection.tracking_name, demande_id))


