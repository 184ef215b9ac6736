"""The breakdowns by period and by two dimensions, read in SQL from the view's per-day
rows (ADR-0132, ADR-0133), in the read transaction the view opens.

Every such breakdown is a gathering of rows the fold already keeps, each tagged with the
keys it can be grouped by (its day, client, model, demande, journal value): per day and
client (``bilan_jours``), per model and day (``bilan_modeles``), per demande and day
(``bilan_demandes_jours``, joined with the journal for a field other than preset and
format), per journal value (``bilan_groupes``) and, for preset and format, per value and
day (``bilan_groupes_jours``), the demandes without a value being what the client's (or
the day's) figures leave over, or per demande with its journal values. Each row is added
to the group of its keys, so the groups of any breakdown sum to the same figures as any
other's: the conservation the tests check.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from miam_economies.domain.bilan import Figures, FiguresModele
from miam_economies.domain.breakdowns import CHAMPS_PAR_JOUR, PERIODES, dimension, periode
from miam_economies.projections.sql_schema import FIGURES, Cursor
from miam_economies.projections.view import INCONNU, Groupes, Groupes2

Cell = Figures | FiguresModele
Tagged = tuple[Mapping[str, str], str, Cell]
"""A row read for a breakdown: its keys by dimension (``jour``, ``modele``, ``demande``,
``journal.<field>``), its client, and its figures."""

_NO_DAY = ("0000-00-00", "9999-99-99")


def read_breakdown(c: Cursor, name: str, par: str, puis: str | None, depuis: str | None,
                   jusqu_au: str | None, clients: Mapping[str, Figures]
                   ) -> Groupes | Groupes2:
    """Projection ``name``'s breakdown ``par`` (a period, when ``puis`` is None) or ``par``
    then ``puis`` (``domain.breakdowns.check_bounds`` has accepted them): ``{key:
    {client: figures}}`` or ``{key of par: {key of puis: {client: figures}}}``, keys in
    order, days within the inclusive bounds when a dimension is a period. ``clients``:
    the projection's figures by client, for the demandes without a journal value."""
    dims = [dimension(par)] + ([] if puis is None else [dimension(puis)])
    rows = _rows(c, name, dims, depuis or _NO_DAY[0], jusqu_au or _NO_DAY[1], clients)
    if puis is None:
        one: defaultdict[str, dict[str, Cell]] = defaultdict(dict)
        for keys, client, cell in rows:
            _add(one[_key(dims[0], keys, client)], client, cell)
        return {k: dict(sorted(one[k].items())) for k in sorted(one, key=_order)}
    two: defaultdict[str, defaultdict[str, dict[str, Cell]]] = defaultdict(
        lambda: defaultdict(dict))
    for keys, client, cell in rows:
        _add(two[_key(dims[0], keys, client)][_key(dims[1], keys, client)], client, cell)
    return {a: {b: dict(sorted(two[a][b].items())) for b in sorted(two[a], key=_order)}
            for a in sorted(two, key=_order)}


def _order(key: str) -> tuple[bool, str]:
    # Keys in order, the demandes without a journal value last.
    return key == INCONNU, key


def _key(dim: str, keys: Mapping[str, str], client: str) -> str:
    if dim in PERIODES:
        return periode(dim, keys["jour"])
    if dim == "client":
        return client
    return keys[dim]


def _add(cells: dict[str, Cell], client: str, cell: Cell) -> None:
    had = cells.get(client)
    cells[client] = cell if had is None else had + cell  # type: ignore[operator]


def _rows(c: Cursor, name: str, dims: list[str], first: str, last: str,
          clients: Mapping[str, Figures]) -> Iterable[Tagged]:
    """The rows the breakdown ``dims`` gathers (see the module), days in [first, last]
    where a dimension is a period."""
    dated = any(d in PERIODES for d in dims)
    by_demande = [d for d in dims if d == "demande" or d.startswith("journal.")]
    if "modele" in dims:
        return _modeles(c, name, first, last)
    if not by_demande:
        return _jours(c, name, first, last)
    if dated and by_demande[0] == "demande":
        return _demandes_jours(c, name, first, last)
    if dated and by_demande[0].removeprefix("journal.") in CHAMPS_PAR_JOUR:
        return _groupes_jours(c, name, by_demande[0], first, last)
    if dated:
        return _champ_jours(c, name, by_demande[0], first, last)
    if by_demande == dims[:1] or by_demande == dims[1:]:  # alone, or with client
        if by_demande[0] == "demande":
            return _demandes(c, name, [])
        return _groupes(c, name, by_demande[0], clients)
    return _demandes(c, name, [d for d in by_demande if d != "demande"])


def _jours(c: Cursor, name: str, first: str, last: str) -> Iterator[Tagged]:
    c.execute(f"SELECT jour, client, {FIGURES} FROM bilan_jours "
              "WHERE projection = ? AND jour >= ? AND jour <= ?", (name, first, last))
    for jour, client, *figures in c.fetchall():
        yield {"jour": jour}, client, Figures(*map(int, figures))


