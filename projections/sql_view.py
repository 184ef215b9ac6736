"""``BilanView`` in SQL, shared by the SQLite and PostgreSQL views (ADR-0004, ADR-0031):
the writes of a page's fold (with the identity of the store's event at its position,
ADR-0105) and the control of projections (settings, activation, reset); the journal's
writes are ``sql_journal``'s, the journal-field groups ``sql_groups``', the reads
``sql_reads``', the tables ``sql_schema``'s.

Writes start with the tracking (or journal offset) row: it is the arbiter between
runners (ADR-0007), and on SQLite it takes the write lock before any read, so a
read-then-write never fails on a stale snapshot (NOTES-eventsourcing, pitfalls).

The statements are written once, with ``?`` placeholders and SQL both dialects read alike
(upserts with ``excluded.``, ``RETURNING``, partial indexes). A backend gives its
transactions (``_write``, ``_read``: cursors whose ``execute`` takes ``?``), the tracking
table's name, the column types of ``view_tables`` and the one query it plans differently
(``EN_ATTENTE``).
"""

from __future__ import annotations

from abc import abstractmethod
from contextlib import AbstractContextManager
from operator import itemgetter
from typing import Any

from eventsourcing.persistence import IntegrityError, Tracking

from miam_economies.projections.delta import PageDelta
from miam_economies.projections.sql_journal import SqlJournal
from miam_economies.projections.sql_schema import TABLES, Cursor
from miam_economies.projections.view import (
    BilanView,
    ProjectionMismatch,
    ProjectionSettings,
)


