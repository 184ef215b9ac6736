"""The classement's samples within a window and over a group's recent days, read from the
samples per day (``bilan_echantillons_jours``) in SQL, shared by both backends (ADR-0167,
ADR-0168).

A group's sample over a window (``depuis``/``jusqu_au``, ``YYYY-MM-DD`` inclusive, either
optional) is the sum of its days' samples; the drift flag needs where each group's recent
quarter starts (from its demandes per day) and its sample from that day on. SQL sums the
days, so a read returns a row per group, never the days' eighteen sums. A field's
``(inconnu)`` group is no stored group: over a window its per-demande sums are the
clients' less the valued groups', and each of its demandes counts as a session of its own
(``sql_samples.as_own_sessions``; ADR-0166, decision 4); it has no drift flag. Exact
integers at any size (ADR-0051): where the dialect's ``sum()`` is not exact at any size
(SQLite), the SQL sums are used only when they are integers (no value kept as decimal
text past 2^63) and none overflows; else Python adds the rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from miam_economies.domain.derive import start_latest_first
from miam_economies.projections.sql_dialect import SqlDialect
from miam_economies.projections.sql_samples import (
    CLIENT_WIDE,
    SAMPLE_SUMS,
    Sums,
    as_own_sessions,
    difference,
    summed,
)
from miam_economies.projections.sql_schema import Cursor, chunks
from miam_economies.projections.view import INCONNU

FIRST_DAY = "0000-00-00"
"""Below every day: a window without ``depuis``."""
LAST_DAY = "9999-99-99"
"""Above every day: a window without ``jusqu_au``."""


def samples_in_window(c: Cursor, dialect: SqlDialect, name: str, champ: str | None,
                      depuis: str | None, jusqu_au: str | None) -> dict[str, Sums]:
    """Each group's eighteen sums over its demandes whose day is within the window, of
    projection ``name``: by client when ``champ`` is None, else by value of journal field
    ``champ``, the demandes without one under ``INCONNU`` (see the module); a group
    without a demande there is absent."""
    lo, hi = depuis or FIRST_DAY, jusqu_au or LAST_DAY
    clients = _summed(c, dialect, name, CLIENT_WIDE, lo, hi)
    if champ is None:
        return clients
    valued = _summed(c, dialect, name, champ, lo, hi)
    rest = difference(summed(clients.values()), summed(valued.values()))
    if rest[0] > 0:
        valued[INCONNU] = as_own_sessions(rest)
    return valued


def recent_samples(c: Cursor, dialect: SqlDialect, name: str, champ: str | None,
                   totals: Mapping[str, int], depuis: str | None, jusqu_au: str | None
                   ) -> dict[str, tuple[str, Sums]]:
    """Each group of ``totals`` (``{cle: its demandes within the window}``, stored groups
    only) with a recent period within the window: ``{cle: (first day, its eighteen sums
    from that day on)}`` (``domain.derive.start_latest_first``), by client when ``champ``
    is None, else by value of journal field ``champ``. A group's demandes per day are
    read latest first (the primary key's order) only until its recent period is held,
    then one statement sums every group's period: about a quarter of its rows are read,
    twice. (One statement finding every group's start with a running sum reads every row
    of the window: slower at 1M events; ADR-0170.)"""
    key = "client" if champ is None else "valeur"
    field = CLIENT_WIDE if champ is None else champ
    lo, hi = depuis or FIRST_DAY, jusqu_au or LAST_DAY
    starts = []
    for cle, total in sorted(totals.items()):
        c.execute("SELECT jour, sum(demandes) FROM bilan_echantillons_jours "
                  f"WHERE projection = ? AND champ = ? AND {key} = ? AND jour >= ? "
                  "AND jour <= ? GROUP BY jour ORDER BY jour DESC",
                  (name, field, cle, lo, hi))
        start = start_latest_first(_fetched(c), total)
        if start is not None:
            starts.append((cle, start))
    out: dict[str, tuple[str, Sums]] = {}
    # Every group's period summed in one statement (a statement a group cost more in
    # Python than in SQLite: ADR-0170).
    for some in chunks(starts):
        groups = ", ".join("(?, ?)" for _ in some)
        found = _exact(c, dialect, f"WITH debuts (g, debut) AS (VALUES {groups}) "
                       f"SELECT t.{key}, d.debut, {{columns}} FROM debuts AS d "
                       "JOIN bilan_echantillons_jours AS t ON t.projection = ? "
                       f"AND t.champ = ? AND t.{key} = d.g AND t.jour >= d.debut "
                       "AND t.jour <= ? {group}",
                       [*(x for pair in some for x in pair), name, field, hi], "t.",
                       f"GROUP BY t.{key}, d.debut", 2)
        out.update((cle, (debut, sums)) for (cle, debut), sums in found.items())
    return out


def _fetched(c: Cursor) -> Iterator[tuple[str, int]]:
    # c's rows (jour, demandes) one at a time, as they are asked for.
    while (row := c.fetchone()) is not None:
        yield row[0], int(row[1])


def _summed(c: Cursor, dialect: SqlDialect, name: str, champ: str, lo: str, hi: str
            ) -> dict[str, Sums]:
    # Field champ's rows from lo to hi summed by value (by client under CLIENT_WIDE): one
    # row per group.
    key = "client" if champ == CLIENT_WIDE else "valeur"
    found = _exact(c, dialect, f"SELECT {key}, {{columns}} FROM bilan_echantillons_jours "
                   "WHERE projection = ? AND champ = ? AND jour >= ? AND jour <= ? {group}",
                   [name, champ, lo, hi], "", f"GROUP BY {key}", 1)
    return {cle: sums for (cle,), sums in found.items()}


def _exact(c: Cursor, dialect: SqlDialect, query: str, params: list[Any], table: str,
           group: str, width: int) -> dict[tuple[Any, ...], Sums]:
    # query's rows summed by their first ``width`` columns, exact at any size (ADR-0051),
    # groups without a demande left out. ``query`` has ``{columns}`` (the sample's
    # columns, of ``table``, a prefix) and ``{group}`` (``group``, its GROUP BY).
    try:
        c.execute(query.format(columns=", ".join(f"sum({table}{x})" for x in SAMPLE_SUMS),
                               group=group), params)
        rows = c.fetchall()
    except Exception as exc:  # SQLite's sum() past 2^63, and nothing else
        if not dialect.overflowed(exc):
            raise
        rows = None
    # SQLite's sum() of integers is an integer, exact, or fails; a float says a value
    # was kept as decimal text past 2^63 (ADR-0051), added in floating point.
    if rows is not None and (dialect.exact_sums or not any(
            isinstance(x, float) for row in rows for x in row[width:])):
        return {tuple(row[:width]): tuple(int(x) for x in row[width:]) for row in rows
                if int(row[width]) > 0}
    # Exact at any size: the rows summed in Python.
    c.execute(query.format(columns=", ".join(f"{table}{x}" for x in SAMPLE_SUMS),
                           group=""), params)
    grouped: dict[tuple[Any, ...], list[Sums]] = {}
    for row in c.fetchall():
        grouped.setdefault(tuple(row[:width]), []).append(tuple(int(x) for x in row[width:]))
    return {key: total for key, rows in grouped.items() if (total := summed(rows))[0] > 0}
