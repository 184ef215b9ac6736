"""Write ``domain/tarifs_v2.py``, the frozen price table of ``pondere-v2`` and of the
``usd`` figures, from the ``genai-prices`` package's bundled catalogue (``make tarifs``;
ADR-0071).

The catalogue (``genai_prices.data.providers``) lists, per provider, ``ModelInfo``
entries: an ``id``, ``match`` rules (``ClauseEquals``, ``ClauseStartsWith``, ``ClauseRegex``,
... combined by ``ClauseOr``/``ClauseAnd``) that recognise the names a request may carry,
and ``prices`` (one ``ModelPrice``, or ``ConditionalPrice``s chosen by date), whose
``input_mtok``, ``output_mtok``, ``cache_write_mtok`` and ``cache_read_mtok`` are USD per
million tokens as ``Decimal`` or ``TieredPrices`` (a base rate and long-context tiers).

For the Anthropic provider this script keeps, per model: the prices in force on
``PRIX_AU`` (``ModelInfo.get_prices``, without request context: no batch or fast-mode
variant), base rates only (a pilotage sums a whole turn, so a per-request tier cannot be
applied: SPEC, "Prices"), as decimal strings the table reads as exact ``Fraction``s; and
the names its match rules spell out (equals and starts-with values, and its id), in the
Anthropic API's form (``claude-`` then words and version numbers joined by dashes; no dots,
no ``@``), without a ``-YYYYMMDD``/``-latest`` suffix, which the table's lookup accepts
anyway (``domain.catalogue``), and only where the catalogue itself resolves that name to
that model. A model without a base rate for one of the four kinds of token is left out
and named in the generated file.

Run from the repository's root: ``python -m scripts.tarifs`` writes the file,
``python -m scripts.tarifs --check`` exits 1 when it differs from what would be written.
Another catalogue version or ``PRIX_AU`` gives another table: freeze it under a new formula
name (ADR-0009, ADR-0071).
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
import textwrap
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from decimal import Decimal
from importlib.metadata import version
from pathlib import Path
from typing import Any

import genai_prices.data
from genai_prices import types

PRIX_AU = date(2026, 12, 1)
"""The day whose prices are frozen (the catalogue dates some price changes)."""

FOURNISSEUR = "anthropic"
"""The catalogue's provider whose models are priced."""

REFERENCE = "claude-sonnet-4-5"
"""The model whose input token is the unit of weighted figures (as in ``pondere-v1``)."""

CIBLE = Path(__file__).resolve().parents[1] / "domain" / "tarifs_v2.py"
"""The generated module."""

KINDS = ("input_mtok", "output_mtok", "cache_write_mtok", "cache_read_mtok")
"""The catalogue's price keys, in the order of ``Tarif``'s fields."""

_API_NAME = re.compile(r"claude(?:-(?:[a-z]+|\d{1,2}))+")
_SUFFIX = re.compile(r"(.+)-(?:\d{8}|latest)")


@dataclass(frozen=True)
class Ligne:
    """One priced model: catalogue ``id`` and display ``nom``, the API ``noms`` it is
    looked up by, its four base ``prix`` (USD per million tokens, ``KINDS`` order), and
    whether the catalogue had long-context ``paliers`` that were dropped."""

    id: str
    nom: str
    noms: tuple[str, ...]
    prix: tuple[Decimal, Decimal, Decimal, Decimal]
    paliers: bool


def _values(clause: Any) -> Iterator[str]:
    """The literal names of a match rule: equals and starts-with values, through
    ``ClauseOr``; nothing from a regex, a contains, an ends-with or an ``and``."""
    if isinstance(clause, types.ClauseOr):
        for child in clause.or_:
            yield from _values(child)
    elif isinstance(clause, types.ClauseEquals):
        yield clause.equals
    elif isinstance(clause, types.ClauseStartsWith):
        yield clause.starts_with


def noms(provider: Any, model: Any) -> tuple[str, ...]:
    """The API names ``model`` (a ``ModelInfo`` of ``provider``) is looked up by, sorted:
    its id and its rules' literal values, lower-cased, a date or ``-latest`` suffix
    removed, in the API's form, and resolved to this very model by the catalogue
    (``Provider.find_model``: its first matching entry wins)."""
    found = set()
    for value in (model.id, *_values(model.match)):
        name = value.lower()
        dated = _SUFFIX.fullmatch(name)
        name = dated.group(1) if dated else name
        if _API_NAME.fullmatch(name) and provider.find_model(name) is model:
            found.add(name)
    return tuple(sorted(found))


def _base(value: Any) -> tuple[Decimal | None, bool]:
    """A catalogue price as (base rate, had tiers): ``TieredPrices`` gives its base."""
    if isinstance(value, types.TieredPrices):
        return value.base, True
    return value, False


