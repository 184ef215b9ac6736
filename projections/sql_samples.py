"""The classement's samples, kept as sums in the view (ADR-0073).

The classement (SPEC, "Ranking presets: the classement") needs, for each group of
demandes, the count and the sums of each demande's figures, of their squares and of one
product: with them, ``domain.classement`` computes means, variances and intervals without
reading a demande. A demande counts once its delegation has arrived (``delegations > 0``);
its figures are those of the per-demande view (``bilan_demandes``).

A fold changes some demandes' figures: each brings to its samples the difference between
its contribution after and before the page (its row read before the upsert). Samples are
kept per (journal field, value, client), and per client under the field ``CLIENT_WIDE``;
the ``(inconnu)`` group of a field is the client-wide sample minus the valued ones. All
sums are exact integers at any size (the columns are token sums: ADR-0051). A replay
folds without them and computes them again at its end, with the groups, in one streamed
aggregation (``GroupsWriter.rebuild``; ADR-0114). The samples are read by
``sql_reads.SqlReader.samples``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from miam_economies.domain.echantillon import Echantillon
from miam_economies.projections.delta import PageDelta
from miam_economies.projections.sql_demandes import Before
from miam_economies.projections.sql_dialect import SqlDialect
from miam_economies.projections.sql_schema import Cursor

SAMPLE_SUMS = ("demandes", "evites", "pilotage", "corrections", "evites_squared",
               "corrections_squared", "evites_times_corrections", "net_squared")
"""The columns of ``bilan_echantillons``, in ``domain.echantillon.Echantillon``'s order."""

CLIENT_WIDE = ""
"""The ``champ`` of a client's whole sample (every demande with a delegation); the
journal follower never records a field of that name."""

Sums = tuple[int, ...]
"""A sample's sums, in ``SAMPLE_SUMS`` order (tokens; squares in tokens²)."""

Task = tuple[int, int, int, int]
"""One group's demandes on one task: ``(demandes, evites, pilotage, corrections)``."""

_ZERO: Sums = (0,) * len(SAMPLE_SUMS)


def contribution(delegations: int, evites: int, pilotage: int, corrections: int) -> Sums:
    """What one demande adds to its samples: nothing before its delegation has arrived
    (SPEC: "the unit is a demande whose delegation has arrived"); else 1 and its figures,
    their squares and product (tokens, exact)."""
    if delegations <= 0:
        return _ZERO
    return Echantillon.sums_of(evites, pilotage, corrections)


def difference(after: Sums, before: Sums) -> Sums:
    """``after`` minus ``before``, sum by sum."""
    return tuple(a - b for a, b in zip(after, before, strict=True))


def _accumulate(sums: dict[tuple[str, str, str], list[int]], key: tuple[str, str, str],
                change: Sums) -> None:
    # Into the running sums of ``key`` in place, written out: summing lists of
    # changes per key cost more than the fold of the page (ADR-0114).
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


def summed(rows: Iterable[Sums]) -> Sums:
    """The sums of ``rows``, sum by sum (``_ZERO`` for none)."""
    total = list(_ZERO)
    for row in rows:
        for i, value in enumerate(row):
            total[i] += value
    return tuple(total)


class SamplesWriter:
    """Keeps the classement's samples (``bilan_echantillons``) up to date beside the
    groups' writes (``sql_groups.GroupsWriter``), token sums exact by ``dialect``'s rule
    (ADR-0051)."""

    def __init__(self, dialect: SqlDialect):
        self.dialect = dialect
        self._upsert = (
            "INSERT INTO bilan_echantillons VALUES (" + ", ".join("?" * 12) + ") "
            "ON CONFLICT (projection, champ, valeur, client) DO UPDATE SET "
            + dialect.added("bilan_echantillons", ("demandes",), SAMPLE_SUMS[1:]))

    def fold(self, c: Cursor, name: str, delta: PageDelta, before: Before,
             valeurs: Mapping[str, Sequence[tuple[str, str]]]) -> None:
        """Add to the samples what the page changed: for each demande of ``delta``, its
        contribution after the page minus before (``before``:
        ``DemandesWriter.before``), to its client's whole sample and to the group of each
        of its journal ``valeurs`` (``demande_id`` -> ``[(champ, valeur)]``)."""
        changes: dict[tuple[str, str, str], list[int]] = {}
        for (client, demande_id), d in delta.demandes.items():
            f = d.figures
            old = before.get((client, demande_id))
            if old is None:  # never seen: nothing of it counted yet
                change = contribution(f.delegations, f.evites, f.pilotage, f.corrections)
            else:
                change = difference(
                    contribution(old[0] + f.delegations, old[1] + f.evites,
                                 old[2] + f.pilotage, old[3] + f.corrections),
                    contribution(*old))
            if change == _ZERO:
                continue
            _accumulate(changes, (CLIENT_WIDE, "", client), change)
            for champ, valeur in valeurs.get(demande_id, ()):
                _accumulate(changes, (champ, valeur, client), change)
        self.add(c, name, ((key, tuple(sums)) for key, sums in changes.items()))

    def add(self, c: Cursor, name: str,
            samples: Iterable[tuple[tuple[str, str, str], Sums]]) -> None:
        """Upsert ``((champ, valeur, client), sums)`` into projection ``name``'s samples,
        adding to the stored sums (exact at any size)."""
        tk = self.dialect.tokens
        c.executemany(self._upsert, [
            (name, champ, valeur, client, sums[0], *map(tk, sums[1:]))
            for (champ, valeur, client), sums in sorted(samples)])


def samples_by_projection(items: Iterable[tuple[str, tuple[str, str, str], Sums]]
                  ) -> Iterator[tuple[str, list[tuple[tuple[str, str, str], Sums]]]]:
    """``(projection, key, sums)`` items grouped by projection, for ``SamplesWriter.add``."""
    grouped: defaultdict[str, list[tuple[tuple[str, str, str], Sums]]] = defaultdict(list)
    for projection, key, sums in items:
        grouped[projection].append((key, sums))
    yield from grouped.items()


def summed_by_key(rows: Iterable[Sequence[Any]], width: int) -> Iterator[tuple[Any, ...]]:
    """Rows ``(key..., delegations, evites, pilotage, corrections)`` of demandes, ordered
    by their first ``width`` columns (the key), summed one key at a time: the key, the
    four figures' sums, then the sample's sums in ``SAMPLE_SUMS`` order over the
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
