"""The journal-field groups by day (``bilan_groupes_jours``), for the fields of
``CHAMPS_PAR_JOUR`` (preset, format), shared by both backends (ADR-0133).

A group ``(champ, valeur, jour, client)`` holds what the client's demandes whose journal
line has ``valeur`` in ``champ`` got on day ``jour``: the aggregation of
``bilan_demandes_jours`` joined with ``journal_valeurs``, kept so by the same three writes
as the groups without days (``sql_groups``, which calls these): a page's fold, journal
lines joined late, and a rebuild at a replay's end (ADR-0062, ADR-0114).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain
from typing import Any

from miam_economies.domain.bilan import Figures
from miam_economies.domain.breakdowns import CHAMPS_PAR_JOUR
from miam_economies.projections.delta import PageDelta
from miam_economies.projections.sql_dialect import SqlDialect
from miam_economies.projections.sql_schema import NOT_DEFERRED, TOKEN_LIMIT, Cursor, chunks
from miam_economies.projections.view import JournalLine

_FIGURES_OF_J = "j.delegations, j.evites, j.pilotage, j.corrections"
_SUMS_OF_J = "sum(j.delegations), sum(j.evites), sum(j.pilotage), sum(j.corrections)"
_FIELDS = ", ".join(f"'{champ}'" for champ in CHAMPS_PAR_JOUR)
_JOINED = ("FROM bilan_demandes_jours j JOIN journal_valeurs v ON v.chemin = ? "
           f"AND v.demande_id = j.demande_id AND v.champ IN ({_FIELDS}) "
           "WHERE j.projection = ?")

Key = tuple[str, str, str, str]
"""``(champ, valeur, jour, client)``."""


class DayGroupsWriter:
    """Keeps ``bilan_groupes_jours`` (see the module), token sums exact by ``dialect``'s
    rule (ADR-0051)."""

    def __init__(self, dialect: SqlDialect, rows: int):
        self.dialect = dialect
        self.rows = rows  # rows read and written at a time by a rebuild (ADR-0114)
        self._upsert = (
            "INSERT INTO bilan_groupes_jours VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (projection, champ, jour, valeur, client) DO UPDATE SET "
            + dialect.added("bilan_groupes_jours", ("delegations",),
                            ("evites", "pilotage", "corrections")))

    def fold(self, c: Cursor, name: str, delta: PageDelta,
             valeurs: Mapping[str, Sequence[tuple[str, str]]]) -> None:
        """Add a page's per-demande, per-day deltas to the groups of the journal values
        already known for those demandes (``valeurs``: demande id -> (champ, valeur))."""
        groups: defaultdict[Key, Figures] = defaultdict(Figures)
        for (client, demande_id, jour), f in delta.demandes_jours.items():
            for champ, valeur in valeurs.get(demande_id, ()):
                if champ in CHAMPS_PAR_JOUR:
                    groups[(champ, valeur, jour, client)].add(f)
        self._add(c, name, sorted(groups.items()))

    def join(self, c: Cursor, chemin: str, new: Mapping[str, JournalLine]) -> None:
        """Bring the per-day figures of the demandes already folded to the groups of their
        new journal lines ``new``, in every projection built on journal ``chemin``."""
        wanted = {demande_id: [(champ, valeur) for champ, valeur in line.valeurs.items()
                               if champ in CHAMPS_PAR_JOUR]
                  for demande_id, line in new.items()}
        wanted = {demande_id: pairs for demande_id, pairs in wanted.items() if pairs}
        summed: dict[tuple[str, str, str, str, str], list[int]] = {}
        for chunk in chunks(sorted(wanted)):
            c.execute(f"SELECT j.projection, j.demande_id, j.jour, j.client, {_FIGURES_OF_J} "
                      "FROM bilan_demandes_jours j JOIN bilan_state s "
                      "ON s.projection = j.projection AND s.journal = ? "
                      f"WHERE j.demande_id IN ({','.join('?' * len(chunk))}) "
                      f"AND {NOT_DEFERRED.format(t='j')}",
                      [chemin, *chunk])
            for projection, demande_id, jour, client, *figures in c.fetchall():
                d, e, p, k = map(int, figures)
                for champ, valeur in wanted[demande_id]:
                    acc = summed.setdefault((projection, champ, valeur, jour, client),
                                            [0, 0, 0, 0])
                    acc[0] += d
                    acc[1] += e
                    acc[2] += p
                    acc[3] += k
        by_projection: defaultdict[str, list[tuple[Key, Figures]]] = defaultdict(list)
        for (projection, *key), sums in sorted(summed.items()):
            by_projection[projection].append(((key[0], key[1], key[2], key[3]),
                                              Figures(*sums)))
        for projection, items in by_projection.items():
            self._add(c, projection, items)

    def rebuild(self, c: Cursor, name: str, journal: str | None) -> None:
        """Compute projection ``name``'s groups by day again from its per-day demande rows
        and journal ``journal``'s values (None: no journal recorded, no group), in place
        of what is stored, streamed ``rows`` at a time (ADR-0114)."""
        c.execute("DELETE FROM bilan_groupes_jours WHERE projection = ?", (name,))
        if journal is None:
            return
        stream = self.dialect.stream
        rebuilt: Iterable[Sequence[Any]]
        if self._sums_exact_in_sql(c, name):
            rebuilt = chain.from_iterable(stream(
                c, f"SELECT v.champ, v.valeur, j.jour, j.client, {_SUMS_OF_J} {_JOINED} "
                   "GROUP BY v.champ, j.jour, v.valeur, j.client", (journal, name),
                self.rows))
        else:
            rebuilt = _summed(chain.from_iterable(stream(
                c, f"SELECT v.champ, v.valeur, j.jour, j.client, {_FIGURES_OF_J} {_JOINED} "
                   "ORDER BY v.champ, j.jour, v.valeur, j.client", (journal, name),
                self.rows)))
        tk, batch = self.dialect.tokens, []
        statement = "INSERT INTO bilan_groupes_jours VALUES (" + ", ".join("?" * 9) + ")"
        for champ, valeur, jour, client, dl, e, p, k in rebuilt:
            batch.append((name, champ, valeur, jour, client, int(dl), tk(int(e)),
                          tk(int(p)), tk(int(k))))
            if len(batch) >= self.rows:
                c.executemany(statement, batch)
                batch.clear()
        if batch:
            c.executemany(statement, batch)

    def _sums_exact_in_sql(self, c: Cursor, name: str) -> bool:
        # As GroupsWriter.sums_exact_in_sql: every sum below 2^61 in magnitude, bounded by
        # the sum of all the rows' magnitudes (total() adds in floating point).
        if self.dialect.exact_sums:
            return True
        c.execute("SELECT total(abs(evites)), total(abs(pilotage)), total(abs(corrections)) "
                  "FROM bilan_demandes_jours WHERE projection = ?", (name,))
        return all(total < TOKEN_LIMIT / 2 for total in c.fetchone())

    def _add(self, c: Cursor, name: str, groups: Iterable[tuple[Key, Figures]]) -> None:
        tk = self.dialect.tokens
        c.executemany(self._upsert, [
            (name, champ, valeur, jour, client, f.delegations, tk(f.evites), tk(f.pilotage),
             tk(f.corrections)) for (champ, valeur, jour, client), f in groups])


def _summed(rows: Iterable[Sequence[Any]]) -> Iterable[tuple[Any, ...]]:
    """Rows ``(champ, valeur, jour, client, four figures)`` in key order, summed one key at
    a time in Python integers (exact at any size: ADR-0051)."""
    current: Sequence[Any] | None = None
    sums = [0, 0, 0, 0]
    for row in rows:
        key = row[:4]
        if key != current:
            if current is not None:
                yield (*current, *sums)
            current, sums = key, [0, 0, 0, 0]
        for i, value in enumerate(row[4:]):
            sums[i] += int(value)
    if current is not None:
        yield (*current, *sums)
