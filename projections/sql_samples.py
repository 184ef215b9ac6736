"""The classement's samples, kept as sums in the view (ADR-0073, ADR-0166, ADR-0167).

The classement (SPEC, "Ranking presets: the classement") needs, for each group of
demandes, the count and the sums of each demande's figures, of their squares and of one
product, and the same over the group's sessions (their count, the sums of each session's
totals' squares and products): with them, ``domain.classement`` computes means,
variances and intervals without reading a demande. A demande counts once its delegation
has arrived (``delegations > 0``); its figures are those of the per-demande view
(``bilan_demandes``), its session and day those of its delegation with the smallest id;
its cluster is its (session, day) (ADR-0167, decision 2).

A fold changes some demandes' figures, and may move a demande to another cluster (a
delegation with a smaller id): each brings to its samples the difference between its
per-demande contribution after and before the page (its row read before the upsert), to
its day's sample the same (or its contribution out of the old day and into the new),
and to the totals of its clusters its figures, out of the cluster it was counted in and
into its cluster now (``sql_sessions``: a cluster's part of the per-session sums is
replaced, not added). Samples are kept per (journal field, value, client), and per client
under the field ``CLIENT_WIDE``; the ``(inconnu)`` group of a field is the client-wide
sample minus the valued ones, its sessions not kept (ADR-0166).
All sums are exact integers at any size (the columns are token sums: ADR-0051). A replay
folds without them and computes them again at its end, with the groups, in one streamed
aggregation (``GroupsWriter.rebuild``; ADR-0114). The samples are read by
``sql_reads.SqlReader.samples``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from miam_economies.domain.echantillon import Echantillon
from miam_economies.projections.delta import PageDelta
from miam_economies.projections.sql_demandes import Before
from miam_economies.projections.sql_dialect import SqlDialect
from miam_economies.projections.sql_samples_jours import DaySamplesWriter
from miam_economies.projections.sql_schema import Cursor
from miam_economies.projections.sql_sessions import (
    NO_SESSION_CHANGE,
    SESSION_SUMS,
    SessionKey,
    SessionsWriter,
    add_totals,
    by_group,
)

DEMANDE_SUMS = ("demandes", "evites", "pilotage", "corrections", "evites_squared",
                "corrections_squared", "evites_times_corrections", "net_squared")
"""The samples' per-demande columns, what each demande adds (``contribution``)."""

SAMPLE_SUMS = (*DEMANDE_SUMS, *SESSION_SUMS)
"""The columns of ``bilan_echantillons``, in ``domain.echantillon.Echantillon``'s order:
the eighteen sums of a sample."""

CLIENT_WIDE = ""
"""The ``champ`` of a client's whole sample (every demande with a delegation); the
journal follower never records a field of that name."""

Sums = tuple[int, ...]
"""A sample's sums, in ``SAMPLE_SUMS`` order (tokens; squares in tokens²), or the first
eight of them (``DEMANDE_SUMS``) where a demande's contribution is meant."""

Task = tuple[int, int, int, int]
"""One group's demandes on one task: ``(demandes, evites, pilotage, corrections)``."""

_ZERO: Sums = (0,) * len(DEMANDE_SUMS)


def contribution(delegations: int, evites: int, pilotage: int, corrections: int) -> Sums:
    """What one demande adds to its samples' per-demande sums (``DEMANDE_SUMS``):
    nothing before its delegation has arrived (SPEC: "the unit is a demande whose
    delegation has arrived"); else 1 and its figures, their squares and product (tokens,
    exact)."""
    if delegations <= 0:
        return _ZERO
    return Echantillon.sums_of(evites, pilotage, corrections)


def difference(after: Sums, before: Sums) -> Sums:
    """``after`` minus ``before``, sum by sum."""
    return tuple(a - b for a, b in zip(after, before, strict=True))


def _accumulate(sums: dict[Any, list[int]], key: Any, change: Sums) -> None:
    # Into the running per-demande sums of ``key`` in place, written out: summing lists
    # of changes per key cost more than the fold of the page (ADR-0114).
    acc = sums.get(key)
    if acc is None:
        sums[key] = list(change)
        return
    acc[0] += change[0]
    acc[1] += change[1]
    acc[2] += change[2]
    acc[3] += change[3]
    acc[4] += change[4]
    acc[5] += change[5]
    acc[6] += change[6]
    acc[7] += change[7]