def lignes(providers: Sequence[Any], au: date = PRIX_AU) -> tuple[list[Ligne], list[str]]:
    """The priced models of ``FOURNISSEUR`` in catalogue order, and the ones left out
    (``"<id> (no <kind>)"``, or ``"<id> (no API name)"``). Prices are those in force at
    midnight UTC on ``au``. Raises ``LookupError`` without that provider or when the
    ``REFERENCE`` model is not priced."""
    provider = next((p for p in providers if p.id == FOURNISSEUR), None)
    if provider is None:
        raise LookupError(f"the catalogue has no provider {FOURNISSEUR!r}")
    when = datetime.combine(au, time(), UTC)
    rows: list[Ligne] = []
    left_out: list[str] = []
    for model in provider.models:
        prices = model.get_prices(when)
        bases = [_base(getattr(prices, kind)) for kind in KINDS]
        missing = [kind for kind, (value, _) in zip(KINDS, bases, strict=True) if value is None]
        names = noms(provider, model)
        if missing:
            left_out.append(f"{model.id} (no {', '.join(missing)})")
        elif not names:
            left_out.append(f"{model.id} (no API name)")
        else:
            prix = tuple(value for value, _ in bases if value is not None)
            assert len(prix) == 4 and all(p.is_finite() and p >= 0 for p in prix), model.id
            rows.append(Ligne(model.id, model.name or model.id, names,
                              (prix[0], prix[1], prix[2], prix[3]),
                              any(tiered for _, tiered in bases)))
    if not any(REFERENCE in row.noms for row in rows):
        raise LookupError(f"the reference model {REFERENCE!r} is not priced")
    return rows, left_out


def _decimal(value: Decimal) -> str:
    """A price as the plain decimal string ``Tarif.of`` reads exactly (``"0.125"``)."""
    return format(value.normalize(), "f")


def _wrapped(text: str) -> str:
    """``text`` as lines of at most 90 characters, never cut inside a model name."""
    return textwrap.fill(text, width=90, break_on_hyphens=False)


def generer(providers: Sequence[Any] | None = None, au: date = PRIX_AU) -> str:
    """The source of ``domain/tarifs_v2.py`` for ``providers`` (default: the installed
    ``genai-prices`` bundled catalogue), prices in force on ``au``. Deterministic: the same
    catalogue and day give the same text."""
    if providers is None:
        providers = genai_prices.data.providers
    rows, left_out = lignes(providers, au)
    data = Path(genai_prices.data.__file__).read_bytes()
    tiered = [row.id for row in rows if row.paliers]
    header = (
        f"Source: the genai-prices package's bundled catalogue, version "
        f"{version('genai-prices')} (its genai_prices/data.py of sha256 "
        f"{hashlib.sha256(data).hexdigest()}), provider {FOURNISSEUR!r}, prices in force on "
        f"{au.isoformat()}. Base rates only: standard API, 5-minute cache writes, no batch or "
        f"fast-mode variant, no long-context tier (dropped for: {', '.join(tiered) or '-'}). "
        f"Each catalogue model is a row under each API name its match rules spell out; left "
        f"out, for want of a base rate of each kind: {', '.join(left_out) or '-'}."
    )
    lines = [
        '"""Claude API prices per model for ``pondere-v2`` and the ``usd`` figures: USD per',
        "million tokens, by kind of token. GENERATED by ``make tarifs`` (scripts/tarifs.py):",
        "do not edit; a regenerated table that differs is a new formula name (ADR-0071).",
        "",
        _wrapped(header),
        "",
        "A model is a table name, alone or followed by ``-YYYYMMDD`` or ``-latest``; any other",
        "name has no USD figure (null, never 0) and weighs as the reference model",
        "(``domain.catalogue``).",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from collections.abc import Mapping",
        "",
        "from miam_economies.domain.catalogue import Catalogue, Tarif",
        "",
        f'GENAI_PRICES = "{version("genai-prices")}"',
        '"""The version of the genai-prices catalogue this table was generated from."""',
        "",
        f'PRIX_AU = "{au.isoformat()}"',
        '"""The day whose prices these are."""',
        "",
        "TARIFS: Mapping[str, Tarif] = {",
        *_entries(rows),
        "}",
        '"""Every priced model of the catalogue, by API name."""',
        "",
        f'REFERENCE = "{REFERENCE}"',
        '"""The unit of weighted figures: one input token of this model."""',
        "",
        "CATALOGUE = Catalogue(TARIFS, REFERENCE)",
        '"""This table as a ``Catalogue``."""',
    ]
    return "\n".join(lines) + "\n"


def _entries(rows: Iterable[Ligne]) -> Iterator[str]:
    for row in rows:
        yield f"    # {row.id}: {row.nom}"
        prix = ", ".join(f'"{_decimal(p)}"' for p in row.prix)
        for name in row.noms:
            yield f'    "{name}": Tarif.of({prix}),'


def main(argv: Sequence[str] | None = None) -> int:
    """Write ``CIBLE`` (or with ``--check``, compare it); 0 when it is up to date or
    written, 1 when ``--check`` finds a difference."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when domain/tarifs_v2.py differs from the catalogue's")
    args = parser.parse_args(argv)
    text = generer()
    if args.check:
        current = CIBLE.read_text(encoding="utf-8") if CIBLE.exists() else ""
        if current != text:
            print(f"{CIBLE} differs from genai-prices' catalogue: run `make tarifs`",
                  file=sys.stderr)
            return 1
        return 0
    CIBLE.write_text(text, encoding="utf-8")
    print(f"wrote {CIBLE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
