"""The journal's writes of the bilan view in SQL, shared by both backends: joining new
lines of MIAM's journal (``JournalWriter.fold``, ADR-0006, ADR-0052) and moving projections that
recorded the data directory's journal by its absolute path to ``journal.DATA_JOURNAL``
(``JournalWriter.adopt``, ADR-0103). The journal's tables are keyed by the journal as the
projections record it (``chemin``)."""

from __future__ import annotations

from collections.abc import Sequence

from eventsourcing.persistence import IntegrityError

from miam_economies.projections.journal import DATA_JOURNAL
from miam_economies.projections.sql_groups import GroupsWriter
from miam_economies.projections.sql_schema import NOT_DEFERRED, Cursor, chunks
from miam_economies.projections.view import JournalLine

_JOURNAL_COLUMNS = {
    "journal_suivi": ("position, fichier, empreinte, lignes, malformees, sans_demande, "
                      "valeurs_ecartees"),
    "journal_demandes": "demande_id",
    "journal_valeurs": "demande_id, champ, valeur",
}
"""The journal tables, and their columns after ``chemin`` (the journal's key)."""


class JournalWriter:
    """Joins journal lines in SQL, their demandes' figures brought to the groups by
    ``groups`` (see the module)."""

    def __init__(self, groups: GroupsWriter):
        self.groups = groups

    def fold(self, c: Cursor, chemin: str, previous: int, offset: int, fichier: str,
             empreinte: str, lines: Sequence[JournalLine], malformees: int) -> None:
        """``BilanView.fold_journal`` in ``c``'s write transaction: raises
        ``IntegrityError`` when the offset is no longer ``previous``."""
        sans_demande = sum(1 for line in lines if not line.demande_id)
        counts = (len(lines) - sans_demande, malformees, sans_demande,
                  sum(line.ecartees for line in lines))
        c.execute(
            "UPDATE journal_suivi SET position = ?, fichier = ?, empreinte = ?, "
            "lignes = lignes + ?, malformees = malformees + ?, "
            "sans_demande = sans_demande + ?, valeurs_ecartees = valeurs_ecartees + ? "
            "WHERE chemin = ? AND position = ? RETURNING position",
            (offset, fichier, empreinte, *counts, chemin, previous),
        )
        if c.fetchone() is None:
            if previous != 0:
                raise IntegrityError(f"journal {chemin}: offset moved past {previous}")
            c.execute("INSERT INTO journal_suivi (chemin, position, fichier, empreinte, "
                      "lignes, malformees, sans_demande, valeurs_ecartees) "
                      "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                      (chemin, offset, fichier, empreinte, *counts))
        # The first line of a demande wins: those already joined are looked up (500
        # ids a query) rather than tried one insert at a time, which cost a statement
        # per line; the write lock is held, so nobody joins them meanwhile (ADR-0114).
        ids = sorted({line.demande_id for line in lines if line.demande_id})
        known: set[str] = set()
        for chunk in chunks(ids):
            c.execute("SELECT demande_id FROM journal_demandes WHERE chemin = ? "
                      f"AND demande_id IN ({','.join('?' * len(chunk))})",
                      [chemin, *chunk])
            known.update(demande_id for demande_id, in c.fetchall())
        new: dict[str, JournalLine] = {}
        for line in lines:
            if line.demande_id and line.demande_id not in known:
                new.setdefault(line.demande_id, line)
        # In primary-key order: each insert lands next to the previous one.
        joined = sorted(new)
        c.executemany("INSERT INTO journal_demandes VALUES (?, ?)",
                      [(chemin, demande_id) for demande_id in joined])
        c.executemany("INSERT INTO journal_valeurs VALUES (?, ?, ?, ?)",
                      [(chemin, demande_id, champ, valeur) for demande_id in joined
                       for champ, valeur in new[demande_id].valeurs.items()])
        # Every projection on this journal marked (a first build's): none to join into,
        # and a chunked look-up of every new line's demandes for nothing (ADR-0179).
        c.execute("SELECT 1 FROM bilan_state s WHERE s.journal = ? "
                  f"AND {NOT_DEFERRED.format(t='s')}", (chemin,))
        if c.fetchone() is not None:
            self.groups.join(c, chemin, new)

    @staticmethod
    def adopt(c: Cursor, old: str) -> list[str]:
        """``BilanView.adopt_data_journal`` in ``c``'s write transaction: return the
        projections whose groups must be computed again (the data directory's journal
        already had rows under its key), after the transaction."""
        new = DATA_JOURNAL
        c.execute("SELECT projection, journal_explicite FROM bilan_state "
                  "WHERE journal = ?", (old,))
        joined = c.fetchall()
        moving = [name for name, explicit in joined if not explicit]
        if not moving:
            return []  # another process adopted it first
        c.execute("UPDATE bilan_state SET journal = ? WHERE journal = ? "
                  "AND NOT journal_explicite", (new, old))
        c.execute("SELECT 1 FROM journal_suivi WHERE chemin = ?", (new,))
        rebuild = c.fetchone() is not None
        if not rebuild:
            # The rows describe the data directory's journal as it was read: under the
            # new key the follower goes on from there (or, for another file, reads it
            # again, each demande joined once), and the groups stay as they are.
            for table, columns in _JOURNAL_COLUMNS.items():
                c.execute(f"INSERT INTO {table} SELECT CAST(? AS TEXT), {columns} "
                          f"FROM {table} WHERE chemin = ?", (new, old))
            if len(moving) == len(joined):  # no explicit journal left on old
                for table in _JOURNAL_COLUMNS:
                    c.execute(f"DELETE FROM {table} WHERE chemin = ?", (old,))
        return moving if rebuild else []
