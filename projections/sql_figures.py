"""The bilan view's per-client, per-day and per-model tables in SQL: what a page's fold
adds to them (ADR-0004, ADR-0062).

Each is a sum over events, upserted in primary-key order, so each upsert lands next to the
previous one in the table's B-tree.
"""

from __future__ import annotations

from miam_economies.projections.delta import PageDelta
from miam_economies.projections.sql_dialect import SqlDialect
from miam_economies.projections.sql_schema import USAGE_SUMS, Cursor


class FiguresWriter:
    """Adds a page's figures to ``bilan_clients`` (with its conflicts), ``bilan_anomalies``,
    ``bilan_jours`` and ``bilan_modeles`` (per model and day), token sums exact by
    ``dialect``'s rule (ADR-0051)."""

    def __init__(self, dialect: SqlDialect):
        self.dialect = dialect
        added = dialect.added
        self._clients = (
            "INSERT INTO bilan_clients VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (projection, client) DO UPDATE SET "
            + added("bilan_clients", ("delegations", "evenements", "conflits"),
                    ("evites", "pilotage", "corrections")))
        self._anomalies = (
            "INSERT INTO bilan_anomalies VALUES (?, ?, ?, ?) "
            "ON CONFLICT (projection, client, kind) DO UPDATE SET "
            + added("bilan_anomalies", ("nombre",)))
        self._jours = (
            "INSERT INTO bilan_jours VALUES (?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (projection, jour, client) DO UPDATE SET "
            + added("bilan_jours", ("delegations",), ("evites", "pilotage", "corrections")))
        self._modeles = (
            "INSERT INTO bilan_modeles VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (projection, modele, jour, client) DO UPDATE SET "
            + added("bilan_modeles", ("tours",), USAGE_SUMS))

    def fold(self, c: Cursor, name: str, delta: PageDelta) -> None:
        """Add ``delta``'s per-client, per-anomaly, per-day and per-model figures to
        projection ``name``'s rows, in ``c``'s write transaction."""
        tk = self.dialect.tokens
        c.executemany(self._clients, [
            (name, client, f.delegations, tk(f.evites), tk(f.pilotage), tk(f.corrections),
             f.evenements, delta.conflits.get(client, 0))
            for client, f in sorted(delta.clients.items())])
        c.executemany(self._anomalies, [
            (name, client, kind, n) for (client, kind), n in sorted(delta.anomalies.items())])
        c.executemany(self._jours, sorted(
            (name, jour, client, f.delegations, tk(f.evites), tk(f.pilotage),
             tk(f.corrections)) for (client, jour), f in delta.jours.items()))
        c.executemany(self._modeles, sorted(
            (name, modele, jour, client, m.tours, tk(m.input_tokens), tk(m.output_tokens),
             tk(m.cache_read_input_tokens), tk(m.cache_creation_input_tokens), tk(m.cout))
            for (client, modele, jour), m in delta.modeles.items()))
