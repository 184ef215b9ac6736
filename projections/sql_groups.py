"""The journal-field groups of the bilan view in SQL (``bilan_groupes``), shared by both
backends: how token sums are added in an upsert, and the three ways a group's figures
change (ADR-0006, ADR-0051, ADR-0062).

A group ``(champ, valeur, client)`` of a projection holds the summed figures
(delegations, evites, pilotage, corrections) of the client's demandes whose journal line
has ``valeur`` in field ``champ``. So it is always the aggregation of ``bilan_demandes``
joined with ``journal_valeurs`` on the projection's journal, and three writes keep it so:

* a page's fold adds each demande's delta to the groups of its journal values
  (``_fold_groups``);
* journal lines joined later bring their demandes' figures so far (``_join_groups``);
* ``rebuild_groups`` computes them again from scratch, in one aggregation: what a replay
  does once at its end instead of per page.
"""

from __future__ import annotations

from abc import abstractmethod
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from miam_economies.domain.bilan import Figures
from miam_economies.projections.delta import PageDelta
from miam_economies.projections.sql_samples import (
    SqlSamples,
    contribution,
    samples_by_projection,
)
from miam_economies.projections.sql_schema import TOKEN_LIMIT, Cursor, chunks
from miam_economies.projections.view import JournalLine

_FIGURES_OF_D = "d.delegations, d.evites, d.pilotage, d.corrections"
_SUMS_OF_D = "sum(d.delegations), sum(d.evites), sum(d.pilotage), sum(d.corrections)"
_JOINED = ("FROM bilan_demandes d JOIN journal_valeurs v "
           "ON v.chemin = ? AND v.demande_id = d.demande_id WHERE d.projection = ?")


