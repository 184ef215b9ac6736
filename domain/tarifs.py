"""Claude API prices per model, as data: USD per million tokens, by kind of token.

Source: Anthropic's public price list (docs "Pricing", standard API, 5-minute cache
writes), as known on 2025-11-24 and transcribed here on 2026-11-30 without network access
to re-check it. Models are matched by the longest prefix of their API name
(``claude-sonnet-4-5-20250929`` -> ``claude-sonnet-4-5``). A model absent from the table
has no USD figure (null, never 0); its tokens-equivalent weights are ``RATIOS_PAR_DEFAUT``.
"""

from __future__ import annotations

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

RATIOS_PAR_DEFAUT = Tarif.of("1", "5", "1.25", "0.1")
"""Weights relative to an input token when the model is unknown: the ratios every model
of the table shares (output 5x, cache write 1.25x, cache read 0.1x)."""


def tarif(modele: str) -> Tarif | None:
    """The price row of API model name ``modele`` (longest matching prefix), or None."""
    # A prefix matches the whole name or up to a "-": claude-opus-40 is not claude-opus-4.
    matches = [prefix for prefix in TARIFS
               if modele == prefix or modele.startswith(prefix + "-")]
    return TARIFS[max(matches, key=len)] if matches else None


def ratios(modele: str | None) -> Tarif:
    """Token weights relative to an input token of ``modele`` (default ratios if unknown
    or None): what one token of each kind costs, in input tokens of the same model."""
    known = tarif(modele) if modele is not None else None
    if known is None:
        return RATIOS_PAR_DEFAUT
    return Tarif(Fraction(1), known.output / known.input, known.cache_write / known.input,
                 known.cache_read / known.input)
