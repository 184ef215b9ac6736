"""One answer's read (ADR-0163): the serving projection taken once, its view read in one
read transaction where the backend allows, and the typed results (``results``) the edges
turn into wire dicts, CSV, tables or a page: the bilan, one demande and the classement
(SPEC, "Interfaces"; "Ranking presets: the classement"), never through the runner
(ADR-0120)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property

from miam_economies.api.service.results import BilanLu, ClassementLu
from miam_economies.api.service.session_answers import (
    SessionLu,
    rapprochement_resume,
    session_lu,
)
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
from miam_economies.domain.known_names import BUILT_IN, check_dimension
from miam_economies.projections.journal import JournalFollower
from miam_economies.projections.projection import BilanProjection
from miam_economies.projections.view import INCONNU, DemandeLue


@dataclass(frozen=True)
class Lecture:
    """The reads of one answer, from ``projection`` (the one serving when the answer
    began: a replay's switch meanwhile is taken by the next answer, ADR-0009), the event
    ``store`` and MIAM's ``journal`` as joined (None without one). Made by
    ``Services.lire``, inside the view's ``reading`` block."""

    projection: BilanProjection
    store: EventStore
    journal: JournalFollower | None

    def bilan(self, par: str | None = None, depuis: str | None = None,
              jusqu_au: str | None = None, puis: str | None = None) -> BilanLu:
        """The bilan as MIAM reads it (SPEC, "Interfaces", ``GET /economies/bilan``).

        Figures come from the projection's view, never from the events: the cost is that
        of the answer, not of the history. With ``par`` (``client``, ``jour``,
        ``semaine``, ``mois``, ``modele``, ``demande`` or a journal field) the snapshot has
        a breakdown, each group split by ``puis`` if given (ADR-0133); ``depuis`` and
        ``jusqu_au`` (``YYYY-MM-DD``, inclusive) bound the days when either is a period.
        Under a weighted formula ``prix`` is the formula's price table (ADR-0130). Raises
        ``PersistenceError`` if a database cannot be read, ``BoundsError`` (a
        ``ValueError``) for unsound parameters (``domain.breakdowns.check_bounds``), and
        ``NotUnderstood`` for a dimension neither built in nor a field of the journal
        (ADR-0164).
        """
        check_bounds(par, depuis, jusqu_au, puis=puis)
        champ_vu = self.known("par", par) & self.known("puis", puis)
        projection = self.projection
        snapshot = projection.snapshot(par, depuis, jusqu_au, puis)
        head = self.store.head()
        # Whether the events counted are this store's: the store's event at the position
        # must be the one folded there (a store replaced by another of any length shows;
        # the next fold rebuilds the projection: ADR-0105).
        position, identite = snapshot.position, snapshot.identite
        meme_source = (True if position == 0 else None if identite is None
                       else self.store.identity(position) == identite)
        # Every session both sources saw, once a relevé is folded (ADR-0177).
        rapproche = None if not snapshot.releves else rapprochement_resume(
            projection.view.sessions_rapprochees(projection.tracking_name))
        return BilanLu(snapshot, head, self.store.count_up_to(position, head),
                       iso_utc(datetime.now(UTC)), meme_source,
                       None if self.journal is None else self.journal.state(),
                       projection.formule.prix, champ_vu, rapprochement=rapproche)

    def classement(self, par: str, minimum: int = DEFAULT_MIN, selon: str = SELON,
                   apparier: str | None = None, depuis: str | None = None,
                   jusqu_au: str | None = None) -> ClassementLu:
        """The classement of the groups of ``par`` (SPEC, "Ranking presets: the
        classement"): each group's exact sums (tokens), ratios, 95 % intervals and rank by
        ``selon`` (``taux``: taux_reprise ascending; ``net``: net per demande
        descending), and the verdict of every pair of ranked groups, compared on the tasks
        both ran when ``apparier`` names the journal field of a task (ADR-0081). Past
        ``MAX_COMPARED`` ranked groups, only the first ones are compared: the answer stays
        within its bound. ``depuis``/``jusqu_au`` (``YYYY-MM-DD``, inclusive) keep the
        demandes whose delegation's day is within them; each ranked group says its
        ``derive`` within that window (ADR-0167).

        Read from the projection's samples (each group's eighteen sums, over its demandes
        and over its sessions: ``Echantillon``'s fields in order) and, for ``apparier``,
        its demandes joined with the journal, and their days' samples, never from the
        events (ADR-0073, ADR-0166, ADR-0167). Raises ``ClassementError`` (a
        ``ValueError``) for parameters the SPEC refuses, ``NotUnderstood`` for a ``par`` or
        ``apparier`` that is no field of the journal (ADR-0164), ``PersistenceError``
        when a database cannot be read.
        """
        check_parametres(par, selon, apparier, minimum, depuis, jusqu_au)
        champ_vu = (self.known("par", par, ("client",))
                    & self.known("apparier", apparier, ()))
        projection = self.projection
        position, samples, tasks, recent = projection.view.samples(
            projection.tracking_name, par, apparier, depuis, jusqu_au)
        echantillons = {cle: Echantillon(*sums) for cle, sums in samples.items()}
        # (inconnu)'s sessions are not kept: no interval, no claim on it (ADR-0166).
        unclustered = () if par == "client" else (INCONNU,)
        # Each group's recent period, for its drift within the window (ADR-0167), read
        # with the samples in one transaction (ADR-0170).
        recents = {cle: (start, Echantillon(*sums)) for cle, (start, sums) in recent.items()
                   if cle in echantillons and cle not in unclustered}
        groupes = classement(echantillons, minimum, selon, unclustered, recents)
        ranked = [g.cle for g in groupes if g.rang is not None]
        compared = ranked[:MAX_COMPARED]
        if tasks is None:
            verdicts = comparaisons([(cle, echantillons[cle]) for cle in compared], selon,
                                    unclustered)
        else:
            verdicts = comparaisons_appariees(
                compared, {cle: {task: Tache(*sums) for task, sums in by_task.items()}
                           for cle, by_task in tasks.items()}, selon)
        return ClassementLu(par, projection.formule.name, position, minimum, selon,
                            groupes, verdicts, len(ranked), apparier,
                            projection.formule.prix, champ_vu, depuis=depuis,
                            jusqu_au=jusqu_au)

    def known(self, parametre: str, name: str | None,
              built_in: Collection[str] = BUILT_IN) -> bool:
        """Whether dimension ``name`` (the value of ``parametre``; None: not asked) is
        understood: built in, or a field MIAM's journal holds (``known_names.
        check_dimension``; ADR-0164). False when it cannot be known yet (no journal, or
        no line with a field read). Raises ``NotUnderstood`` for a name that is neither."""
        if name is None or name in built_in:
            return True
        return check_dimension(parametre, name, self.champs, built_in)

    @cached_property
    def champs(self) -> frozenset[str] | None:
        """The fields of MIAM's journal as joined (scalars of the demandes' first lines:
        ``BilanView.journal_fields``); None without a journal. Read once per ``Lecture``:
        its reads share one state of the view, so a report's several dimensions ask it
        once."""
        if self.journal is None:
            return None
        return self.projection.view.journal_fields(self.journal.key)

    def session(self, session_id: str) -> SessionLu | None:
        """Claude Code session ``session_id`` (SPEC, "A session"; ADR-0176): its plugin
        figures, its replies' cost under the serving formula and the rapprochement, read
        by key from the projection's rows; None when neither source has seen it."""
        projection = self.projection
        return session_lu(session_id, projection.view.session(
            projection.tracking_name, session_id), projection.formule)

    def demande(self, demande_id: str) -> Sequence[DemandeLue]:
        """One demande's entries (SPEC, ``GET /economies/demandes/{id}``), one per client
        by name; empty for an id never seen."""
        projection = self.projection
        return projection.view.demande(projection.tracking_name, demande_id)
