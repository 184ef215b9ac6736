"""The bilan view's per-demande tables in SQL (``bilan_demandes``, its tools, its links
and its figures by day): what a page's fold adds to them, and the page's demandes as they
were before it (ADR-0006, ADR-0062, ADR-0073, ADR-0133)."""

from __future__ import annotations

from operator import itemgetter
from typing import Any

from miam_economies.projections.delta import PageDelta
from miam_economies.projections.sql_dialect import SqlDialect
from miam_economies.projections.sql_schema import Cursor, chunks

Stored = tuple[int, int, int, int, str | None, str | None, str | None]
"""One demande's stored ``(delegations, evites, pilotage, corrections, delegation_id,
session_id, jour)``: figures (tokens), then the smallest delegation id, its session and
its day (``YYYY-MM-DD``, the projection's zone: ADR-0167; None until a delegation
arrives)."""

Before = dict[tuple[str, str], Stored]
"""The stored rows (``Stored``) of a page's demandes by ``(client, demande_id)``, before
the page is folded (absent: never seen)."""

_ATTRIBUTES = ("agent_id", "par_subagent", "retour", "methode", "session_id", "jour",
               "delegation_id")
"""A delegation's attributes, taken from the delegation with the smallest id (ADR-0006;
its session and day too: ADR-0166, ADR-0167)."""


class DemandesWriter:
    """Adds a page's demandes to ``bilan_demandes``, ``bilan_outils``, ``bilan_liens`` and
    ``bilan_demandes_jours``,
    token sums exact by ``dialect``'s rule (ADR-0051)."""

    def __init__(self, dialect: SqlDialect):
        self.dialect = dialect
        # The delegation's attributes are taken when its id is the smallest seen so far;
        # in an upsert's SET every column reads the row as it was before the update.
        take = ("excluded.delegation_id IS NOT NULL AND (bilan_demandes.delegation_id IS NULL "
                "OR excluded.delegation_id < bilan_demandes.delegation_id)")
        attributes = ", ".join(
            f"{col} = CASE WHEN {take} THEN excluded.{col} ELSE bilan_demandes.{col} END"
            for col in _ATTRIBUTES)
        self._demandes = (
            "INSERT INTO bilan_demandes VALUES (" + ", ".join("?" * 22) + ") "
            "ON CONFLICT (projection, demande_id, client) DO UPDATE SET "
            + dialect.added("bilan_demandes",
                            ("delegations", "pilotages", "corrections_nombre"),
                            ("evites", "pilotage", "corrections", "tokens_entree",
                             "tokens_sortie", "lus", "ecrits", "consigne", "rendus"))
            + ", " + attributes)
        self._jours = (
            "INSERT INTO bilan_demandes_jours VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (projection, demande_id, client, jour) DO UPDATE SET "
            + dialect.added("bilan_demandes_jours", ("delegations",),
                            ("evites", "pilotage", "corrections")))
        self._outils = (
            "INSERT INTO bilan_outils VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (projection, demande_id, client, outil) DO UPDATE SET "
            + dialect.added("bilan_outils", ("nombre",), ("cout",)))

    @staticmethod
    def before(c: Cursor, name: str, delta: PageDelta) -> Before:
        """The stored rows of ``delta``'s demandes in projection ``name``, before the
        page is folded (see ``Before``): what the classement's samples subtract, and the
        session and day each demande was counted in."""
        before: Before = {}
        ids = sorted({demande_id for _, demande_id in delta.demandes})
        for chunk in chunks(ids):
            c.execute("SELECT client, demande_id, delegations, evites, pilotage, corrections, "
                      "delegation_id, session_id, jour FROM bilan_demandes "
                      "WHERE projection = ? "
                      f"AND demande_id IN ({','.join('?' * len(chunk))})", [name, *chunk])
            for client, demande_id, dl, e, p, k, delegation_id, session_id, jour in (
                    c.fetchall()):
                before[(client, demande_id)] = (dl, int(e), int(p), int(k), delegation_id,
                                                session_id, jour)
        return before

    def fold(self, c: Cursor, name: str, delta: PageDelta) -> None:
        """Add ``delta``'s demandes (figures, delegation, tools, links, figures by day)
        to projection ``name``'s rows, in ``c``'s write transaction."""
        tk = self.dialect.tokens
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
                             0, 0, 0, 0, 0, 0, None, None))
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
                             tk(v.lus), tk(v.ecrits), tk(v.consigne), tk(v.rendus),
                             v.session_id, v.jour))
            for outil, (cout, nombre) in d.par_outil.items():
                outils.append((name, demande_id, client, outil, tk(cout), nombre))
        c.executemany(self._demandes, rows)
        c.executemany("INSERT INTO bilan_liens VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                      liens)
        c.executemany(self._outils, outils)
        c.executemany(self._jours, sorted(
            (name, demande_id, client, jour, f.delegations, tk(f.evites), tk(f.pilotage),
             tk(f.corrections))
            for (client, demande_id, jour), f in delta.demandes_jours.items()))
