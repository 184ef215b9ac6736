"""The samples' clusters (``bilan_sessions``): each group's totals per Claude Code session
and day, from which the samples' ten per-session sums are kept exact (ADR-0166,
ADR-0167).

The classement takes its variances over the sessions of each group (SPEC, "Ranking
presets: the classement", "Sessions"): a demande belongs to the session (``session_id``)
of its delegation with the smallest id, and a sample keeps, beside its per-demande sums,
``Echantillon.session_sums_of`` summed over its sessions' totals ``(demandes, evites,
pilotage, corrections)``. Those sums do not add demande by demande: a session's part is
replaced. A cluster is a session's demandes of one day (``jour``, the demande's: its
delegation's of smallest id, in the projection's zone), in every read, so that a window
sums days and a window over the whole history answers as none does (ADR-0167, decision
2). So the totals of each (group, session, day) are kept here, a row per cluster holding
some of the group's demandes (``demandes`` > 0), keyed as the samples are (``champ``,
``valeur``, ``client``; ``CLIENT_WIDE`` for a client's whole sample) and by ``session``
and ``jour``. A session is the pair (client, session_id): sessions of two clients never
mix.

The three writes of the samples (``sql_groups.GroupsWriter``) change them: a fold and a
journal join give the change of each (group, session, day)'s totals,
``SessionsWriter.apply`` adds them, gets the totals after back (so before: after less the
change) and returns the change of each (group, day)'s ten sums (after minus before,
cluster by cluster); a rebuild streams every cluster's totals in group and day order
through ``SessionsWriter.rebuilt``, which writes the clusters and the samples per day. The
``(inconnu)`` group of a field is no stored group, and its sessions are not kept: reading
them took a scan of every session at each read (61 ms at 200,000 events), so the
classement makes no claim on it (ADR-0166). Token totals are exact at
any size (ADR-0051); the sums are Python integers.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from operator import add
from typing import Any

from miam_economies.domain.echantillon import Echantillon
from miam_economies.projections.sql_dialect import SqlDialect
from miam_economies.projections.sql_schema import Cursor, chunks

SESSION_SUMS = ("sessions", "session_demandes_squared", "session_net_squared",
                "session_demandes_times_net", "session_evites_squared",
                "session_corrections_squared", "session_evites_times_corrections",
                "session_demandes_cubed", "session_demandes_squared_times_net",
                "session_demandes_times_net_squared")
"""The samples' per-session columns, in ``Echantillon``'s order (after its eight
per-demande sums)."""

NO_SESSION_CHANGE = (0,) * len(SESSION_SUMS)
"""The ten per-session sums of a sample none of whose sessions changed."""

SessionKey = tuple[str, str, str, str, str]
"""``(champ, valeur, client, session, jour)``: one cluster of one sample."""

GroupKey = tuple[str, str, str]
"""``(champ, valeur, client)``: one sample."""

DayKey = tuple[str, str, str, str]
"""``(champ, valeur, client, jour)``: one sample's day."""

_session_sums_of = Echantillon.session_sums_of
_DAY_SUMS = len(Echantillon.__slots__)
_GROUP_SUMS = 4 + _DAY_SUMS  # the group's four figures, then its sample's sums
# rebuilt() adds the eight per-demande sums and the ten per-session ones with map(), which
# would stop short, silently, were they ever not the sample's.
assert 8 + len(SESSION_SUMS) == _DAY_SUMS


def add_totals(changes: dict[Any, list[int]], key: Any, n: int, e: int, p: int, k: int
               ) -> None:
    """Add ``(n, e, p, k)`` (demandes, evites, pilotage, corrections; tokens) to the
    running change of cluster ``key``'s totals in ``changes``, in place."""
    acc = changes.get(key)
    if acc is None:
        changes[key] = [n, e, p, k]
        return
    acc[0] += n
    acc[1] += e
    acc[2] += p
    acc[3] += k


