"""The samples' sessions (``bilan_sessions``): each group's totals per Claude Code session,
from which the samples' seven per-session sums are kept exact (ADR-0166).

The classement takes its variances over the sessions of each group (SPEC, "Ranking
presets: the classement", "Sessions"): a demande belongs to the session (``session_id``)
of its delegation with the smallest id, and a sample keeps, beside its per-demande sums,
``Echantillon.session_sums_of`` summed over its sessions' totals ``(demandes, evites,
pilotage, corrections)``. Those sums do not add demande by demande: a session's part is
replaced. So the totals of each (group, session) are kept here, a row per session
holding some of the group's demandes (``demandes`` > 0), keyed as the samples are
(``champ``, ``valeur``, ``client``; ``CLIENT_WIDE`` for a client's whole sample) and by
``session``. A session is the pair (client, session_id): sessions of two clients never
mix.

The three writes of the samples (``sql_groups.GroupsWriter``) change them: a fold and a
journal join give the change of each (group, session)'s totals, ``SessionsWriter.apply``
adds them, gets the totals after back (so before: after less the change) and returns the
change of each group's seven sums (after minus before, session by session); a rebuild
streams every (group, session)'s totals in group order through
``SessionsWriter.rebuilt``. The ``(inconnu)`` group of a field is no stored group, and
its sessions are not kept: reading them took a scan of every session at each read (61 ms
at 200,000 events), so the classement makes no claim on it (ADR-0166). Token totals are
exact at
any size (ADR-0051); the sums are Python integers.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from miam_economies.domain.echantillon import Echantillon
from miam_economies.projections.sql_dialect import SqlDialect
from miam_economies.projections.sql_schema import Cursor, chunks

SESSION_SUMS = ("sessions", "session_demandes_squared", "session_net_squared",
                "session_demandes_times_net", "session_evites_squared",
                "session_corrections_squared", "session_evites_times_corrections")
"""The samples' per-session columns, in ``Echantillon``'s order (after its eight
per-demande sums)."""

NO_SESSION_CHANGE = (0,) * len(SESSION_SUMS)
"""The seven per-session sums of a sample none of whose sessions changed."""

SessionKey = tuple[str, str, str, str]
"""``(champ, valeur, client, session)``: one session of one sample."""

GroupKey = tuple[str, str, str]
"""``(champ, valeur, client)``: one sample."""

_session_sums_of = Echantillon.session_sums_of


def add_totals(changes: dict[SessionKey, list[int]], key: SessionKey, n: int, e: int,
               p: int, k: int) -> None:
    """Add ``(n, e, p, k)`` (demandes, evites, pilotage, corrections; tokens) to the
    running change of session ``key``'s totals in ``changes``, in place."""
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
            "ON CONFLICT (projection, champ, valeur, client, session) DO UPDATE SET "
            + dialect.added("bilan_sessions", ("demandes",),
                            ("evites", "pilotage", "corrections"))
            + " RETURNING champ, valeur, client, session, demandes, evites, pilotage, "
            "corrections")
        self._delete = ("DELETE FROM bilan_sessions WHERE projection = ? AND champ = ? "
                        "AND valeur = ? AND client = ? AND session = ? AND demandes = 0")

    def apply(self, c: Cursor, name: str, changes: Mapping[SessionKey, Sequence[int]]
              ) -> dict[GroupKey, list[int]]:
        """Add ``changes`` (session key -> change of its totals ``(demandes, evites,
        pilotage, corrections)``) to projection ``name``'s sessions, in ``c``'s write
        transaction; return, for each sample whose sums moved, the change of its seven
        per-session sums (``SESSION_SUMS`` order): ``session_sums_of`` of each session's
        totals after, minus before (ADR-0166). A session left without demandes is
        deleted (its totals are then all 0). One upsert of ``sql_schema.CHUNK`` rows at a
        time, in primary-key order, returns the totals after."""
        tk = self.dialect.tokens
        rows = sorted((key, change) for key, change in changes.items() if any(change))
        sums: dict[GroupKey, list[int]] = {}
        emptied: list[tuple[str, ...]] = []
        for chunk in chunks(rows):
            c.execute("INSERT INTO bilan_sessions VALUES "
                      + ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?)"] * len(chunk)) + " "
                      + self._upsert,
                      [x for key, (dn, de, dp, dk) in chunk
                       for x in (name, *key, dn, tk(de), tk(dp), tk(dk))])
            for champ, valeur, client, session, n, e, p, k in c.fetchall():
                key = (champ, valeur, client, session)
                dn, de, dp, dk = changes[key]
                n, e, p, k = int(n), int(e), int(p), int(k)
                after = _session_sums_of(n, e, p, k)
                before = _session_sums_of(n - dn, e - de, p - dp, k - dk)
                acc = sums.get(key[:3])
                if acc is None:
                    sums[key[:3]] = [a - b for a, b in zip(after, before, strict=True)]
                else:
                    for i in range(7):
                        acc[i] += after[i] - before[i]
                if n == 0:
                    emptied.append((name, *key))
        c.executemany(self._delete, emptied)
        return sums

    def rebuilt(self, c: Cursor, name: str, rows: Iterable[Sequence[Any]], size: int
                ) -> Iterator[tuple[Any, ...]]:
        """Rows ``(champ, valeur, client, session, delegations, evites, pilotage,
        corrections, demandes, then the other seven per-demande sample sums)`` of each
        (group, session), every group's rows together (``session`` None and ``demandes``
        0: the group's demandes without a delegation, in no session; their sample sums
        may be NULL), summed one group at a time: yield the group's key, its four
        figures' sums and its fifteen sample sums in ``Echantillon``'s order; insert its
        sessions into projection ``name``'s (deleted first), ``size`` rows at a time.
        Values may be decimal text (SQLite) or ``Decimal`` (PostgreSQL); sums are Python
        integers, exact (ADR-0051, ADR-0114)."""
        tk, batch = self.dialect.tokens, []
        statement = "INSERT INTO bilan_sessions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
        current: Sequence[Any] | None = None
        t = [0] * 19  # the group's figures, per-demande sums, then per-session sums
        for row in rows:
            key = row[:3]
            if key != current:
                if current is not None:
                    yield (*current, *t)
                current, t = key, [0] * 19
            t[0] += int(row[4])
            t[1] += int(row[5])
            t[2] += int(row[6])
            t[3] += int(row[7])
            n = int(row[8])
            if n <= 0:  # demandes without a delegation: in the groups, in no session
                continue
            e, p, k = int(row[9]), int(row[10]), int(row[11])
            t[4] += n
            t[5] += e
            t[6] += p
            t[7] += k
            t[8] += int(row[12])
            t[9] += int(row[13])
            t[10] += int(row[14])
            t[11] += int(row[15])
            # Echantillon.session_sums_of(n, e, p, k), written out (ADR-0114).
            net = e - p - k
            t[12] += 1
            t[13] += n * n
            t[14] += net * net
            t[15] += n * net
            t[16] += e * e
            t[17] += k * k
            t[18] += e * k
            batch.append((name, *key, row[3], n, tk(e), tk(p), tk(k)))
            if len(batch) >= size:
                c.executemany(statement, batch)
                batch.clear()
        if current is not None:
            yield (*current, *t)
        if batch:
            c.executemany(statement, batch)