class SqlBilanView(SqlJournal, BilanView):
    """``BilanView`` in SQL (see ``BilanView``); a backend subclass mixes it with its
    library tracking recorder and gives ``_write``, ``_read``, ``tracking_table`` and
    ``EN_ATTENTE``."""

    @abstractmethod
    def _write(self) -> AbstractContextManager[Cursor]:
        """A write transaction, committed on normal exit, rolled back on an exception."""

    @abstractmethod
    def _insert_tracking(self, c: Cursor, tracking: Tracking) -> None:
        """The library's monotonic tracking upsert (a page of one event)."""

    def fold(self, tracking: Tracking, delta: PageDelta, previous: int | None,
             groupes: bool = True, identite: str | None = None) -> None:
        """See ``BilanView.fold``. Rows are written in primary-key order: each upsert then
        lands next to the previous one in the table's B-tree (ADR-0062)."""
        name = tracking.application_name
        tk = self.tokens
        with self._write() as c:
            self._advance(c, tracking, previous)
            c.execute("INSERT INTO bilan_sources VALUES (?, ?) ON CONFLICT (projection) "
                      "DO UPDATE SET identite = excluded.identite", (name, identite))
            c.execute("UPDATE bilan_state SET evenements = evenements + ? "
                      "WHERE projection = ? RETURNING fuseau, journal",
                      (delta.evenements, name))
            recorded = c.fetchone()
            if recorded is None or recorded[0] != str(delta.zone):
                # Reset or re-zoned by another process since this runner started.
                raise ProjectionMismatch(
                    f"{name}: this runner cuts days in {delta.zone}, the projection's "
                    f"settings are {tuple(recorded) if recorded else 'gone'}: restart it")
            c.executemany(
                "INSERT INTO bilan_clients VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (projection, client) DO UPDATE SET "
                + self._added("bilan_clients", ("delegations", "evenements", "conflits"),
                              ("evites", "pilotage", "corrections")),
                [(name, client, f.delegations, tk(f.evites), tk(f.pilotage),
                  tk(f.corrections), f.evenements, delta.conflits.get(client, 0))
                 for client, f in sorted(delta.clients.items())],
            )
            c.executemany(
                "INSERT INTO bilan_anomalies VALUES (?, ?, ?, ?) "
                "ON CONFLICT (projection, client, kind) DO UPDATE SET "
                + self._added("bilan_anomalies", ("nombre",)),
                [(name, client, kind, n)
                 for (client, kind), n in sorted(delta.anomalies.items())],
            )
            c.executemany(
                "INSERT INTO bilan_jours VALUES (?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (projection, jour, client) DO UPDATE SET "
                + self._added("bilan_jours", ("delegations",),
                              ("evites", "pilotage", "corrections")),
                sorted((name, jour, client, f.delegations, tk(f.evites), tk(f.pilotage),
                        tk(f.corrections)) for (client, jour), f in delta.jours.items()),
            )
            c.executemany(
                "INSERT INTO bilan_modeles VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (projection, modele, client) DO UPDATE SET "
                + self._added("bilan_modeles", ("tours",),
                              ("input_tokens", "output_tokens", "cache_read_input_tokens",
                               "cache_creation_input_tokens", "cout")),
                sorted((name, modele, client, m.tours, tk(m.input_tokens),
                        tk(m.output_tokens), tk(m.cache_read_input_tokens),
                        tk(m.cache_creation_input_tokens), tk(m.cout))
                       for (client, modele), m in delta.modeles.items()),
            )
            if groupes or self._serves(c, name):
                # The classement's samples need the page's demandes as they were.
                before = self.demandes_before(c, name, delta)
                self._fold_demandes(c, name, delta)
                self._fold_groups(c, name, recorded[1], delta, before)
            else:
                self._fold_demandes(c, name, delta)

    @staticmethod
    def _serves(c: Cursor, name: str) -> bool:
        c.execute("SELECT 1 FROM bilan_actif WHERE cle = 'bilan' AND projection = ?", (name,))
        return c.fetchone() is not None

    def _fold_demandes(self, c: Cursor, name: str, delta: PageDelta) -> None:
        # The delegation's attributes are taken when its id is the smallest seen so far;
        # in an upsert's SET every column reads the row as it was before the update.
        take = ("excluded.delegation_id IS NOT NULL AND (bilan_demandes.delegation_id IS NULL "
                "OR excluded.delegation_id < bilan_demandes.delegation_id)")
        attributes = ", ".join(
            f"{col} = CASE WHEN {take} THEN excluded.{col} ELSE bilan_demandes.{col} END"
            for col in ("agent_id", "par_subagent", "retour", "methode", "delegation_id"))
        tk = self.tokens
        rows: list[tuple[Any, ...]] = []
        liens: list[tuple[str, str, str, str]] = []
        outils: list[tuple[Any, ...]] = []
        # In primary-key order (projection, demande_id, client): each upsert then lands
        # next to the previous one in the B-trees (ADR-0062). The keys are sorted once, by
        # their demande_id (a sort of plain strings, which Python compares fastest), so
        # the rows built from them need no sort of their own; a demande's links and tools
        # are adjacent to each other whatever their order (ADR-0114).
        demandes = delta.demandes
        for key in sorted(demandes, key=itemgetter(1)):
            client, demande_id = key
            d = demandes[key]
            v, f = d.delegation, d.figures
            if v is None:
                rows.append((name, demande_id, client, f.delegations, tk(f.evites),
                             tk(f.pilotage), tk(f.corrections), d.pilotages,
                             d.corrections_nombre, None, None, None, None, None,
                             0, 0, 0, 0, 0, 0))
                # Links serve only en_attente, which reads those of demandes without any
                # delegation; a demande whose delegation is in this page never is one
                # again (its count of delegations only grows): its links are not written.
                for event_id in d.liens:
                    liens.append((name, demande_id, client, event_id))
            else:
                rows.append((name, demande_id, client, f.delegations, tk(f.evites),
                             tk(f.pilotage), tk(f.corrections), d.pilotages,
                             d.corrections_nombre, v.id, v.agent_id, v.par_subagent,
                             v.retour, v.methode, tk(v.tokens_entree), tk(v.tokens_sortie),
                             tk(v.lus), tk(v.ecrits), tk(v.consigne), tk(v.rendus)))
            for outil, (cout, nombre) in d.par_outil.items():
                outils.append((name, demande_id, client, outil, tk(cout), nombre))
        c.executemany(
            "INSERT INTO bilan_demandes VALUES (" + ", ".join("?" * 20) + ") "
            "ON CONFLICT (projection, demande_id, client) DO UPDATE SET "
            + self._added("bilan_demandes", ("delegations", "pilotages", "corrections_nombre"),
                          ("evites", "pilotage", "corrections", "tokens_entree",
                           "tokens_sortie", "lus", "ecrits", "consigne", "rendus"))
            + ", " + attributes,
            rows,
        )
        c.executemany("INSERT INTO bilan_liens VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                      liens)
        c.executemany(
            "INSERT INTO bilan_outils VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (projection, demande_id, client, outil) DO UPDATE SET "
            + self._added("bilan_outils", ("nombre",), ("cout",)),
            outils,
        )

    def _advance(self, c: Cursor, tracking: Tracking, previous: int | None) -> None:
        if previous is None:
            self._insert_tracking(c, tracking)
            return
        c.execute(
            f"UPDATE {self.tracking_table} SET notification_id = ? "
            "WHERE application_name = ? AND notification_id = ? RETURNING notification_id",
            (tracking.notification_id, tracking.application_name, previous),
        )
        if c.fetchone() is not None:
            return
        if previous == 0:
            # First page: the row must not exist yet; the primary key refuses a second one.
            c.execute(f"INSERT INTO {self.tracking_table} VALUES (?, ?)",
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
            recorded = self._settings(c, name)
        assert recorded is not None
        return recorded

    def settings_of(self, name: str) -> ProjectionSettings | None:
        """See ``BilanView.settings_of``."""
        with self._read() as c:
            return self._settings(c, name)

    @staticmethod
    def _settings(c: Cursor, name: str) -> ProjectionSettings | None:
        c.execute("SELECT fuseau, journal, fuseau_explicite, journal_explicite, formule "
                  "FROM bilan_state WHERE projection = ?", (name,))
        row = c.fetchone()
        if row is None:
            return None
        fuseau, journal, fuseau_explicite, journal_explicite, formule = row
        return ProjectionSettings(fuseau, journal, bool(fuseau_explicite),
                                  bool(journal_explicite), formule)

    def active(self) -> str | None:
        """See ``BilanView.active``."""
        with self._read() as c:
            c.execute("SELECT projection FROM bilan_actif WHERE cle = 'bilan'")
            row = c.fetchone()
        return None if row is None else str(row[0])

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
            c.execute(f"SELECT max(notification_id) FROM {self.tracking_table} "
                      "WHERE application_name = ?", (name,))
            position = c.fetchone()[0] or 0
            c.execute("SELECT identite FROM bilan_sources WHERE projection = ?", (name,))
            row = c.fetchone()
        return position, None if row is None else row[0]

    def reset(self, name: str, previous: int | None = None) -> None:
        """See ``BilanView.reset``."""
        with self._write() as c:
            c.execute(f"DELETE FROM {self.tracking_table} WHERE application_name = ? "
                      "RETURNING notification_id", (name,))
            moved = c.fetchone()
            if previous is not None and (moved[0] if moved else 0) != previous:
                raise IntegrityError(f"{name}: position moved from {previous} meanwhile")
            for table in TABLES:
                if table != "bilan_state":
                    c.execute(f"DELETE FROM {table} WHERE projection = ?", (name,))
            c.execute("UPDATE bilan_state SET evenements = 0 WHERE projection = ?", (name,))
