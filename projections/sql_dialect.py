"""What differs between the backends' SQL for the bilan view: one ``SqlDialect`` each
(ADR-0120).

The view's statements are written once, with ``?`` placeholders and SQL both backends read
alike (upserts with ``excluded.``, ``RETURNING``, partial indexes). What they cannot share
is here: how a token sum is bound and added exactly (ADR-0051), whether SQL's ``sum()``
of token columns is exact, the tracking table's name, the one query SQLite must be told
how to plan, and how a long result is read a chunk at a time (ADR-0114).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from miam_economies.projections.sql_schema import Cursor

EN_ATTENTE = ("SELECT count(DISTINCT l.event_id) FROM bilan_demandes AS d "
              "JOIN bilan_liens AS l ON l.projection = d.projection "
              "AND l.demande_id = d.demande_id AND l.client = d.client "
              "WHERE d.projection = ? AND d.delegations = 0")
"""Pilotages and corrections reaching a demande still without its delegation (the
conservation's ``en_attente``), as a planner left to itself runs it well."""

ADD_TOKENS = "{t}.{c} + excluded.{c}"
"""An upsert adding a token sum, ``{t}`` the table, ``{c}`` the column: exact where the
column's type is (PostgreSQL's ``numeric``)."""

Stream = Callable[[Cursor, str, Sequence[Any], int], Iterator[Sequence[Sequence[Any]]]]
"""``stream(c, query, params, size)``: the rows of ``query`` as lists of at most ``size``
row tuples, read through a cursor of their own in ``c``'s transaction, so ``c`` may write
meanwhile: never the whole result at once (ADR-0114). Raises the backend's errors."""


def _same(value: int) -> Any:
    return value


def _never(error: Exception) -> bool:
    return False


@dataclass(frozen=True)
class SqlDialect:
    """A backend's SQL differences, handed to the view's table writers and reader.

    ``tracking_table``: the library's tracking table (positions by projection name);
    ``stream``: see ``Stream``; ``add_tokens``: the ``SET`` expression adding a token sum
    (``ADD_TOKENS``'s placeholders); ``tokens``: a token sum as a statement parameter (the
    int itself where the column holds any size); ``exact_sums``: whether ``sum()`` of token
    columns is exact at any size (SQLite's overflows past 2^63, so its rebuild checks
    first: ADR-0051); ``overflowed``: whether an error raised by a statement is ``sum()``
    overflowing (never where sums are exact); ``en_attente``: ``EN_ATTENTE`` as this
    backend plans it well.
    """

    tracking_table: str
    stream: Stream
    add_tokens: str = ADD_TOKENS
    tokens: Callable[[int], Any] = _same
    exact_sums: bool = True
    overflowed: Callable[[Exception], bool] = _never
    en_attente: str = EN_ATTENTE

    def added(self, table: str, counts: Sequence[str] = (),
              tokens: Sequence[str] = ()) -> str:
        """The ``SET`` list of an upsert into ``table`` adding the new row's ``counts``
        (64-bit) and ``tokens`` (exact at any size) to the stored row's. The stored row's
        columns are named by their table: PostgreSQL finds a bare name ambiguous beside
        excluded's."""
        return ", ".join([*(f"{c} = {table}.{c} + excluded.{c}" for c in counts),
                          *(f"{c} = " + self.add_tokens.format(t=table, c=c)
                            for c in tokens)])
