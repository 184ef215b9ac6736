"""The journal-field groups of the bilan view in SQL (``bilan_groupes``), shared by both
backends: the three ways a group's figures change (ADR-0006, ADR-0051, ADR-0062).

A group ``(champ, valeur, client)`` of a projection holds the summed figures
(delegations, evites, pilotage, corrections) of the client's demandes whose journal line
has ``valeur`` in field ``champ``. So it is always the aggregation of ``bilan_demandes``
joined with ``journal_valeurs`` on the projection's journal, and three writes keep it so:

* a page's fold adds each demande's delta to the groups of its journal values
  (``GroupsWriter.fold``);
* journal lines joined later bring their demandes' figures so far (``GroupsWriter.join``);
* ``GroupsWriter.rebuild`` computes them again from scratch, with the classement's samples
  and their sessions, in one aggregation streamed a chunk at a time: what a replay does
  once at its end instead of per page (ADR-0062, ADR-0114, ADR-0166).

Each write also keeps the groups by day of the fields that have them
(``sql_groups_jours``, ADR-0133).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain
from typing import Any

from miam_economies.domain.bilan import Figures
from miam_economies.projections.delta import PageDelta
from miam_economies.projections.sql_demandes import Before
from miam_economies.projections.sql_dialect import SqlDialect
from miam_economies.projections.sql_groups_jours import DayGroupsWriter
from miam_economies.projections.sql_samples import (
    CLIENT_WIDE,
    SAMPLE_SUMS,
    SamplesWriter,
    summed_by_key,
)
from miam_economies.projections.sql_schema import NOT_DEFERRED, TOKEN_LIMIT, Cursor, chunks
from miam_economies.projections.view import JournalLine

_FIGURES_OF_D = "d.delegations, d.evites, d.pilotage, d.corrections"
_SUMS_OF_D = "sum(d.delegations), sum(d.evites), sum(d.pilotage), sum(d.corrections)"
_JOINED = ("FROM bilan_demandes d JOIN journal_valeurs v "
           "ON v.chemin = ? AND v.demande_id = d.demande_id WHERE d.projection = ?")
_NET = "(d.evites - d.pilotage - d.corrections)"
_SAMPLE_TERMS = ("d.evites", "d.pilotage", "d.corrections", "d.evites * d.evites",
                 "d.corrections * d.corrections", "d.evites * d.corrections",
                 f"{_NET} * {_NET}")
"""What a demande adds to each of the per-demande sums after ``demandes``
(``sql_samples.contribution``), in SQL."""
_SAMPLED = "FILTER (WHERE d.delegations > 0)"
_SAMPLE_SUMS_OF_D = ", ".join([f"count(*) {_SAMPLED}",
                               *(f"sum({term}) {_SAMPLED}" for term in _SAMPLE_TERMS)])
"""The samples' per-demande sums in SQL: over the demandes whose delegation has arrived
(NULL but the count where none has)."""

REBUILD_ROWS = 5_000
"""Rows read, and rows written, at a time while groups and samples are rebuilt
(``GroupsWriter.rebuild``): what memory holds of them, whatever the history (ADR-0114)."""

Rebuilt = Sequence[Any]
"""One rebuilt group: ``(champ, valeur, client)``, its four figures' sums, then its
sample's eighteen sums in ``SAMPLE_SUMS`` order (``demandes`` 0: no sample row)."""