def as_own_sessions(sums: Sums) -> Sums:
    """A sample's eighteen sums whose per-session part is taken from its per-demande part
    as if each demande were a session of its own: the ``(inconnu)`` group's, whose
    sessions are not kept (reading them took a scan of every session at each read, 61 ms
    at 200,000 events), so the classement makes no claim on it (ADR-0166, decision 4)."""
    n, e, p, k, ee, kk, ek, nn = sums[:len(DEMANDE_SUMS)]
    net = e - p - k
    return (n, e, p, k, ee, kk, ek, nn, n, n, nn, net, ee, kk, ek, n, net, nn)


def summed(rows: Iterable[Sums]) -> Sums:
    """The sums of ``rows`` (samples' sums, ``SAMPLE_SUMS`` order), sum by sum (zeros
    for none)."""
    total = [0] * len(SAMPLE_SUMS)
    for row in rows:
        for i, value in enumerate(row):
            total[i] += value
    return tuple(total)


class SamplesWriter:
    """Keeps the classement's samples (``bilan_echantillons``), their days (``days``:
    ``bilan_echantillons_jours``) and their clusters (``sessions``: ``bilan_sessions``) up
    to date beside the groups' writes (``sql_groups.GroupsWriter``), token sums exact by
    ``dialect``'s rule (ADR-0051)."""

    def __init__(self, dialect: SqlDialect):
        self.dialect = dialect
        self.sessions = SessionsWriter(dialect)
        self.days = DaySamplesWriter(dialect)
        self._upsert = (
            "INSERT INTO bilan_echantillons VALUES ("
            + ", ".join("?" * (4 + len(SAMPLE_SUMS))) + ") "
            "ON CONFLICT (projection, champ, valeur, client) DO UPDATE SET "
            + dialect.added("bilan_echantillons", ("demandes", "sessions"),
                            [s for s in SAMPLE_SUMS if s not in ("demandes", "sessions")]))

    def fold(self, c: Cursor, name: str, delta: PageDelta, before: Before,
             valeurs: Mapping[str, Sequence[tuple[str, str]]]) -> None:
        """Add to the samples what the page changed: for each demande of ``delta``, its
        contribution after the page minus before (``before``:
        ``DemandesWriter.before``), to its day's sample (out of the day it was counted
        in, into its day now, when its delegation of smallest id moves it), and its
        figures out of the cluster (session, day) it was counted in and into its cluster
        after the page (``SessionsWriter.apply``), to its client's whole sample and to
        the group of each of its journal ``valeurs`` (``demande_id`` -> ``[(champ,
        valeur)]``; ADR-0166, ADR-0167)."""
        changes: dict[Any, list[int]] = {}
        days: dict[Any, list[int]] = {}
        moves: dict[Any, list[int]] = {}
        for (client, demande_id), d in delta.demandes.items():
            f, v = d.figures, d.delegation
            old = before.get((client, demande_id))
            if old is None:  # never seen: nothing of it counted yet
                od = oe = op = ok = 0
                dl, e, p, k = f.delegations, f.evites, f.pilotage, f.corrections
                if dl <= 0:
                    continue
                prior, osession, ojour = _ZERO, None, None
                after = change = contribution(dl, e, p, k)
                session, jour = (v.session_id, v.jour) if v is not None else (None, None)
            else:
                od, oe, op, ok, odid, osession, ojour = old
                dl, e, p, k = (od + f.delegations, oe + f.evites, op + f.pilotage,
                               ok + f.corrections)
                prior, after = contribution(od, oe, op, ok), contribution(dl, e, p, k)
                change = difference(after, prior)
                # The session and day of the delegation with the smallest id, as the
                # upsert of bilan_demandes takes them (ADR-0006, ADR-0166, ADR-0167).
                if v is not None and (odid is None or v.id < odid):
                    session, jour = v.session_id, v.jour
                else:
                    session, jour = osession, ojour
                if change == _ZERO and session == osession and jour == ojour:
                    continue
            moved = jour != ojour and od > 0
            gone = tuple(-x for x in prior) if moved else _ZERO
            for key in ((CLIENT_WIDE, "", client),
                        *((champ, valeur, client) for champ, valeur
                          in valeurs.get(demande_id, ()))):
                _accumulate(changes, key, change)
                if moved:  # out of the day it was counted in, whole, into its day now
                    _accumulate(days, (*key, ojour), gone)
                    _accumulate(days, (*key, jour), after)
                else:
                    _accumulate(days, (*key, jour), change)
                if od > 0:
                    add_totals(moves, (*key, osession, ojour), -1, -oe, -op, -ok)
                if dl > 0 and session is not None:
                    add_totals(moves, (*key, session, jour), 1, e, p, k)
        self._write(c, name, changes, days, moves)

    def join(self, c: Cursor, name: str,
             joined: Iterable[tuple[Sequence[tuple[str, str]], str, str | None, str | None,
                                    int, int, int, int]]) -> None:
        """Add to projection ``name``'s samples, their days and clusters the demandes
        already folded whose journal line just came: ``(valeurs, client, session, jour,
        delegations, evites, pilotage, corrections)``, ``valeurs`` the line's ``(champ,
        valeur)`` pairs (a demande without a delegation counts nowhere yet)."""
        changes: dict[Any, list[int]] = {}
        days: dict[Any, list[int]] = {}
        moves: dict[Any, list[int]] = {}
        for pairs, client, session, jour, dl, e, p, k in joined:
            if dl <= 0 or session is None or jour is None:
                continue
            sums = Echantillon.sums_of(e, p, k)
            for champ, valeur in pairs:
                _accumulate(changes, (champ, valeur, client), sums)
                _accumulate(days, (champ, valeur, client, jour), sums)
                add_totals(moves, (champ, valeur, client, session, jour), 1, e, p, k)
        self._write(c, name, changes, days, moves)

    def _write(self, c: Cursor, name: str, changes: Mapping[Any, Sequence[int]],
               days: Mapping[Any, Sequence[int]], moves: Mapping[SessionKey, Sequence[int]]
               ) -> None:
        # The clusters first (their change of the seven per-session sums, per day), then
        # the samples and their days, each upserted once in key order.
        by_day = self.sessions.apply(c, name, moves)
        by_session = by_group(by_day)
        self.add(c, name, (
            (key, (*changes.get(key, _ZERO), *by_session.get(key, NO_SESSION_CHANGE)))
            for key in changes.keys() | by_session.keys()))
        self.days.add(c, name, (
            (key, (*days.get(key, _ZERO), *by_day.get(key, NO_SESSION_CHANGE)))
            for key in days.keys() | by_day.keys()))

    def add(self, c: Cursor, name: str,
            samples: Iterable[tuple[tuple[str, str, str], Sums]]) -> None:
        """Upsert ``((champ, valeur, client), sums)`` (eighteen sums, ``SAMPLE_SUMS``
        order) into projection ``name``'s samples, adding to the stored sums (exact at any
        size); all-zero changes are left out."""
        tk = self.dialect.tokens
        c.executemany(self._upsert, [
            (name, champ, valeur, client, sums[0], *map(tk, sums[1:8]), sums[8],
             *map(tk, sums[9:]))
            for (champ, valeur, client), sums in sorted(samples) if any(sums)])


