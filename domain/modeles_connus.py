"""Which model names the catalogue knows, for a price file and a replay (pure; issue 32,
point 1; ADR-0162).

The catalogue is the built-in price tables together: ``domain.tarifs`` (``pondere-v1``'s)
and ``domain.tarifs_v2`` (``pondere-v2``'s, generated from ``genai-prices``). A name is
known when one of them prices it by ``Catalogue.tarif``'s rule (a table name, alone or
followed by ``-YYYYMMDD`` or ``-latest``). A price file's model that no table knows is a
typo until the file says otherwise (``HORS_CATALOGUE``): no event would ever match it, and
the model meant would weigh as the reference in silence. A table that leaves out a model
the store holds weighs that model as its reference too; ``non_tarifes`` names them.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from miam_economies.domain import tarifs, tarifs_v2
from miam_economies.domain.catalogue import Catalogue

HORS_CATALOGUE = "hors_catalogue"
"""The key of a price file's model table saying the model is meant to be outside the
catalogue (``hors_catalogue = true``: a local model, one released after the tables)."""

CATALOGUES: tuple[Catalogue, ...] = (tarifs.CATALOGUE, tarifs_v2.CATALOGUE)
"""The built-in tables whose names are the catalogue."""

NOMS: tuple[str, ...] = tuple(sorted({nom for c in CATALOGUES for nom in c.tarifs}))
"""Every table name of the catalogue, sorted."""

_DATED = re.compile(r"(.+)-(\d{8}|latest)")
"""A name followed by one ``-YYYYMMDD`` date or ``-latest`` (``domain.catalogue``'s)."""


def connu(modele: str) -> bool:
    """Whether a built-in table prices the API model name ``modele`` (``CATALOGUES``)."""
    return any(catalogue.tarif(modele) is not None for catalogue in CATALOGUES)


def proches(modele: str, n: int = 3) -> list[str]:
    """Up to ``n`` table names of the catalogue nearest to ``modele`` (without its date
    or ``-latest``), nearest first (``difflib``'s ratio, at least 0.6); may be empty."""
    dated = _DATED.fullmatch(modele)
    return difflib.get_close_matches(dated.group(1) if dated else modele, NOMS, n, 0.6)


def inconnu(modele: str) -> str:
    """What a price file is told about its model ``modele`` that the catalogue does not
    know: the nearest names if any, and the key that accepts it (``HORS_CATALOGUE``)."""
    nearest = proches(modele)
    meant = f" (did you mean {', '.join(nearest)}?)" if nearest else ""
    return (f"unknown model: no built-in price table has it{meant}; events of the model "
            f"meant would weigh as the reference. A model outside the catalogue needs "
            f"`{HORS_CATALOGUE} = true` in its table")


def non_tarifes(catalogue: Catalogue, modeles: Iterable[str]) -> list[str]:
    """The names of ``modeles`` (as events send them) that ``catalogue`` does not price,
    sorted, each once: their pilotage weighs as ``catalogue.reference``'s
    (``Catalogue.ratios``)."""
    return sorted({m for m in modeles if catalogue.tarif(m) is None})
