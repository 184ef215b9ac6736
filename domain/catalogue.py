"""The shape every price table of the weighted formulas shares: rows of exact USD prices
per million tokens by model name, a reference model, and the rule that turns an API model
name into a row (pure data and arithmetic).

``domain.tarifs`` (the hand-written table of ``pondere-v1``) and ``domain.tarifs_v2``
(generated from the ``genai-prices`` catalogue by ``scripts/tarifs.py``, for
``pondere-v2``: ADR-0071) are both a ``Catalogue``. A model is a table name, alone or
followed by ``-YYYYMMDD`` or ``-latest`` (``claude-sonnet-4-5-20250929`` ->
``claude-sonnet-4-5``); any other name is unknown: it has no USD figure (null, never 0) and
its tokens weigh as the reference model's (ADR-0009).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True)
class Tarif:
    """USD per million tokens: ``input``, ``output``, ``cache_write`` (5-minute), and
    ``cache_read``; exact fractions, never floats."""

    input: Fraction
    output: Fraction
    cache_write: Fraction
    cache_read: Fraction

    @staticmethod
    def of(input: str, output: str, cache_write: str, cache_read: str) -> Tarif:
        """A price row from decimal strings (``"0.30"``), read exactly."""
        return Tarif(Fraction(input), Fraction(output), Fraction(cache_write),
                     Fraction(cache_read))


_DATED = re.compile(r"(.+)-(\d{8}|latest)")
"""A model name followed by one ``-YYYYMMDD`` date or ``-latest``."""


@dataclass(frozen=True, eq=False)
class Catalogue:
    """A price table: ``tarifs`` by model name, and the ``reference`` model whose input
    token is the unit of weighted figures (it must be one of ``tarifs``). Compared and
    hashed by identity, so it can key a cache of weights."""

    tarifs: Mapping[str, Tarif]
    reference: str

    def __post_init__(self) -> None:
        if self.reference not in self.tarifs:
            raise ValueError(f"the reference model {self.reference!r} has no price row")

    def tarif(self, modele: str) -> Tarif | None:
        """The price row of API model name ``modele``: a table name, alone or followed by
        a ``-YYYYMMDD`` date or ``-latest``; None for any other name."""
        row = self.tarifs.get(modele)
        if row is not None:
            return row
        dated = _DATED.fullmatch(modele)
        return self.tarifs.get(dated.group(1)) if dated else None

    def ratios(self, modele: str | None) -> Tarif:
        """What one token of each kind of ``modele`` weighs, in input tokens of the
        reference model, as exact fractions. An unknown model (or None: the model is not
        sent) weighs as the reference model."""
        row = self.tarif(modele) if modele is not None else None
        return ratios_of(row or self.tarifs[self.reference], self.tarifs[self.reference])


def ratios_of(row: Tarif, reference: Tarif) -> Tarif:
    """``row``'s four prices divided by ``reference``'s input price: what each kind of
    token weighs in reference input tokens (exact fractions)."""
    unit = reference.input
    return Tarif(row.input / unit, row.output / unit, row.cache_write / unit,
                 row.cache_read / unit)
