"""``BilanView`` in SQL, shared by the SQLite and PostgreSQL views (ADR-0004, ADR-0031),
composed of parts (ADR-0120): a dialect (``sql_dialect``: what differs between the
backends' SQL), the table writers a page's fold calls in turn (``sql_figures``,
``sql_demandes``, ``sql_groups`` with ``sql_groups_jours``, ``sql_samples``,
``sql_samples_jours`` and ``sql_sessions``, ``sql_par_session``, ``sql_releves`` and
``sql_releves_agents`` for Claude Code's replies; ``sql_journal`` for the journal's
lines), the user formulas' registry (``sql_formules``), and the readers (``sql_reads``,
``sql_breakdowns``, ``sql_window``). This class opens the transactions, moves the tracking
position, and controls the projections (settings, activation, reset); a backend gives its
dialect, its transactions and its tables' DDL (``sql_schema``).

Writes start with the tracking (or journal offset) row: it is the arbiter between
runners (ADR-0007), and on SQLite it takes the write lock before any read, so a
read-then-write never fails on a stale snapshot (NOTES-eventsourcing, pitfalls).
"""

from __future__ import annotations

import threading
import time
from abc import abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from eventsourcing.persistence import IntegrityError, Tracking

from miam_economies.domain.releves import Observation
from miam_economies.domain.tarifs_fichier import FormuleEnregistree
from miam_economies.projections import sql_formules
from miam_economies.projections.delta import PageDelta
from miam_economies.projections.session_rows import SessionLue, SessionRapprocheeLue
from miam_economies.projections.sql_demandes import DemandesWriter
from miam_economies.projections.sql_dialect import SqlDialect
from miam_economies.projections.sql_figures import FiguresWriter
from miam_economies.projections.sql_groups import GroupsWriter
from miam_economies.projections.sql_journal import JournalWriter
from miam_economies.projections.sql_par_session import SessionsFiguresWriter
from miam_economies.projections.sql_reads import SqlReader
from miam_economies.projections.sql_releves import RelevesWriter
from miam_economies.projections.sql_releves_agents import ReleveAgentsWriter
from miam_economies.projections.sql_samples import SamplesWriter
from miam_economies.projections.sql_schema import TABLES, Cursor
from miam_economies.projections.view import (
    BilanSnapshot,
    BilanView,
    DemandeLue,
    JournalLine,
    Progression,
    ProjectionMismatch,
    ProjectionSettings,
    Samples,
)