def _modeles(c: Cursor, name: str, first: str, last: str) -> Iterator[Tagged]:
    c.execute("SELECT modele, jour, client, tours, input_tokens, output_tokens, "
              "cache_read_input_tokens, cache_creation_input_tokens, cout "
              "FROM bilan_modeles WHERE projection = ? AND jour >= ? AND jour <= ?",
              (name, first, last))
    for modele, jour, client, *counts in c.fetchall():
        yield {"modele": modele, "jour": jour}, client, FiguresModele(*map(int, counts))


def _demandes_jours(c: Cursor, name: str, first: str, last: str) -> Iterator[Tagged]:
    c.execute(f"SELECT demande_id, jour, client, {FIGURES} FROM bilan_demandes_jours "
              "WHERE projection = ? AND jour >= ? AND jour <= ?", (name, first, last))
    for demande_id, jour, client, *figures in c.fetchall():
        yield {"demande": demande_id, "jour": jour}, client, Figures(*map(int, figures))


def _groupes(c: Cursor, name: str, dim: str,
             clients: Mapping[str, Figures]) -> Iterator[Tagged]:
    """A journal field's groups, then the demandes without a value under ``INCONNU``: what
    each client's figures leave over once its groups are taken out."""
    c.execute(f"SELECT valeur, client, {FIGURES} FROM bilan_groupes "
              "WHERE projection = ? AND champ = ?", (name, dim.removeprefix("journal.")))
    joined: defaultdict[str, Figures] = defaultdict(Figures)
    for valeur, client, *figures in c.fetchall():
        f = Figures(*map(int, figures))
        joined[client].add(f)
        yield {dim: valeur}, client, f
    for client, f in clients.items():
        rest = replace(f, evenements=0) - joined[client]
        if rest != Figures():
            yield {dim: INCONNU}, client, rest


def _groupes_jours(c: Cursor, name: str, dim: str, first: str, last: str
                   ) -> Iterator[Tagged]:
    """A field of ``CHAMPS_PAR_JOUR``: its groups by day within the bounds, then the
    demandes without a value under ``INCONNU``, each day's figures less its groups'."""
    c.execute(f"SELECT valeur, jour, client, {FIGURES} FROM bilan_groupes_jours "
              "WHERE projection = ? AND champ = ? AND jour >= ? AND jour <= ?",
              (name, dim.removeprefix("journal."), first, last))
    known: defaultdict[tuple[str, str], Figures] = defaultdict(Figures)
    for valeur, jour, client, *figures in c.fetchall():
        f = Figures(*map(int, figures))
        known[(jour, client)].add(f)
        yield {dim: valeur, "jour": jour}, client, f
    c.execute(f"SELECT jour, client, {FIGURES} FROM bilan_jours "
              "WHERE projection = ? AND jour >= ? AND jour <= ?", (name, first, last))
    for jour, client, *figures in c.fetchall():
        rest = Figures(*map(int, figures)) - known.get((jour, client), Figures())
        if rest != Figures():
            yield {dim: INCONNU, "jour": jour}, client, rest


def _champ_jours(c: Cursor, name: str, dim: str, first: str, last: str
                 ) -> Iterator[Tagged]:
    """Any other journal field by day: every demande's rows of the days within the
    bounds, with its value (``INCONNU`` for none), a read that grows with them."""
    c.execute("SELECT journal FROM bilan_state WHERE projection = ?", (name,))
    row = c.fetchone()
    c.execute("SELECT v.valeur, j.jour, j.client, j.delegations, j.evites, j.pilotage, "
              "j.corrections FROM bilan_demandes_jours j LEFT JOIN journal_valeurs v "
              "ON v.chemin = ? AND v.demande_id = j.demande_id AND v.champ = ? "
              "WHERE j.projection = ? AND j.jour >= ? AND j.jour <= ?",
              (row[0] if row else "", dim.removeprefix("journal."), name, first, last))
    for valeur, jour, client, dl, e, p, k in c.fetchall():
        yield ({dim: INCONNU if valeur is None else valeur, "jour": jour}, client,
               Figures(dl, int(e), int(p), int(k)))


def _demandes(c: Cursor, name: str, fields: list[str]) -> Iterator[Tagged]:
    """Every demande's figures with its values of journal ``fields`` (``INCONNU`` for
    none): a read of every demande, not bounded by days."""
    c.execute("SELECT journal FROM bilan_state WHERE projection = ?", (name,))
    row = c.fetchone()
    joins, columns, params = [], [], []
    for i, dim in enumerate(fields):
        joins.append(f" LEFT JOIN journal_valeurs v{i} ON v{i}.chemin = ? "
                     f"AND v{i}.demande_id = d.demande_id AND v{i}.champ = ?")
        columns.append(f", v{i}.valeur")
        params += [row[0] if row else "", dim.removeprefix("journal.")]
    c.execute(f"SELECT d.demande_id, d.client, d.delegations, d.evites, d.pilotage, "
              f"d.corrections{''.join(columns)} FROM bilan_demandes d{''.join(joins)} "
              "WHERE d.projection = ?", (*params, name))
    for demande_id, client, dl, e, p, k, *valeurs in c.fetchall():
        keys: dict[str, Any] = {"demande": demande_id}
        for dim, valeur in zip(fields, valeurs, strict=True):
            keys[dim] = INCONNU if valeur is None else valeur
        yield keys, client, Figures(dl, int(e), int(p), int(k))