class GroupsWriter:
    """Keeps ``bilan_groupes``, and beside it the classement's samples (``samples``), the
    aggregation of the demandes joined with the journal (see the module), token sums
    exact by ``dialect``'s rule (ADR-0051)."""

    def __init__(self, dialect: SqlDialect, samples: SamplesWriter):
        self.dialect = dialect
        self.samples = samples
        self.days = DayGroupsWriter(dialect, REBUILD_ROWS)
        self._upsert = (
            "INSERT INTO bilan_groupes VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (projection, champ, valeur, client) DO UPDATE SET "
            + dialect.added("bilan_groupes", ("delegations",),
                            ("evites", "pilotage", "corrections")))

    def rebuild(self, c: Cursor, name: str) -> None:
        """Compute projection ``name``'s groups and the classement's samples again from its
        demandes and its journal's values, in place of what is stored, in ``c``'s write
        transaction (a replay that folded its pages without them does it once at the
        end; ADR-0062, ADR-0073). Streamed: the database aggregates, and ``REBUILD_ROWS``
        groups at a time are read and written (ADR-0114). Raises the backend's errors."""
        c.execute("SELECT journal FROM bilan_state WHERE projection = ?", (name,))
        row = c.fetchone()
        c.execute("DELETE FROM bilan_groupes WHERE projection = ?", (name,))
        self.days.rebuild(c, name, None if row is None else row[0])
        if row is None:
            return
        c.execute("DELETE FROM bilan_echantillons WHERE projection = ?", (name,))
        c.execute("DELETE FROM bilan_echantillons_jours WHERE projection = ?", (name,))
        c.execute("DELETE FROM bilan_sessions WHERE projection = ?", (name,))
        journal, size, stream = row[0], REBUILD_ROWS, self.dialect.stream
        # Rows per (group, day, session), every group's together and in it every day's:
        # SessionsWriter.rebuilt writes the clusters and the days, and sums each group's
        # rows (ADR-0166, ADR-0167).
        valued: Iterable[Sequence[Any]]
        whole: Iterable[Sequence[Any]]
        if self.sums_exact_in_sql(c, name):
            # One join of the demandes with the journal's values gives the groups'
            # sums, the samples' and their sessions' (a second would cost as much
            # again). Grouped by the value first: SQLite's sorter then tells most rows
            # apart by their first column (a fifth less CPU than by the field first;
            # ADR-0114); the order of the groups is the grouping's (one sort).
            by = "v.valeur, v.champ, d.client, d.jour, d.session_id"
            valued = chain.from_iterable(stream(
                c, f"SELECT v.champ, v.valeur, d.client, d.session_id, d.jour, {_SUMS_OF_D}, "
                   f"{_SAMPLE_SUMS_OF_D} {_JOINED} GROUP BY {by} ORDER BY {by}",
                (journal, name), size))
            whole = ((CLIENT_WIDE, "", *sums) for sums in chain.from_iterable(stream(
                c, f"SELECT d.client, d.session_id, d.jour, 0, 0, 0, 0, {_SAMPLE_SUMS_OF_D} "
                   "FROM bilan_demandes d WHERE d.projection = ? AND d.delegations > 0 "
                   "GROUP BY d.client, d.jour, d.session_id "
                   "ORDER BY d.client, d.jour, d.session_id",
                (name,), size)))
        else:
            # Some sum may pass 2^63: add them as Python ints (ADR-0051), the joined
            # rows in key order, one (group, day, session) at a time.
            valued = summed_by_key(chain.from_iterable(stream(
                c, f"SELECT v.champ, v.valeur, d.client, d.session_id, d.jour, "
                   f"{_FIGURES_OF_D} {_JOINED} "
                   "ORDER BY v.valeur, v.champ, d.client, d.jour, d.session_id",
                (journal, name), size)), 5)
            whole = ((CLIENT_WIDE, "", *sums) for sums in summed_by_key(chain.from_iterable(
                stream(c, f"SELECT d.client, d.session_id, d.jour, {_FIGURES_OF_D} "
                          "FROM bilan_demandes d WHERE d.projection = ? "
                          "AND d.delegations > 0 ORDER BY d.client, d.jour, d.session_id",
                       (name,), size)), 3))
        sessions = self.samples.sessions
        self._insert_rebuilt(c, name, sessions.rebuilt(c, name, valued, size), groups=True)
        self._insert_rebuilt(c, name, sessions.rebuilt(c, name, whole, size), groups=False)

    def _insert_rebuilt(self, c: Cursor, name: str, rebuilt: Iterable[Rebuilt],
                        groups: bool) -> None:
        """Insert ``rebuilt`` groups (``Rebuilt``) into projection ``name``'s samples (those
        with ``demandes``), and with ``groups`` into its groups too, ``REBUILD_ROWS`` at a
        time, token sums by ``dialect.tokens``' rule (ADR-0051). The rows were deleted first:
        plain inserts."""
        tk = self.dialect.tokens
        groupes: list[Rebuilt] = []
        echantillons: list[Rebuilt] = []
        for champ, valeur, client, dl, e, p, k, n, *sums in rebuilt:
            if groups:
                groupes.append((name, champ, valeur, client, dl, tk(e), tk(p), tk(k)))
            if n:
                echantillons.append((name, champ, valeur, client, n,
                                     *[tk(s) for s in sums[:7]], sums[7],
                                     *[tk(s) for s in sums[8:]]))
            if len(groupes) >= REBUILD_ROWS or len(echantillons) >= REBUILD_ROWS:
                self._insert_chunk(c, groupes, echantillons)
        self._insert_chunk(c, groupes, echantillons)

    @staticmethod
    def _insert_chunk(c: Cursor, groupes: list[Rebuilt], echantillons: list[Rebuilt]
                      ) -> None:
        if groupes:
            c.executemany("INSERT INTO bilan_groupes VALUES (" + ", ".join("?" * 8) + ")",
                          groupes)
        if echantillons:
            c.executemany("INSERT INTO bilan_echantillons VALUES ("
                          + ", ".join("?" * (4 + len(SAMPLE_SUMS))) + ")", echantillons)
        groupes.clear()
        echantillons.clear()

    def sums_exact_in_sql(self, c: Cursor, name: str) -> bool:
        """Whether SQL's ``sum()`` is exact for every group, sample and session total of
        projection ``name``: always where the dialect says so (PostgreSQL's ``numeric``),
        else when every sum stays below 2^61 in magnitude (see the comment). The squares
        of the sessions' totals are Python's, exact either way."""
        if self.dialect.exact_sums:
            return True
        # Whether every group's and sample's sums stay below 2^61 in magnitude, so SQL's
        # integer sum() is exact and each result an INTEGER by ADR-0051's rule: the sum
        # of all the projection's demandes' magnitudes (and squares, and products) bounds
        # any group's. total() adds in floating point and never overflows, and a product
        # past 2^63 turns REAL, not wrong; a sum kept as decimal text (past 2^62) counts
        # as its value, far above the bound.
        c.execute("SELECT total(abs(d.evites)), total(abs(d.pilotage)), "
                  "total(abs(d.corrections)), "
                  + ", ".join(f"total(abs({term}))" for term in _SAMPLE_TERMS[3:])
                  + " FROM bilan_demandes d WHERE d.projection = ?", (name,))
        return all(total < TOKEN_LIMIT / 2 for total in c.fetchone())

    def fold(self, c: Cursor, name: str, journal: str, delta: PageDelta,
             before: Before) -> None:
        """Add a page's demande deltas to the groups of the demandes already joined with
        journal ``journal``, and their changes to the samples (``before``: the page's
        demandes as they were, ``DemandesWriter.before``); the others are joined when
        their line comes (``join``)."""
        ids = sorted({demande_id for _, demande_id in delta.demandes})
        valeurs: defaultdict[str, list[tuple[str, str]]] = defaultdict(list)
        for chunk in chunks(ids):
            c.execute("SELECT demande_id, champ, valeur FROM journal_valeurs WHERE chemin = ? "
                      f"AND demande_id IN ({','.join('?' * len(chunk))})", [journal, *chunk])
            for demande_id, champ, valeur in c.fetchall():
                valeurs[demande_id].append((champ, valeur))
        groups: defaultdict[tuple[str, str, str], Figures] = defaultdict(Figures)
        for (client, demande_id), d in delta.demandes.items():
            for champ, valeur in valeurs.get(demande_id, ()):
                groups[(champ, valeur, client)].add(d.figures)
        self._add(c, name, sorted(groups.items()))
        self.days.fold(c, name, delta, valeurs)
        self.samples.fold(c, name, delta, before, valeurs)

    def join(self, c: Cursor, chemin: str, new: Mapping[str, JournalLine]) -> None:
        """Bring the figures of the demandes already folded to the groups (and samples, and
        their sessions) of their new journal lines ``new`` (by demande id), in every
        projection built on journal ``chemin``. Summed by group first, groups and samples
        together (their keys are the same), so each is upserted once, not once per
        demande (ADR-0114)."""
        # (projection, champ, valeur, client) -> the four figures; by projection, the
        # joined demandes for the samples (SamplesWriter.join).
        summed: dict[tuple[str, str, str, str], list[int]] = {}
        joined: defaultdict[str, list[Any]] = defaultdict(list)
        for chunk in chunks(sorted(new)):
            c.execute("SELECT d.projection, d.demande_id, d.client, d.session_id, d.jour, "
                      f"{_FIGURES_OF_D} "
                      "FROM bilan_demandes d JOIN bilan_state s "
                      "ON s.projection = d.projection AND s.journal = ? "
                      f"WHERE d.demande_id IN ({','.join('?' * len(chunk))}) "
                      f"AND {NOT_DEFERRED.format(t='d')}",
                      [chemin, *chunk])
            for projection, demande_id, client, session, jour, *figures in c.fetchall():
                d, e, p, k = map(int, figures)
                pairs = list(new[demande_id].valeurs.items())
                joined[projection].append((pairs, client, session, jour, d, e, p, k))
                for champ, valeur in pairs:
                    key = (projection, champ, valeur, client)
                    acc = summed.get(key)
                    if acc is None:
                        summed[key] = [d, e, p, k]
                        continue
                    acc[0] += d
                    acc[1] += e
                    acc[2] += p
                    acc[3] += k
        by_projection: defaultdict[str, list[Any]] = defaultdict(list)
        for (projection, champ, valeur, client), sums in sorted(summed.items()):
            by_projection[projection].append(((champ, valeur, client), Figures(*sums)))
        for projection, items in by_projection.items():
            self._add(c, projection, items)
        for projection, rows in sorted(joined.items()):
            self.samples.join(c, projection, rows)
        self.days.join(c, chemin, new)

    def _add(self, c: Cursor, name: str,
             groups: Iterable[tuple[tuple[str, str, str], Figures]]) -> None:
        tk = self.dialect.tokens
        c.executemany(self._upsert, [
            (name, champ, valeur, client, f.delegations, tk(f.evites), tk(f.pilotage),
             tk(f.corrections)) for (champ, valeur, client), f in groups])
