"""Claude API prices per model, as data: USD per million tokens, by kind of token.

Source: Anthropic's public price list (docs "Pricing", standard API, 5-minute cache
writes), as known on 2025-11-24 and transcribed here on 2026-11-30 without network access
to re-check it. A model is its table name, optionally followed by ``-YYYYMMDD`` or
``-latest`` (``claude-sonnet-4-5-20250929`` -> ``claude-sonnet-4-5``; ``claude-opus-4-6``
matches nothing). A model absent from the table weighs as the reference model. The shape
and the lookup rule are ``domain.catalogue``'s.

``pondere-v1`` is defined on this table: editing it changes that formula's figures, so a
new table goes with a new formula name (ADR-0009). It is frozen as it is; ``pondere-v2``
and the ``usd`` figures use ``domain.tarifs_v2`` (ADR-0071).
"""

from __future__ import annotations

from collections.abc import Mapping

from miam_economies.domain.catalogue import Catalogue, Tarif

__all__ = ["CATALOGUE", "RATIOS_PAR_DEFAUT", "REFERENCE", "TARIFS", "Tarif", "ratios",
           "tarif"]

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

CATALOGUE = Catalogue(TARIFS, REFERENCE)
"""This table as a ``Catalogue`` (the shape ``domain.tarifs_v2`` shares)."""


def tarif(modele: str) -> Tarif | None:
    """The price row of API model name ``modele``: a table name, alone or followed by a
    ``-YYYYMMDD`` date or ``-latest``; None for any other name."""
    return CATALOGUE.tarif(modele)


def ratios(modele: str | None) -> Tarif:
    """What one token of each kind of ``modele`` weighs, in input tokens of the reference
    model (``REFERENCE``): a Haiku token weighs less than an Opus one. An unknown model (or
    None: the model is not sent) weighs as the reference model (``RATIOS_PAR_DEFAUT``)."""
    return CATALOGUE.ratios(modele)