class SessionsWriter:
    """Keeps ``bilan_sessions`` (see the module), token totals exact by ``dialect``'s
    rule (ADR-0051)."""

    def __init__(self, dialect: SqlDialect):
        self.dialect = dialect
        # Adds each change and gives the totals after: those before are after less the
        # change, with no read of their own (ADR-0114).
        self._upsert = (
            "ON CONFLICT (projection, champ, valeur, client, session, jour) DO UPDATE SET "
            + dialect.added("bilan_sessions", ("demandes",),
                            ("evites", "pilotage", "corrections"))
            + " RETURNING champ, valeur, client, session, jour, demandes, evites, "
            "pilotage, corrections")
        self._delete = ("DELETE FROM bilan_sessions WHERE projection = ? AND champ = ? "
                        "AND valeur = ? AND client = ? AND session = ? AND jour = ? "
                        "AND demandes = 0")

    def apply(self, c: Cursor, name: str, changes: Mapping[SessionKey, Sequence[int]]
              ) -> dict[DayKey, list[int]]:
        """Add ``changes`` (cluster key -> change of its totals ``(demandes, evites,
        pilotage, corrections)``) to projection ``name``'s clusters, in ``c``'s write
        transaction; return, for each (sample, day) whose sums moved, the change of its
        ten per-session sums (``SESSION_SUMS`` order): ``session_sums_of`` of each
        cluster's totals after, minus before (ADR-0166, ADR-0167; ``by_group`` sums a
        sample's days). A cluster left without demandes is deleted (its totals are then
        all 0). One upsert of ``sql_schema.CHUNK`` rows at a time, in primary-key order,
        returns the totals after."""
        tk = self.dialect.tokens
        rows = sorted((key, change) for key, change in changes.items() if any(change))
        sums: dict[DayKey, list[int]] = {}
        emptied: list[tuple[str, ...]] = []
        for chunk in chunks(rows):
            c.execute("INSERT INTO bilan_sessions VALUES "
                      + ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"] * len(chunk)) + " "
                      + self._upsert,
                      [x for key, (dn, de, dp, dk) in chunk
                       for x in (name, *key, dn, tk(de), tk(dp), tk(dk))])
            for champ, valeur, client, session, jour, n, e, p, k in c.fetchall():
                key = (champ, valeur, client, session, jour)
                dn, de, dp, dk = changes[key]
                n, e, p, k = int(n), int(e), int(p), int(k)
                after = _session_sums_of(n, e, p, k)
                before = _session_sums_of(n - dn, e - de, p - dp, k - dk)
                day = (champ, valeur, client, jour)
                acc = sums.get(day)
                if acc is None:
                    sums[day] = [a - b for a, b in zip(after, before, strict=True)]
                else:
                    for i in range(len(SESSION_SUMS)):
                        acc[i] += after[i] - before[i]
                if n == 0:
                    emptied.append((name, *key))
        c.executemany(self._delete, emptied)
        return sums

    def rebuilt(self, c: Cursor, name: str, rows: Iterable[Sequence[Any]], size: int
                ) -> Iterator[tuple[Any, ...]]:
        """Rows ``(champ, valeur, client, session, jour, delegations, evites, pilotage,
        corrections, demandes, then the other seven per-demande sample sums)`` of each
        (group, day, session), every group's rows together and within them every day's
        (``session`` and ``jour`` None and ``demandes`` 0: the group's demandes without a
        delegation, in no cluster; their sample sums may be NULL), summed one group at a
        time: yield the group's key, its four figures' sums and its eighteen sample sums in
        ``Echantillon``'s order; insert its clusters into projection ``name``'s
        ``bilan_sessions`` and its days' eighteen sums into ``bilan_echantillons_jours``
        (both deleted first), ``size`` rows at a time. Values may be decimal text
        (SQLite) or ``Decimal`` (PostgreSQL); sums are Python integers, exact (ADR-0051,
        ADR-0114, ADR-0167)."""
        tk, batch, days = self.dialect.tokens, [], []
        statement = "INSERT INTO bilan_sessions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        current: Sequence[Any] | None = None
        day: tuple[Any, ...] | None = None
        t = [0] * _GROUP_SUMS  # the group's figures, per-demande sums, per-session sums
        j = [0] * _DAY_SUMS  # the day's sample sums
        for row in rows:
            key = row[:3]
            if (*key, row[4]) != day:
                # A day's sums join its group's once the day is done, not row by row:
                # this loop runs once per cluster (1.8 million at 1M events; ADR-0179).
                if day is not None and j[0]:
                    days.append(_day_row(name, day, j, tk))
                    t[4:] = map(add, t[4:], j)
                day, j = (*key, row[4]), [0] * _DAY_SUMS
                if key != current:
                    if current is not None:
                        yield (*current, *t)
                    current, t = key, [0] * _GROUP_SUMS
            t[0] += int(row[5])
            t[1] += int(row[6])
            t[2] += int(row[7])
            t[3] += int(row[8])
            n = int(row[9])
            if n <= 0:  # demandes without a delegation: in the groups, in no cluster
                continue
            e, p, k = int(row[10]), int(row[11]), int(row[12])
            j[:] = map(add, j, (n, e, p, k, int(row[13]), int(row[14]), int(row[15]),
                                int(row[16]), *_session_sums_of(n, e, p, k)))
            batch.append((name, *key, row[3], row[4], n, tk(e), tk(p), tk(k)))
            if len(batch) >= size:
                c.executemany(statement, batch)
                batch.clear()
            if len(days) >= size:
                c.executemany(_DAY_INSERT, days)
                days.clear()
        if day is not None and j[0]:
            days.append(_day_row(name, day, j, tk))
            t[4:] = map(add, t[4:], j)
        if current is not None:
            yield (*current, *t)
        if batch:
            c.executemany(statement, batch)
        if days:
            c.executemany(_DAY_INSERT, days)


_DAY_INSERT = ("INSERT INTO bilan_echantillons_jours VALUES ("
               + ", ".join("?" * (5 + _DAY_SUMS)) + ")")


def _day_row(name: str, day: Sequence[Any], j: Sequence[int], tk: Any) -> tuple[Any, ...]:
    # One rebuilt row of bilan_echantillons_jours: counts as they are, token sums by the
    # dialect's rule (ADR-0051).
    return (name, *day, j[0], *map(tk, j[1:8]), j[8], *map(tk, j[9:]))


def by_group(days: Mapping[DayKey, Sequence[int]]) -> dict[GroupKey, list[int]]:
    """The changes of ``days`` ((sample, day) -> sums' change, as ``SessionsWriter.apply``
    returns them) summed over each sample's days: the change of each sample's sums."""
    out: dict[GroupKey, list[int]] = {}
    for (champ, valeur, client, _), change in days.items():
        acc = out.get((champ, valeur, client))
        if acc is None:
            out[(champ, valeur, client)] = list(change)
        else:
            for i, value in enumerate(change):
                acc[i] += value
    return out
