"""The classement's samples by day and within a window, read from the view in SQL, shared
by both backends (ADR-0167).

A group's sample over a window (``depuis``/``jusqu_au``, ``YYYY-MM-DD`` inclusive, either
optional) is the sum of its days' samples (``bilan_echantillons_jours``): the reads cost
O(groups x days) rows, never the demandes. A field's ``(inconnu)`` group is no stored
group: per day, its per-demande sums are the clients' less the valued groups', and its
sessions are not kept: each of its demandes counts as a session of its own
(``sql_samples.as_own_sessions``; ADR-0166, decision 4). Exact integers at any size
(ADR-0051).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from miam_economies.projections.sql_samples import (
    CLIENT_WIDE,
    SAMPLE_SUMS,
    Sums,
    as_own_sessions,
    difference,
    summed,
)
from miam_economies.projections.sql_schema import Cursor
from miam_economies.projections.view import INCONNU

FIRST_DAY = "0000-00-00"
"""Below every day: a window without ``depuis``."""
LAST_DAY = "9999-99-99"
"""Above every day: a window without ``jusqu_au``."""

ByDay = dict[str, list[tuple[str, Sums]]]
"""Group key -> ``(jour, fifteen sums)`` in day order."""


def samples_by_day(c: Cursor, name: str, champ: str | None, depuis: str | None,
                   jusqu_au: str | None) -> ByDay:
    """Each group's samples per day within the window, in day order, of projection
    ``name``: by client when ``champ`` is None, else by value of journal field ``champ``
    (demandes without one under ``INCONNU``, for the days that hold some). Days without
    a demande of the group are absent; a group without any in the window too."""
    lo, hi = depuis or FIRST_DAY, jusqu_au or LAST_DAY
    clients = _days(c, name, CLIENT_WIDE, lo, hi)
    if champ is None:
        return _ordered(clients)
    valued = _days(c, name, champ, lo, hi)
    whole: dict[str, list[Sums]] = defaultdict(list)
    for by_client in clients.values():
        for jour, sums in by_client.items():
            whole[jour].append(sums)
    per_day: dict[str, list[Sums]] = defaultdict(list)
    for by_value in valued.values():
        for jour, sums in by_value.items():
            per_day[jour].append(sums)
    unknown: dict[str, Sums] = {}
    for jour, rows in whole.items():
        rest = difference(summed(rows), summed(per_day.get(jour, ())))
        if rest[0] > 0:
            unknown[jour] = as_own_sessions(rest)
    out = _ordered(valued)
    if unknown:
        out[INCONNU] = sorted(unknown.items())
    return out


def samples_in_window(c: Cursor, name: str, champ: str | None, depuis: str | None,
                      jusqu_au: str | None) -> dict[str, Sums]:
    """Each group's fifteen sums over its demandes whose day is within the window (see
    ``samples_by_day``): its days' sums added; a group without a demande there is
    absent."""
    return {cle: summed(sums for _, sums in days)
            for cle, days in samples_by_day(c, name, champ, depuis, jusqu_au).items()}


def _days(c: Cursor, name: str, champ: str, lo: str, hi: str
          ) -> dict[str, dict[str, Sums]]:
    # valeur (the client under CLIENT_WIDE) -> jour -> sums over the field's clients.
    c.execute(f"SELECT valeur, client, jour, {', '.join(SAMPLE_SUMS)} "
              "FROM bilan_echantillons_jours WHERE projection = ? AND champ = ? "
              "AND jour >= ? AND jour <= ?", (name, champ, lo, hi))
    out: dict[str, dict[str, Sums]] = defaultdict(dict)
    for valeur, client, jour, *sums in c.fetchall():
        cle = client if champ == CLIENT_WIDE else valeur
        row = tuple(map(int, sums))
        known = out[cle].get(jour)
        out[cle][jour] = row if known is None else summed((known, row))
    return out


def _ordered(groups: Mapping[str, Mapping[str, Sums]]) -> ByDay:
    return {cle: sorted(days.items()) for cle, days in groups.items() if days}