class SqlGroups(SqlSamples):
    """Writes of ``bilan_groupes`` and of the classement's samples beside them
    (``SqlSamples``), and the token sums' upsert arithmetic; a backend gives
    ``_write``, ``ADD_TOKENS``/``tokens`` where its columns need them, and
    ``EXACT_SUMS``."""

    ADD_TOKENS = "{t}.{c} + excluded.{c}"
    """How an upsert adds a token sum, ``{t}`` the table and ``{c}`` the column: exact
    where the column's type is (PostgreSQL's ``numeric``); SQLite's view overrides it."""

    EXACT_SUMS = True
    """Whether SQL's ``sum()`` of token columns is exact at any size (PostgreSQL's
    ``numeric``); SQLite's overflows past 2^63, so its view checks first (ADR-0051)."""

    @staticmethod
    def tokens(value: int) -> Any:
        """A token sum as a statement parameter: the int itself, where the column holds any
        size; SQLite's view binds a large one as text (ADR-0051)."""
        return value

    @abstractmethod
    def _write(self) -> AbstractContextManager[Cursor]:
        """A write transaction, committed on normal exit, rolled back on an exception."""

    def _added(self, table: str, counts: Sequence[str] = (),
               tokens: Sequence[str] = ()) -> str:
        """The ``SET`` list of an upsert adding the new row's ``counts`` (64-bit) and
        ``tokens`` (exact at any size) to the stored row's. The stored row's columns are
        named by their table: PostgreSQL finds a bare name ambiguous beside excluded's."""
        return ", ".join([*(f"{c} = {table}.{c} + excluded.{c}" for c in counts),
                          *(f"{c} = " + self.ADD_TOKENS.format(t=table, c=c)
                            for c in tokens)])

    def rebuild_groups(self, name: str) -> None:
        """Compute projection ``name``'s groups (and the classement's samples,
        ``rebuild_samples``) again from its demandes and its journal's values, in one
        write transaction (a replay that folded its pages without groups
        calls it once at the end; ADR-0062). Raises ``PersistenceError``."""
        with self._write() as c:
            c.execute("SELECT journal FROM bilan_state WHERE projection = ?", (name,))
            row = c.fetchone()
            c.execute("DELETE FROM bilan_groupes WHERE projection = ?", (name,))
            if row is None:
                return
            journal = row[0]
            self.rebuild_samples(c, name, journal)
            if self.EXACT_SUMS or self._sums_fit(c, name):
                c.execute("INSERT INTO bilan_groupes SELECT d.projection, v.champ, v.valeur, "
                          f"d.client, {_SUMS_OF_D} {_JOINED} "
                          "GROUP BY d.projection, v.champ, v.valeur, d.client",
                          (journal, name))
                return
            # Some sum may pass 2^63: add them as Python ints (ADR-0051).
            groups: defaultdict[tuple[str, str, str], Figures] = defaultdict(Figures)
            c.execute(f"SELECT v.champ, v.valeur, d.client, {_FIGURES_OF_D} {_JOINED}",
                      (journal, name))
            for champ, valeur, client, *figures in c.fetchall():
                groups[(champ, valeur, client)].add(Figures(*map(int, figures)))
            self._add_groups(c, name, sorted(groups.items()))

    @staticmethod
    def _sums_fit(c: Cursor, name: str) -> bool:
        # Whether every group's sums stay below 2^61 in magnitude, so SQL's integer sum()
        # is exact and each result an INTEGER by ADR-0051's rule: the sum of all the
        # projection's demandes' magnitudes bounds any group's. total() adds in floating
        # point and never overflows; a sum kept as decimal text (past 2^62) counts as
        # its value, far above the bound.
        c.execute("SELECT total(abs(evites)), total(abs(pilotage)), "
                  "total(abs(corrections)) FROM bilan_demandes WHERE projection = ?", (name,))
        return all(total < TOKEN_LIMIT / 2 for total in c.fetchone())

    def _fold_groups(self, c: Cursor, name: str, journal: str, delta: PageDelta,
                     before: Mapping[tuple[str, str], tuple[int, int, int, int]]) -> None:
        """Add a page's demande deltas to the groups of the demandes already joined with
        the journal, and their changes to the samples (``before``: the page's demandes
        as they were, ``demandes_before``); the others are joined when their line comes
        (``_join_groups``)."""
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
        self._add_groups(c, name, sorted(groups.items()))
        self.fold_samples(c, name, delta, before, valeurs)

    def _join_groups(self, c: Cursor, chemin: str, new: Mapping[str, JournalLine]) -> None:
        """Bring the figures of the demandes already folded to the groups (and samples) of
        their new journal lines ``new`` (by demande id), in every projection built on
        journal ``chemin``."""
        groups: defaultdict[tuple[str, str, str, str], Figures] = defaultdict(Figures)
        samples = []
        for chunk in chunks(sorted(new)):
            c.execute(f"SELECT d.projection, d.demande_id, d.client, {_FIGURES_OF_D} "
                      "FROM bilan_demandes d JOIN bilan_state s "
                      "ON s.projection = d.projection AND s.journal = ? "
                      f"WHERE d.demande_id IN ({','.join('?' * len(chunk))})",
                      [chemin, *chunk])
            for projection, demande_id, client, *figures in c.fetchall():
                d, e, p, k = map(int, figures)
                sums = contribution(d, e, p, k)
                for champ, valeur in new[demande_id].valeurs.items():
                    groups[(projection, champ, valeur, client)].add(Figures(d, e, p, k))
                    if sums[0]:
                        samples.append((projection, (champ, valeur, client), sums))
        by_projection: defaultdict[str, list[Any]] = defaultdict(list)
        for (projection, champ, valeur, client), f in sorted(groups.items()):
            by_projection[projection].append(((champ, valeur, client), f))
        for projection, items in by_projection.items():
            self._add_groups(c, projection, items)
        for projection, keyed in samples_by_projection(samples):
            self.add_samples(c, projection, keyed)

    def _add_groups(self, c: Cursor, name: str,
                    groups: Iterable[tuple[tuple[str, str, str], Figures]]) -> None:
        c.executemany(
            "INSERT INTO bilan_groupes VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (projection, champ, valeur, client) DO UPDATE SET "
            + self._added("bilan_groupes", ("delegations",),
                          ("evites", "pilotage", "corrections")),
            [(name, champ, valeur, client, f.delegations, self.tokens(f.evites),
              self.tokens(f.pilotage), self.tokens(f.corrections))
             for (champ, valeur, client), f in groups],
        )
