"""Claude API prices per model, as data: USD per million tokens, by kind of token.

Source: Anthropic's public price list (docs "Pricing", standard API, 5-minute cache
writes), as known on 2025-11-24 and transcribed here on 2026-11-30 without network access
to re-check it. A model is its table name, optionally followed by ``-YYYYMMDD`` or
``-latest`` (``claude-sonnet-4-5-20250929`` -> ``claude-sonnet-4-5``; ``claude-opus-4-6``
matches nothing). A model absent from the table has no USD figure (null, never 0), and its
tokens weigh as the reference model's.

``pondere-v1`` is defined on this table: editing it changes that formula's figures, so a
new table goes with a new formula name (ADR-0009).
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
        """A price row from decimal strings (``"0.30"``)."""
        return Tarif(Fraction(input), Fraction(output), Fraction(cache_write),
                     Fraction(cache_read))


TARIFS: Mapping[str, Tarif] = {
    "claude-opus-4-5": Tarif.of("5", "25", "6.25", "0.50"),
    "claude-opus-4-1": Tarif.of("15", "75", "18.75", "1.50"),
    "claude-opus-4": Tarif.of("15", "75", "18.75", "1.50"),
    "claude-sonnet-4-5": Tarif.of("3", "15", "3.75", "0.30"),
    "claude-sonnet-4": Tarif.of("3", "15", "3.75", "0.30"),
    "claude-3-7-sonnet": Tarif.of("3", "15", "3.75", "0.30"),
    "claude-haiku-4-5": Tarif.of("1", "5", "1.25", "0.10"),
    "claude-3-5-haiku": Tarif.of("0.80", "4", "1", "0.08"),
    "claude-3-haiku": Tarif.of("0.25", "1.25", "0.30", "0.03"),
}
"""Known models, by API name prefix."""

REFERENCE = "claude-sonnet-4-5"
"""The unit of weighted figures: one input token of this model."""

RATIOS_PAR_DEFAUT = Tarif.of("1", "5", "1.25", "0.1")
"""Weights of the reference model's tokens, in its input tokens (output 5x, cache write
1.25x, cache read 0.1x): used where the model is unknown or not sent."""

_VERSION = re.compile(r"-(\d{8}|latest)")


def tarif(modele: str) -> Tarif | None:
    """The price row of API model name ``modele``: a table name, alone or followed by a
    ``-YYYYMMDD`` date or ``-latest``; None for any other name."""
    for name, row in TARIFS.items():
        if modele == name or (modele.startswith(name + "-")
                              and _VERSION.fullmatch(modele[len(name):])):
            return row
    return None


def ratios(modele: str | None) -> Tarif:
    """What one token of each kind of ``modele`` weighs, in input tokens of the reference
    model (``REFERENCE``): a Haiku token weighs less than an Opus one. An unknown model (or
    None: the model is not sent) weighs as the reference model."""
    known = tarif(modele) if modele is not None else None
    if known is None:
        return RATIOS_PAR_DEFAUT
    unit = TARIFS[REFERENCE].input
    return Tarif(known.input / unit, known.output / unit, known.cache_write / unit,
                 known.cache_read / unit)
