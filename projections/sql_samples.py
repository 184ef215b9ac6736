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
aggregation (``SqlGroups.rebuild_groups``; ADR-0114).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from miam_economies.domain.echantillon import Echantillon
from miam_economies.projections.delta import PageDelta
from miam_economies.projections.sql_reads import SqlReads
from miam_economies.projections.sql_schema import Cursor, chunks
from miam_economies.projections.view import INCONNU

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


def _difference(after: Sums, before: Sums) -> Sums:
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


def _sum(rows: Iterable[Sums]) -> Sums:
    total = list(_ZERO)
    for row in rows:
        for i, value in enumerate(row):
            total[i] += value
    return tuple(total)


class SqlSamples(SqlReads):
    """The samples' writes and reads, mixed into ``SqlGroups``, which calls them beside
    its groups' writes and gives ``tokens``, ``_added`` and the transactions."""

    # Given by SqlGroups (annotations only: nothing shadowed).
    tokens: Callable[[int], Any]
    _added: Callable[..., str]

    @staticmethod
    def demandes_before(c: Cursor, name: str, delta: PageDelta
                        ) -> dict[tuple[str, str], tuple[int, int, int, int]]:
        """The stored figures ``(delegations, evites, pilotage, corrections)`` of the
        page's demandes, by ``(client, demande_id)``, before the page is folded (absent:
        never seen)."""
        before: dict[tuple[str, str], tuple[int, int, int, int]] = {}
        ids = sorted({demande_id for _, demande_id in delta.demandes})
        for chunk in chunks(ids):
            c.execute("SELECT client, demande_id, delegations, evites, pilotage, corrections "
                      "FROM bilan_demandes WHERE projection = ? "
                      f"AND demande_id IN ({','.join('?' * len(chunk))})", [name, *chunk])
            for client, demande_id, *figures in c.fetchall():
                before[(client, demande_id)] = tuple(map(int, figures))  # type: ignore[assignment]
        return before

    def fold_samples(self, c: Cursor, name: str, delta: PageDelta,
                     before: Mapping[tuple[str, str], tuple[int, int, int, int]],
                     valeurs: Mapping[str, Sequence[tuple[str, str]]]) -> None:
        """Add to the samples what the page changed: for each demande of ``delta``, its
        contribution after the page minus before (``before``: ``demandes_before``), to
        its client's whole sample and to the group of each of its journal ``valeurs``
        (``demande_id`` -> ``[(champ, valeur)]``)."""
        changes: dict[tuple[str, str, str], list[int]] = {}
        for (client, demande_id), d in delta.demandes.items():
            f = d.figures
            old = before.get((client, demande_id))
            if old is None:  # never seen: nothing of it counted yet
                change = contribution(f.delegations, f.evites, f.pilotage, f.corrections)
            else:
                change = _difference(
                    contribution(old[0] + f.delegations, old[1] + f.evites,
                                 old[2] + f.pilotage, old[3] + f.corrections),
                    contribution(*old))
            if change == _ZERO:
                continue
            _accumulate(changes, (CLIENT_WIDE, "", client), change)
            for champ, valeur in valeurs.get(demande_id, ()):
                _accumulate(changes, (champ, valeur, client), change)
        self.add_samples(c, name, ((key, tuple(sums)) for key, sums in changes.items()))

    def add_samples(self, c: Cursor, name: str,
                    samples: Iterable[tuple[tuple[str, str, str], Sums]]) -> None:
        """Upsert ``((champ, valeur, client), sums)`` into projection ``name``'s samples,
        adding to the stored sums (exact: ``tokens`` and the view's ``ADD_TOKENS``)."""
        tk = self.tokens
        c.executemany(
            "INSERT INTO bilan_echantillons VALUES (" + ", ".join("?" * 12) + ") "
            "ON CONFLICT (projection, champ, valeur, client) DO UPDATE SET "
            + self._added("bilan_echantillons", ("demandes",), SAMPLE_SUMS[1:]),
            [(name, champ, valeur, client, sums[0], *map(tk, sums[1:]))
             for (champ, valeur, client), sums in sorted(samples)],
        )

    def samples(self, name: str, par: str, apparier: str | None = None
                ) -> tuple[int, dict[str, Sums], dict[str, dict[str, Task]] | None]:
        """See ``BilanView.samples``: projection ``name``'s tracking position, its samples
        by group of ``par`` (``client``, or a journal field, ``journal.`` prefix
        allowed), and with ``apparier`` (a journal field) its demandes by group and task,
        all in one read transaction. ``(inconnu)`` holds a field's demandes without a
        value (when there are any); a demande without an ``apparier`` value is in no
        task."""
        champ = None if par == "client" else par.removeprefix("journal.")
        with self._read() as c:
            c.execute(f"SELECT max(notification_id) FROM {self.tracking_table} "
                      "WHERE application_name = ?", (name,))
            position = c.fetchone()[0] or 0
            columns = ", ".join(SAMPLE_SUMS)
            c.execute(f"SELECT client, {columns} FROM bilan_echantillons "
                      "WHERE projection = ? AND champ = ?", (name, CLIENT_WIDE))
            clients = {row[0]: tuple(map(int, row[1:])) for row in c.fetchall()}
            tasks = None if apparier is None else self._tasks(
                c, name, champ, apparier.removeprefix("journal."))
            if champ is None:
                return position, clients, tasks
            c.execute(f"SELECT valeur, {columns} FROM bilan_echantillons "
                      "WHERE projection = ? AND champ = ?", (name, champ))
            valued: defaultdict[str, list[Sums]] = defaultdict(list)
            for valeur, *sums in c.fetchall():
                valued[valeur].append(tuple(map(int, sums)))
        groups = {valeur: _sum(rows) for valeur, rows in valued.items()}
        rest = _difference(_sum(clients.values()), _sum(groups.values()))
        if rest[0] > 0:
            groups[INCONNU] = rest
        return position, {cle: sums for cle, sums in groups.items() if sums[0] > 0}, tasks

    @staticmethod
    def _tasks(c: Cursor, name: str, champ: str | None, tache: str
               ) -> dict[str, dict[str, Task]]:
        """The demandes with a delegation and a value for journal field ``tache``, summed
        by group (``champ``'s value, ``INCONNU`` without one; the client when ``champ`` is
        None) and task: ``(demandes, evites, pilotage, corrections)``, exact. The journal's
        rows for the field come first (its index), then their demandes by id, so the cost
        is that of the tasks' demandes, not of the history."""
        c.execute("SELECT journal FROM bilan_state WHERE projection = ?", (name,))
        row = c.fetchone()
        if row is None:
            return {}
        c.execute("SELECT t.demande_id, t.valeur, g.valeur FROM journal_valeurs t "
                  "LEFT JOIN journal_valeurs g ON g.chemin = t.chemin "
                  "AND g.demande_id = t.demande_id AND g.champ = ? "
                  "WHERE t.chemin = ? AND t.champ = ?", (champ or "", row[0], tache))
        tasks = {demande_id: (task, cle) for demande_id, task, cle in c.fetchall()}
        out: defaultdict[str, dict[str, list[int]]] = defaultdict(dict)
        for chunk in chunks(sorted(tasks)):
            c.execute("SELECT demande_id, client, evites, pilotage, corrections "
                      "FROM bilan_demandes WHERE projection = ? AND delegations > 0 "
                      f"AND demande_id IN ({','.join('?' * len(chunk))})", [name, *chunk])
            for demande_id, client, evites, pilotage, corrections in c.fetchall():
                task, valeur = tasks[demande_id]
                cle = client if champ is None else INCONNU if valeur is None else valeur
                sums = out[cle].setdefault(task, [0, 0, 0, 0])
                sums[0] += 1
                sums[1] += int(evites)
                sums[2] += int(pilotage)
                sums[3] += int(corrections)
        return {cle: {task: (n, e, p, k) for task, (n, e, p, k) in by_task.items()}
                for cle, by_task in out.items()}


def samples_by_projection(items: Iterable[tuple[str, tuple[str, str, str], Sums]]
                  ) -> Iterator[tuple[str, list[tuple[tuple[str, str, str], Sums]]]]:
    """``(projection, key, sums)`` items grouped by projection, for ``add_samples``."""
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
    the rows: ``SqlGroups.rebuild_groups``' exact path (ADR-0114)."""
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
