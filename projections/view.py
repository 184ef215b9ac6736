"""The bilan's read model: its abstract contract and the typed values it reads back (their
wire shapes are the service layer's, ``api.service.answers``; ADR-0120).

One view holds every table of a projection (per client, day, model, demande, and the
journal-field groups), so a page's deltas and its tracking position commit together
(ADR-0004). Backends implement ``BilanView``; the SQLite one is ``SQLiteBilanView``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, NamedTuple

from eventsourcing.persistence import Tracking, TrackingRecorder

from miam_economies.domain.bilan import Figures, FiguresModele
from miam_economies.domain.errors import MiamEconomiesError
from miam_economies.domain.releves import Observation
from miam_economies.domain.tarifs_fichier import FormuleEnregistree
from miam_economies.projections.delta import DelegationVue, PageDelta
from miam_economies.projections.session_rows import SessionLue, SessionRapprocheeLue

INCONNU = "(inconnu)"
"""Group key of demandes without a value for the journal field asked (SPEC, "Breakdowns")."""


class ProjectionMismatch(MiamEconomiesError):
    """A projection was built with other settings (time zone, journal) than the ones asked.

    Changing them is a rebuild, never a silent re-bucketing (issue 3; ADR-0008).
    """


@dataclass(frozen=True)
class JournalLine:
    """One usable line of MIAM's ``delegations.jsonl``: its ``demande_id`` and its scalar
    fields as text (``valeurs``: field name -> value; JSON text for numbers/booleans);
    ``ecartees``: its values (or its ``demande_id``) left out because no backend could
    keep them (``domain.storable_text``; ADR-0135)."""

    demande_id: str
    valeurs: Mapping[str, str]
    ecartees: int = 0


@dataclass(frozen=True)
class ProjectionSettings:
    """What a projection's figures depend on besides the events: ``fuseau`` (IANA zone the
    days are cut in) and ``journal`` (the journal file's absolute path when named
    explicitly, else ``journal.DATA_JOURNAL``: the data directory's, ADR-0103), each with
    whether someone chose it explicitly (ADR-0008), and the ``formule`` it folds with
    (ADR-0009)."""

    fuseau: str
    journal: str
    fuseau_explicite: bool = False
    journal_explicite: bool = False
    formule: str = "v1"


Groupes = Mapping[str, Mapping[str, Figures | FiguresModele]]
"""A breakdown: group key -> client -> figures (``FiguresModele`` under ``par=modele``,
the key then naming the model)."""

Groupes2 = Mapping[str, Mapping[str, Mapping[str, Figures | FiguresModele]]]
"""A breakdown by two dimensions (``par``, then ``puis``; ADR-0133): key of ``par`` ->
key of ``puis`` -> client -> figures (``FiguresModele`` when one names the model)."""


@dataclass(frozen=True)
class DemandeLue:
    """One client's figures for one demande (``BilanView.demande``): the summed
    ``figures`` (tokens), ``pilotages`` and ``corrections_nombre`` (counts), its
    ``delegation`` as the per-demande view keeps it (None before it arrives), and
    ``outils``: tool name -> ``(cout in tokens, corrections)``."""

    demande_id: str
    client: str
    figures: Figures
    pilotages: int
    corrections_nombre: int
    delegation: DelegationVue | None
    outils: Mapping[str, tuple[int, int]]


@dataclass(frozen=True)
class BilanSnapshot:
    """One consistent read of a projection (one read transaction).

    ``position``: last notification id folded in (0 before any); ``evenements``: events
    the runner read up to ``position`` (equal to ``comptes`` by construction: both come
    from the same pages; the check with teeth is ``comptes`` against the store's count);
    ``clients``: figures by client (their ``evenements`` summed is ``comptes``);
    ``en_attente``: pilotages and corrections of which some demande has no delegation yet;
    ``fuseau``: the zone the days are cut in (None before the projection is opened once);
    ``par``/``groupes``: the breakdown asked, if any (``Groupes2`` with ``puis``, its
    second dimension); ``anomalies`` (client -> kind ->
    events) and ``conflits`` (client -> differing re-sent versions); ``identite``: the
    identity of the store's event at ``position`` recorded with it (ADR-0105);
    ``ecartes``: stored events up to ``position`` set aside, in no figure (ADR-0135);
    ``releves``: relevé events folded up to ``position``, into the replies, in no figure
    (counted in ``evenements`` and in the conservation's ``comptes``: ADR-0173).
    """

    formule: str
    position: int
    evenements: int
    clients: Mapping[str, Figures]
    en_attente: int = 0
    fuseau: str | None = None
    par: str | None = None
    groupes: Groupes | Groupes2 | None = None
    anomalies: Mapping[str, Mapping[str, int]] | None = None
    conflits: Mapping[str, int] | None = None
    identite: str | None = None
    puis: str | None = None
    ecartes: int = 0
    releves: int = 0


@dataclass(frozen=True)
class Progression:
    """How far a projection's fold has got, in one read: ``position`` (its tracking
    position, 0 before any), ``avance_le`` (when a page last moved it, seconds since the
    epoch, None before any: ADR-0136) and ``ecartes`` (stored events it set aside so far:
    ADR-0135)."""

    position: int
    avance_le: float | None
    ecartes: int


class Samples(NamedTuple):
    """What the classement reads of a projection in one read transaction
    (``BilanView.samples``): ``position`` its tracking position; ``groupes`` each
    group's eighteen sums; ``taches`` each group's tasks' sums (or None: not paired);
    ``recents`` each stored group's recent period (its first day and its eighteen sums
    from that day on). One transaction, so a group's recent period is never from a later
    fold than its whole sample (ADR-0170)."""

    position: int
    groupes: dict[str, tuple[int, ...]]
    taches: dict[str, dict[str, tuple[int, int, int, int]]] | None
    recents: dict[str, tuple[str, tuple[int, ...]]]


class BilanView(TrackingRecorder, ABC):
    """Read model of every breakdown of the bilan, with tracking positions.

    Contract for every backend (one contract test runs against each):

    * ``fold(tracking, delta, previous)`` adds a ``PageDelta`` under the projection named
      ``tracking.application_name`` and moves its position to
      ``tracking.notification_id`` — in one transaction. The move is a compare-and-set:
      only if the position still is ``previous`` (the one the page was read after);
      otherwise another runner folded some of these events first, and it raises
      ``eventsourcing.persistence.IntegrityError`` changing nothing (ADR-0007).
      ``previous=None`` is for a page of one event, where a monotonic check suffices.
      ``identite``: the identity of the store's event at the new position (``source``
      reads it back; None: not known), recorded in the same transaction (ADR-0105). A
      ``delta.zone`` other than the projection's raises ``ProjectionMismatch``. With
      ``groupes=False`` the journal-field groups are left as they are, unless the
      projection serves the bilan (then they are folded all the same): a replay folds
      without them and calls ``rebuild_groups`` once at its end (ADR-0062). Those of a
      projection whose groups are deferred are left as they are whatever ``groupes``.
    * ``defer_groups(name)`` marks a projection's groups (with the classement's samples,
      their days and clusters) as waiting for ``rebuild_groups``: until then neither
      ``fold`` nor ``fold_journal`` touches them; each ``fold`` with ``groupes=False`` (a
      build's page) notes that its build is still at work; ``groups_deferred(name)``
      says since when it last did; ``rebuild_stopped_groups(name, idle)`` rebuilds
      them if it has not for ``idle`` seconds (a stopped build's: ADR-0179).
    * ``rebuild_groups(name)`` computes a projection's groups again from its demandes and
      its journal, and clears its deferral, in one transaction; sums exact at any size
      (ADR-0051).
    * ``record_settings(name, wanted)`` fixes a projection's settings the first time and
      returns them as recorded (atomic: concurrent callers agree).
    * ``fold_journal(chemin, previous, offset, fichier, empreinte, lines, malformees)``
      records journal lines read from byte ``previous`` to ``offset`` of file ``chemin``
      (identity ``fichier``, fingerprint ``empreinte`` of the bytes up to ``offset``; the
      first line of a demande wins) and adds the figures of their
      demandes to the groups of the projections built on that journal (but those
      deferred), in one
      transaction, with the same compare-and-set on the offset.
    * Reads (``snapshot``, ``demande``, ``journal_state``) each run in one transaction;
      inside ``with view.reading():`` every read of the thread shares one (ADR-0163);
      ``reset(name)`` forgets a projection's figures, groups and position.
    * ``active()``/``activate(name)``: which projection serves the bilan (ADR-0009).
    """

    @abstractmethod
    def fold(self, tracking: Tracking, delta: PageDelta, previous: int | None,
             groupes: bool = True, identite: str | None = None) -> None:
        """Add one page's deltas and move its tracking position, atomically, recording
        ``identite`` as the identity of the store's event at the new position."""

    @abstractmethod
    def source(self, name: str) -> tuple[int, str | None]:
        """Projection ``name``'s position and the identity of the store's event there as
        recorded with it (None when not known), in one read (ADR-0105)."""

    @abstractmethod
    def progression(self, name: str) -> Progression:
        """Projection ``name``'s position, when a page last moved it and how many events
        it set aside, in one read (``/healthz``, the metrics: ADR-0136)."""

    @abstractmethod
    def rebuild_groups(self, name: str) -> None:
        """Compute projection ``name``'s journal-field groups again, in one transaction."""

    @abstractmethod
    def defer_groups(self, name: str) -> None:
        """Leave projection ``name``'s groups to its next ``rebuild_groups`` (ADR-0179)."""

    @abstractmethod
    def groups_deferred(self, name: str) -> float | None:
        """Seconds since the build that marked projection ``name``'s groups last folded
        a page (or marked them), or None when they wait for no rebuild."""

    @abstractmethod
    def rebuild_stopped_groups(self, name: str, idle: float) -> bool:
        """Rebuild projection ``name``'s groups, and clear their mark, if they are marked
        and their build has folded nothing for ``idle`` seconds, in one transaction;
        return whether it did."""

    @abstractmethod
    def record_settings(self, name: str, wanted: ProjectionSettings) -> ProjectionSettings:
        """Record ``wanted`` for projection ``name`` unless settings are recorded; return
        the recorded ones."""

    @abstractmethod
    def active(self) -> str | None:
        """The name of the projection that serves the bilan (None before any)."""

    @abstractmethod
    def activate(self, name: str, expected: str | None) -> bool:
        """Make projection ``name`` the one that serves, if the active one still is
        ``expected`` (None: none yet); return whether it switched (ADR-0009)."""

    @abstractmethod
    def adopt_data_journal(self, old: str) -> None:
        """Join the projections that recorded the data directory's journal by its
        absolute path ``old`` (an earlier release's record, not an explicit journal) with
        ``journal.DATA_JOURNAL`` instead, whatever they folded: their journal rows move to
        that key, or, when it has rows already, their groups are computed again from it
        (ADR-0103)."""

    @abstractmethod
    def settings_of(self, name: str) -> ProjectionSettings | None:
        """Projection ``name``'s recorded settings, or None if it was never opened."""

    @abstractmethod
    def fold_journal(self, chemin: str, previous: int, offset: int, fichier: str,
                     empreinte: str, lines: Sequence[JournalLine], malformees: int) -> None:
        """Join new journal lines, and move the journal's offset (bytes), atomically."""

    @abstractmethod
    def journal_state(self, chemin: str) -> dict[str, Any]:
        """``{"position": bytes read, "fichier": identity or None, "empreinte": fingerprint
        or None, "lignes": lines with a demande_id read, "malformees": skipped,
        "sans_demande": without one, "valeurs_ecartees": values left out (ADR-0135)}``."""

    @abstractmethod
    def journal_fields(self, chemin: str) -> frozenset[str]:
        """The fields the lines of journal ``chemin`` hold (``journal_valeurs.champ``),
        each once; empty before any line with a field is read (ADR-0164)."""

    @abstractmethod
    def reading(self) -> AbstractContextManager[None]:
        """A block whose reads of this view, in this thread, share one read transaction:
        what one answer reads is one state of the view (ADR-0163)."""

    @abstractmethod
    def snapshot(self, name: str, formule: str, par: str | None = None,
                 depuis: str | None = None, jusqu_au: str | None = None,
                 puis: str | None = None) -> BilanSnapshot:
        """Projection ``name``'s figures, with the breakdown ``par`` if asked
        (``{group key: {client: figures}}``: ``client``, ``jour``, ``semaine`` or
        ``mois`` within the inclusive ``YYYY-MM-DD`` bounds, ``modele``, ``demande``, or
        a journal field, whose demandes without a value fall under ``INCONNU``), each
        group split by ``puis`` if asked (``Groupes2``; bounds apply when either is a
        period: ADR-0133), all in one read transaction. The parameters are
        ``domain.breakdowns.check_bounds``'s to refuse."""

    @abstractmethod
    def demande(self, name: str, demande_id: str) -> list[DemandeLue]:
        """One entry per client that has events for ``demande_id`` (normally one; none
        for an id never seen), by client name."""

    @abstractmethod
    def releves(self, name: str, session_id: str | None = None) -> list[Observation]:
        """Projection ``name``'s replies from the relevés folded (of ``session_id`` only,
        when given), each the join of its relevés (``domain.releves.merge``), by key
        (session, key kind, key value, in code-point order), in one read (ADR-0173)."""

    @abstractmethod
    def session(self, name: str, session_id: str) -> SessionLue:
        """Claude Code session ``session_id`` of projection ``name``: its plugin figures,
        each subagent's pilotages and its merged replies (ADR-0176)."""

    @abstractmethod
    def sessions_rapprochees(self, name: str) -> dict[str, SessionRapprocheeLue]:
        """The sessions of projection ``name`` with plugin events and replies, by id:
        the bilan's ``rapprochement`` is made of them (ADR-0177)."""

    @abstractmethod
    def samples(self, name: str, par: str, apparier: str | None = None,
                depuis: str | None = None, jusqu_au: str | None = None) -> Samples:
        """What the classement of ``par`` (``client`` or a journal field) reads of
        projection ``name``, all in one read transaction (``Samples``): its tracking
        position; the samples by group, ``{cle: sums}``, the eighteen sums in
        ``sql_samples.SAMPLE_SUMS`` order (``Echantillon``'s: exact integers, tokens and
        tokens², over demandes then over clusters: a session's demandes of one day),
        demandes without a value for the field under ``INCONNU`` (ADR-0073, ADR-0166,
        ADR-0167); with ``apparier`` (a journal field: a task) the demandes by group and
        task, ``{cle: {task: (demandes, evites, pilotage, corrections)}}``, else None
        (ADR-0081); and each stored group's recent period, ``{cle: (its first day,
        YYYY-MM-DD; the group's eighteen sums from that day on)}`` for the groups that have
        one (``domain.derive.start_latest_first``: the drift flag's, its history before it
        the group's sample less this; ``INCONNU`` has none; ADR-0167, ADR-0170). With a
        window (``depuis``, ``jusqu_au``: ``YYYY-MM-DD``, inclusive, either optional)
        only the demandes whose day (their delegation of smallest id's, the projection's
        zone) is within it count, samples, tasks and recent periods alike; a group
        without one is absent."""

    @abstractmethod
    def reset(self, name: str, previous: int | None = None) -> None:
        """Delete projection ``name``'s figures, groups, tracking position and recorded
        identity (a runner still folding it starts again from 0: its next compare-and-set
        fails); keep its settings. With ``previous``, only if the position still is
        ``previous``, else raise ``IntegrityError`` changing nothing."""

    @abstractmethod
    def record_formula(self, formule: FormuleEnregistree) -> FormuleEnregistree:
        """Record the user formula ``formule`` (a price file's table, ADR-0131) unless
        one of that name is recorded; return the recorded one (atomic: concurrent callers
        agree). Kept across upgrades and resets: a name is a version (ADR-0009)."""

    @abstractmethod
    def recorded_formula(self, nom: str) -> FormuleEnregistree | None:
        """The user formula recorded under ``nom``, or None (one read transaction)."""

    @abstractmethod
    def recorded_formulas(self) -> list[str]:
        """The names of every user formula recorded, sorted (one read transaction): what a
        name that is neither built in nor recorded may have meant (ADR-0162)."""