def summed_by_key(rows: Iterable[Sequence[Any]], width: int) -> Iterator[tuple[Any, ...]]:
    """Rows ``(key..., delegations, evites, pilotage, corrections)`` of demandes, ordered
    by their first ``width`` columns (the key), summed one key at a time: the key, the
    four figures' sums, then the sample's per-demande sums (``DEMANDE_SUMS``) over the
    demandes with a delegation (``contribution``), in Python integers: exact at any size
    (ADR-0051). Values may be decimal text (SQLite's big sums). Holds one key's sums, not
    the rows: ``GroupsWriter.rebuild``'s exact path (ADR-0114)."""
    current: Sequence[Any] | None = None
    dl = e = p = k = n = se = sp = sk = ee = kk = ek = nn = 0
    for row in rows:
        key = row[:width]
        if key != current:
            if current is not None:
                yield (*current, dl, e, p, k, n, se, sp, sk, ee, kk, ek, nn)
            current = key
            dl = e = p = k = n = se = sp = sk = ee = kk = ek = nn = 0
        fd, fe, fp, fk = (int(x) for x in row[width:])
        dl += fd
        e += fe
        p += fp
        k += fk
        # ``contribution``, written out: 1.7x as fast as adding its tuple per demande, on
        # the path PostgreSQL's rebuild always takes (tests/property/test_sample_sums.py).
        if fd > 0:  # its delegation has arrived: it counts in the sample (ADR-0073)
            net = fe - fp - fk
            n += 1
            se += fe
            sp += fp
            sk += fk
            ee += fe * fe
            kk += fk * fk
            ek += fe * fk
            nn += net * net
    if current is not None:
        yield (*current, dl, e, p, k, n, se, sp, sk, ee, kk, ek, nn)
