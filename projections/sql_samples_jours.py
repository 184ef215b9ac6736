"""The classement's samples per day (``bilan_echantillons_jours``): each group's eighteen
sums over its demandes of one day, the day of their delegation of smallest id in the
projection's zone (ADR-0167).

A window (``depuis``/``jusqu_au``) sums a group's days, and the drift flag compares a
group's recent days with the rest (``domain.derive``), so neither reads a demande. A
day's clusters are the sessions' demandes of that day (``sql_sessions``): summed over its
days, a group's row is its ``bilan_echantillons`` row exactly. The three writes of the
samples keep these beside them (``sql_samples.SamplesWriter``: a fold, where a demande
may move day with its delegation of smallest id, and a journal join; a rebuild through
``sql_sessions.SessionsWriter.rebuilt``). A row is kept while its day holds a demande.
"""

from __future__ import annotations

from collections.abc import Iterable

from miam_economies.projections.sql_dialect import SqlDialect
from miam_economies.projections.sql_schema import Cursor, chunks
from miam_economies.projections.sql_sessions import SESSION_SUMS, DayKey

_DEMANDE_SUMS = ("demandes", "evites", "pilotage", "corrections", "evites_squared",
                 "corrections_squared", "evites_times_corrections", "net_squared")


class DaySamplesWriter:
    """Adds changes to ``bilan_echantillons_jours`` (see the module), token sums exact by
    ``dialect``'s rule (ADR-0051)."""

    def __init__(self, dialect: SqlDialect):
        self.dialect = dialect
        sums = (*_DEMANDE_SUMS, *SESSION_SUMS)
        self._row = "(" + ", ".join("?" * (5 + len(sums))) + ")"
        self._upsert = (
            "ON CONFLICT (projection, champ, valeur, client, jour) DO UPDATE SET "
            + dialect.added("bilan_echantillons_jours", ("demandes", "sessions"),
                            [s for s in sums if s not in ("demandes", "sessions")])
            + " RETURNING champ, valeur, client, jour, demandes")
        self._delete = ("DELETE FROM bilan_echantillons_jours WHERE projection = ? "
                        "AND champ = ? AND valeur = ? AND client = ? AND jour = ? "
                        "AND demandes = 0")

    def add(self, c: Cursor, name: str,
            samples: Iterable[tuple[DayKey, tuple[int, ...]]]) -> None:
        """Upsert ``((champ, valeur, client, jour), sums)`` (the eighteen sums' change,
        ``Echantillon``'s order) into projection ``name``'s samples per day, adding to
        the stored sums (exact at any size), in primary-key order, ``sql_schema.CHUNK``
        rows a statement; all-zero changes are left out, and a day left without a
        demande is deleted (its sums are then all 0)."""
        tk = self.dialect.tokens
        # The primary key's order: (champ, valeur, jour, client).
        rows = sorted(((key, sums) for key, sums in samples if any(sums)),
                      key=lambda row: (row[0][0], row[0][1], row[0][3], row[0][2]))
        emptied = []
        for chunk in chunks(rows):
            c.execute("INSERT INTO bilan_echantillons_jours VALUES "
                      + ", ".join([self._row] * len(chunk)) + " " + self._upsert,
                      [x for key, sums in chunk
                       for x in (name, *key, sums[0], *map(tk, sums[1:8]), sums[8],
                                 *map(tk, sums[9:]))])
            for champ, valeur, client, jour, n in c.fetchall():
                if int(n) == 0:
                    emptied.append((name, champ, valeur, client, jour))
        if emptied:
            c.executemany(self._delete, emptied)