class SqlBilanView(BilanView):
    """``BilanView`` in SQL (see ``BilanView`` and the module); a backend subclass mixes it
    with its library tracking recorder, calls ``compose`` with its dialect when built, and
    gives ``_write`` and ``_read_transaction``."""

    dialect: SqlDialect
    figures_writer: FiguresWriter
    demandes_writer: DemandesWriter
    samples_writer: SamplesWriter
    groups_writer: GroupsWriter
    journal_writer: JournalWriter
    sessions_writer: SessionsFiguresWriter
    releve_agents_writer: ReleveAgentsWriter
    reader: SqlReader

    def compose(self, dialect: SqlDialect) -> None:
        """Build the view's parts on ``dialect`` (the backend's constructor calls it)."""
        self.dialect = dialect
        self.figures_writer = FiguresWriter(dialect)
        self.demandes_writer = DemandesWriter(dialect)
        self.samples_writer = SamplesWriter(dialect)
        self.groups_writer = GroupsWriter(dialect, self.samples_writer)
        self.journal_writer = JournalWriter(self.groups_writer)
        self.sessions_writer = SessionsFiguresWriter(dialect)
        self.releve_agents_writer = ReleveAgentsWriter(dialect)
        self.reader = SqlReader(dialect)
        # Per thread: a view serves the threads of a server's pool at once.
        self._pins = threading.local()

    @abstractmethod
    def _write(self) -> AbstractContextManager[Cursor]:
        """A write transaction, committed on normal exit, rolled back on an exception."""

    @abstractmethod
    def _read_transaction(self) -> AbstractContextManager[Cursor]:
        """A read transaction of the backend: its statements all see one snapshot."""

    @contextmanager
    def _read(self) -> Iterator[Cursor]:
        # The pinned transaction of ``reading`` in this thread, else a new one.
        pinned: Cursor | None = getattr(self._pins, "cursor", None)
        if pinned is not None:
            yield pinned
            return
        with self._read_transaction() as c:
            yield c

    @contextmanager
    def reading(self) -> Iterator[None]:
        """See ``BilanView.reading``: every read of this view made by this thread inside
        the block shares one read transaction (ADR-0163); nested blocks share the
        outermost one."""
        if getattr(self._pins, "cursor", None) is not None:
            yield
            return
        with self._read_transaction() as c:
            self._pins.cursor = c
            try:
                yield
            finally:
                self._pins.cursor = None

    @abstractmethod
    def _insert_tracking(self, c: Cursor, tracking: Tracking) -> None:
        """The library's monotonic tracking upsert (a page of one event)."""

    def fold(self, tracking: Tracking, delta: PageDelta, previous: int | None,
             groupes: bool = True, identite: str | None = None) -> None:
        """See ``BilanView.fold``. Rows are written in primary-key order: each upsert then
        lands next to the previous one in the table's B-tree (ADR-0062)."""
        name, now = tracking.application_name, int(time.time() * 1000)
        with self._write() as c:
            self._advance(c, tracking, previous)
            c.execute("INSERT INTO bilan_sources (projection, identite, avance_le) "
                      "VALUES (?, ?, ?) ON CONFLICT (projection) "
                      "DO UPDATE SET identite = excluded.identite, "
                      "avance_le = excluded.avance_le RETURNING releves",
                      (name, identite, now))
            # Relevés folded before this page: until there are some, no session can
            # have both sources and the pairing below costs nothing (ADR-0177).
            releves_before = c.fetchone()[0]
            if delta.releves_lus:  # a page of the plugin's events alone pays nothing
                stored = RelevesWriter.stored(c, name, delta.releves)
                RelevesWriter.fold(c, name, delta)
                self.releve_agents_writer.fold(c, name, delta, stored)
            if delta.ecartes:  # set aside: in no figure, counted apart (ADR-0135)
                c.executemany("INSERT INTO bilan_ecartes VALUES (?, ?, ?) "
                              "ON CONFLICT DO NOTHING",
                              [(name, e.position, e.raison) for e in delta.ecartes])
            c.execute("UPDATE bilan_state SET evenements = evenements + ? "
                      "WHERE projection = ? RETURNING fuseau, journal",
                      (delta.evenements, name))
            recorded = c.fetchone()
            if recorded is None or recorded[0] != str(delta.zone):
                # Reset or re-zoned by another process since this runner started.
                raise ProjectionMismatch(
                    f"{name}: this runner cuts days in {delta.zone}, the projection's "
                    f"settings are {tuple(recorded) if recorded else 'gone'}: restart it")
            self.figures_writer.fold(c, name, delta)
            self.sessions_writer.fold(c, name, delta)
            if releves_before or delta.releves_lus:
                self.sessions_writer.pair(c, name, delta)
            # A build's page (groupes False) tells its mark it is still at work.
            deferred = self._deferred(c, name, None if groupes else now)
            if (groupes or self._serves(c, name)) and not deferred:
                # The classement's samples need the page's demandes as they were.
                before = self.demandes_writer.before(c, name, delta)
                self.demandes_writer.fold(c, name, delta)
                self.groups_writer.fold(c, name, recorded[1], delta, before)
            else:
                self.demandes_writer.fold(c, name, delta)

    @staticmethod
    def _deferred(c: Cursor, name: str, now: int | None = None) -> bool:
        # Whether the mark is there; with ``now`` (ms), moving its avance_le there.
        if now is None:
            c.execute("SELECT 1 FROM bilan_groupes_differes WHERE projection = ?", (name,))
        else:
            c.execute("UPDATE bilan_groupes_differes SET avance_le = ? WHERE projection = ? "
                      "RETURNING 1", (now, name))
        return c.fetchone() is not None

    @staticmethod
    def _serves(c: Cursor, name: str) -> bool:
        c.execute("SELECT 1 FROM bilan_actif WHERE cle = 'bilan' AND projection = ?", (name,))
        return c.fetchone() is not None

    def _advance(self, c: Cursor, tracking: Tracking, previous: int | None) -> None:
        if previous is None:
            self._insert_tracking(c, tracking)
            return
        c.execute(
            f"UPDATE {self.dialect.tracking_table} SET notification_id = ? "
            "WHERE application_name = ? AND notification_id = ? RETURNING notification_id",
            (tracking.notification_id, tracking.application_name, previous),
        )
        if c.fetchone() is not None:
            return
        if previous == 0:
            # First page: the row must not exist yet; the primary key refuses a second one.
            c.execute(f"INSERT INTO {self.dialect.tracking_table} VALUES (?, ?)",
                      (tracking.application_name, tracking.notification_id))
            return
        raise IntegrityError(
            f"{tracking.application_name}: position moved past {previous} meanwhile")

    def record_settings(self, name: str, wanted: ProjectionSettings) -> ProjectionSettings:
        """See ``BilanView.record_settings``."""
        with self._write() as c:
            c.execute("INSERT INTO bilan_state VALUES (?, 0, ?, ?, ?, ?, ?) "
                      "ON CONFLICT DO NOTHING",
                      (name, wanted.fuseau, wanted.fuseau_explicite, wanted.journal,
                       wanted.journal_explicite, wanted.formule))
            recorded = self.reader.settings(c, name)
        assert recorded is not None
        return recorded

    def settings_of(self, name: str) -> ProjectionSettings | None:
        """See ``BilanView.settings_of``."""
        with self._read() as c:
            return self.reader.settings(c, name)

    def active(self) -> str | None:
        """See ``BilanView.active``: always a read of its own, never the pinned one of
        ``reading`` (which projection serves is asked before an answer's read: inside
        one, a switch made since would be read back as undone, ADR-0163)."""
        with self._read_transaction() as c:
            return self.reader.active(c)

    def activate(self, name: str, expected: str | None) -> bool:
        """See ``BilanView.activate``."""
        with self._write() as c:
            if expected is None:
                c.execute("INSERT INTO bilan_actif VALUES ('bilan', ?) "
                          "ON CONFLICT DO NOTHING RETURNING projection", (name,))
            else:
                c.execute("UPDATE bilan_actif SET projection = ? "
                          "WHERE cle = 'bilan' AND projection = ? RETURNING projection",
                          (name, expected))
            return c.fetchone() is not None

    def source(self, name: str) -> tuple[int, str | None]:
        """See ``BilanView.source``."""
        with self._read() as c:
            return self.reader.source(c, name)

    def progression(self, name: str) -> Progression:
        """See ``BilanView.progression``."""
        with self._read() as c:
            return self.reader.progression(c, name)

    def reset(self, name: str, previous: int | None = None) -> None:
        """See ``BilanView.reset``."""
        with self._write() as c:
            c.execute(f"DELETE FROM {self.dialect.tracking_table} WHERE application_name = ? "
                      "RETURNING notification_id", (name,))
            moved = c.fetchone()
            if previous is not None and (moved[0] if moved else 0) != previous:
                raise IntegrityError(f"{name}: position moved from {previous} meanwhile")
            for table in TABLES:
                if table != "bilan_state":
                    c.execute(f"DELETE FROM {table} WHERE projection = ?", (name,))
            c.execute("UPDATE bilan_state SET evenements = 0 WHERE projection = ?", (name,))

    def rebuild_groups(self, name: str) -> None:
        """See ``BilanView.rebuild_groups`` (``GroupsWriter.rebuild``)."""
        with self._write() as c:
            self.groups_writer.rebuild(c, name)
            c.execute("DELETE FROM bilan_groupes_differes WHERE projection = ?", (name,))

    def defer_groups(self, name: str) -> None:
        """See ``BilanView.defer_groups``."""
        with self._write() as c:
            c.execute("INSERT INTO bilan_groupes_differes VALUES (?, ?) ON CONFLICT "
                      "(projection) DO UPDATE SET avance_le = excluded.avance_le",
                      (name, int(time.time() * 1000)))

    @staticmethod
    def _mark_age(c: Cursor, name: str) -> float | None:
        # Seconds since the mark of ``name`` last moved (its build's last page), None
        # without a mark.
        c.execute("SELECT avance_le FROM bilan_groupes_differes WHERE projection = ?",
                  (name,))
        row = c.fetchone()
        return None if row is None else time.time() - row[0] / 1000

    def groups_deferred(self, name: str) -> float | None:
        """See ``BilanView.groups_deferred``."""
        with self._read() as c:
            age = self._mark_age(c, name)
        return None if age is None else max(0.0, age)

    def rebuild_stopped_groups(self, name: str, idle: float) -> bool:
        """See ``BilanView.rebuild_stopped_groups``."""
        with self._write() as c:
            age = self._mark_age(c, name)
            if age is None or age < idle:
                return False  # none, or rebuilt meanwhile, or a build still at work
            self.groups_writer.rebuild(c, name)
            c.execute("DELETE FROM bilan_groupes_differes WHERE projection = ?", (name,))
            return True

    def fold_journal(self, chemin: str, previous: int, offset: int, fichier: str,
                     empreinte: str, lines: Sequence[JournalLine], malformees: int) -> None:
        """See ``BilanView.fold_journal`` (``JournalWriter.fold``)."""
        with self._write() as c:
            self.journal_writer.fold(c, chemin, previous, offset, fichier, empreinte,
                                     lines, malformees)

    def adopt_data_journal(self, old: str) -> None:
        """See ``BilanView.adopt_data_journal`` (``JournalWriter.adopt``)."""
        with self._write() as c:
            rebuild = self.journal_writer.adopt(c, old)
        for name in rebuild:
            self.rebuild_groups(name)

    def journal_state(self, chemin: str) -> dict[str, Any]:
        """See ``BilanView.journal_state``."""
        with self._read() as c:
            return self.reader.journal_state(c, chemin)

    def journal_fields(self, chemin: str) -> frozenset[str]:
        """See ``BilanView.journal_fields``."""
        with self._read() as c:
            return self.reader.journal_fields(c, chemin)

    def snapshot(self, name: str, formule: str, par: str | None = None,
                 depuis: str | None = None, jusqu_au: str | None = None,
                 puis: str | None = None) -> BilanSnapshot:
        """See ``BilanView.snapshot``: one read transaction."""
        with self._read() as c:
            return self.reader.snapshot(c, name, formule, par, depuis, jusqu_au, puis)

    def demande(self, name: str, demande_id: str) -> list[DemandeLue]:
        """See ``BilanView.demande``: one read transaction."""
        with self._read() as c:
            return self.reader.demande(c, name, demande_id)

    def releves(self, name: str, session_id: str | None = None) -> list[Observation]:
        """See ``BilanView.releves`` (``RelevesWriter.replies``): one read transaction."""
        with self._read() as c:
            return RelevesWriter.replies(c, name, session_id)

    def session(self, name: str, session_id: str) -> SessionLue:
        """See ``BilanView.session``: one read transaction."""
        with self._read() as c:
            return self.sessions_writer.session(c, name, session_id)

    def sessions_rapprochees(self, name: str) -> dict[str, SessionRapprocheeLue]:
        """See ``BilanView.sessions_rapprochees``: one read transaction."""
        with self._read() as c:
            return self.sessions_writer.sessions_rapprochees(c, name)

    def samples(self, name: str, par: str, apparier: str | None = None,
                depuis: str | None = None, jusqu_au: str | None = None) -> Samples:
        """See ``BilanView.samples``: one read transaction."""
        with self._read() as c:
            return self.reader.samples(c, name, par, apparier, depuis, jusqu_au)

    def record_formula(self, formule: FormuleEnregistree) -> FormuleEnregistree:
        """See ``BilanView.record_formula`` (``sql_formules.record``)."""
        with self._write() as c:
            return sql_formules.record(c, formule)

    def recorded_formula(self, nom: str) -> FormuleEnregistree | None:
        """See ``BilanView.recorded_formula``."""
        with self._read() as c:
            return sql_formules.recorded_formula(c, nom)

    def recorded_formulas(self) -> list[str]:
        """See ``BilanView.recorded_formulas``."""
        with self._read() as c:
            return sql_formules.names(c)
