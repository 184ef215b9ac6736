"""A price table a user sets: a TOML file read into a ``Catalogue``, with its provenance
(pure: bytes in, a table or a ``TarifsError`` out; ADR-0131).

The file gives USD per million tokens, for each model the four prices, and the reference
model, whose input token is the unit of the weighted figures::

    # USD per million tokens
    reference = "claude-sonnet-4-5"

    [modeles.claude-sonnet-4-5]     # and one table per model, as this one
    input = 3
    output = 15
    cache_write = 3.75
    cache_read = 0.30

Prices are integers or decimals, read exactly (``tomllib``'s ``parse_float=Decimal``, then
``Fraction``): ``0.30`` is 3/10, never a binary float. Model names are matched as in the
built-in tables (``domain.catalogue``: a name, alone or followed by ``-YYYYMMDD`` or
``-latest``); a model the file does not list weighs as the reference model. A model no
built-in table knows is refused as a typo unless its table says ``hors_catalogue = true``
(``domain.modeles_connus``; ADR-0162).

The table is recorded in the projection as canonical JSON (``canonical``), from which any
process rebuilds it (``from_canonical``), with the file's sha256 and name
(``FormuleEnregistree``).
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any, NoReturn

from miam_economies.domain.catalogue import Catalogue, Tarif
from miam_economies.domain.errors import MiamEconomiesError
from miam_economies.domain.modeles_connus import HORS_CATALOGUE, connu, inconnu

PRIX = ("input", "output", "cache_write", "cache_read")
"""The four prices of a model, USD per million tokens, in ``Tarif``'s order."""

CLES = ("reference", "modeles")
"""The file's top-level keys."""

PLAFOND = 10**6
"""A price must be below this, USD per million tokens (a typo's guard, and a bound on the
exact arithmetic: ``1e999999999`` would not end)."""

DECIMALES = 12
"""A price has at most this many decimal places (same reason as ``PLAFOND``)."""


class TarifsError(MiamEconomiesError, ValueError):
    """A price file refused: ``fichier`` (its name), ``ligne`` (1-based line at fault),
    ``champ`` (the key path at fault, such as ``modeles.claude-opus-5.cache_read``; empty
    for text that is not TOML) and ``probleme`` (what is wrong). The message is
    ``"<fichier>:<ligne>: <champ>: <probleme>"`` (ADR-0131)."""

    def __init__(self, fichier: str, ligne: int, champ: str, probleme: str):
        where = f"{fichier}:{ligne}: {champ}: " if champ else f"{fichier}:{ligne}: "
        super().__init__(where + probleme)
        self.fichier, self.ligne, self.champ, self.probleme = fichier, ligne, champ, probleme


@dataclass(frozen=True)
class TarifsFichier:
    """A price file read: its ``catalogue`` (exact USD per million tokens), the sha256 of
    its bytes (hex) and its name (``fichier``, without the directories)."""

    catalogue: Catalogue
    sha256: str
    fichier: str


@dataclass(frozen=True)
class FormuleEnregistree:
    """A user formula as the projection records it (``BilanView.record_formula``): its
    name ``nom``, the price file's ``sha256`` and name ``fichier``, the table as
    ``canonical`` JSON (``tarifs``), and when it was recorded (``enregistre_le``, ISO 8601
    UTC). A name is a version: recorded once, never changed (ADR-0009, ADR-0131)."""

    nom: str
    sha256: str
    fichier: str
    tarifs: str
    enregistre_le: str


def lire(data: bytes, fichier: str) -> TarifsFichier:
    """Read the price file ``data`` (its bytes) named ``fichier`` (for messages and
    provenance). Raises ``TarifsError`` at the first fault, in this order: text that is
    not UTF-8 or not TOML, a top-level key other than ``CLES``, a missing or non-string
    ``reference``, no model, a model that is not a table or has an empty name, an unknown
    or missing price, a price that is not a number (a boolean, a string), not finite,
    negative, at or above ``PLAFOND`` or with more than ``DECIMALES`` places, a
    ``hors_catalogue`` other than a boolean, a model the catalogue does not know without
    ``hors_catalogue = true`` (``domain.modeles_connus``: each model in the file's order,
    after its prices), a reference without a price row, and a reference input price of 0
    (it is the unit)."""
    sha256 = hashlib.sha256(data).hexdigest()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TarifsError(fichier, data.count(b"\n", 0, exc.start) + 1, "",
                          "not UTF-8 text") from None
    try:
        doc = tomllib.loads(text, parse_float=Decimal)
    except tomllib.TOMLDecodeError as exc:
        raise TarifsError(fichier, *_syntax_fault(str(exc), text)) from None

    def fault(path: tuple[str, ...], probleme: str) -> NoReturn:
        raise TarifsError(fichier, ligne(text, path), champ(path), probleme)

    for key in doc:
        if key not in CLES:
            fault((key,), "unknown key: a price file has `reference` and "
                          "`[modeles.<name>]` tables")
    reference = doc.get("reference")
    if reference is None:
        fault(("reference",), "missing: name the model whose input token is the unit")
    if not isinstance(reference, str):
        fault(("reference",), "must be a model name, in quotes")
    modeles = doc.get("modeles")
    if not isinstance(modeles, dict):
        fault(("modeles",), "must be tables of prices, `[modeles.<name>]`")
    if not modeles:
        fault(("modeles",), "no model: give at least the reference model's prices")
    tarifs = {}
    for nom, row in modeles.items():
        tarifs[nom] = _row(row, ("modeles", nom), fault)
        if not row.get(HORS_CATALOGUE) and not connu(nom):  # a typo, unless declared
            fault(("modeles", nom), inconnu(nom))
    if reference not in tarifs:
        fault(("reference",), f"{reference!r} has no prices under [modeles]")
    if tarifs[reference].input == 0:
        fault(("modeles", reference, "input"),
              "the reference model's input price is the unit of the weighted figures: "
              "it cannot be 0")
    return TarifsFichier(Catalogue(tarifs, reference), sha256, fichier)


def _row(row: Any, path: tuple[str, ...], fault: Callable[[tuple[str, ...], str], NoReturn]
         ) -> Tarif:
    """The price row ``row`` of the model at ``path``, or ``fault`` at the first problem."""
    if not path[-1]:
        fault(path, "a model name cannot be empty")
    if not isinstance(row, dict):
        fault(path, f"must be a table of prices: {', '.join(PRIX)}")
    for key in row:
        if key == HORS_CATALOGUE:
            if not isinstance(row[key], bool):
                fault((*path, key), "must be true or false")
        elif isinstance(row[key], dict):  # [modeles.claude-haiku-5.5]: TOML's dot
            fault((*path, key), f"a table, not a price: a model name with a dot is quoted, "
                                f'[modeles."{".".join((*path[1:], key))}"]')
        elif key not in PRIX:
            fault((*path, key), f"unknown price: a model has {', '.join(PRIX)}; "
                                f"{HORS_CATALOGUE} if need be")
    prices = []
    for key in PRIX:
        if key not in row:
            fault((*path, key), "missing price")
        prices.append(_price(row[key], (*path, key), fault))
    return Tarif(*prices)


def _price(value: Any, path: tuple[str, ...],
           fault: Callable[[tuple[str, ...], str], NoReturn]) -> Fraction:
    """``value`` as an exact price, USD per million tokens, or ``fault`` at ``path``."""
    if isinstance(value, bool) or not isinstance(value, int | Decimal):
        if isinstance(value, str):
            fault(path, f"not a number: {json.dumps(value)} (write a price without quotes)")
        shown = json.dumps(value) if isinstance(value, bool) else type(value).__name__
        fault(path, f"not a number: {shown}")
    if isinstance(value, Decimal) and not value.is_finite():
        fault(path, f"not a finite number: {value}")
    if value < 0:
        fault(path, f"negative: {value} (a price is 0 or more)")
    if value >= PLAFOND:
        fault(path, f"{value} USD per million tokens: a price must be below {PLAFOND:,}")
    if isinstance(value, Decimal) and _places(value) > DECIMALES:
        fault(path, f"more than {DECIMALES} decimal places: {value}")
    return Fraction(value)


def _places(value: Decimal) -> int:
    """Decimal places of finite ``value`` once trailing zeros are dropped (read from its
    digits: no arithmetic, so ``1e-999999999`` costs nothing)."""
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    significant = "".join(map(str, digits)).rstrip("0")
    if not significant:
        return 0
    return max(0, -(exponent + len(digits) - len(significant)))


_AT = re.compile(r"\s*\(at line (\d+), column \d+\)$")
"""Where ``tomllib`` says a syntax error is, at the end of its message."""


def _syntax_fault(message: str, text: str) -> tuple[int, str, str]:
    """(ligne, champ, probleme) of ``tomllib``'s syntax error ``message`` on ``text``."""
    found = _AT.search(message)
    if found is not None:
        return int(found.group(1)), "", f"not TOML: {message[:found.start()]}"
    if message.endswith("(at end of document)"):
        return max(1, len(text.splitlines())), "", f"not TOML: {message}"
    return 1, "", f"not TOML: {message}"


def champ(path: tuple[str, ...]) -> str:
    """A key path as TOML writes it: ``modeles."claude-3.5".input`` (a part other than
    letters, digits, ``_`` and ``-`` in quotes)."""
    return ".".join(part if re.fullmatch(r"[A-Za-z0-9_-]+", part) else json.dumps(part)
                    for part in path)


def ligne(text: str, path: tuple[str, ...]) -> int:
    """The 1-based line of ``text`` that defines the longest prefix of key ``path`` (the
    first such line): the line of the field itself, else of its model's table header,
    else of ``[modeles]``; when ``path`` itself has no line (a model written only as
    dotted keys), the first line of a key under it; else 1. ``tomllib`` gives no
    positions, so each table header and each ``key =`` line is parsed by ``tomllib``
    itself into its key path, which keeps quoted and dotted keys right."""
    best, found, under = 0, 1, 0
    for number, keys in key_lines(text):
        if best < len(keys) <= len(path) and path[:len(keys)] == keys:
            best, found = len(keys), number
        elif not under and keys[:len(path)] == path:
            under = number
    return found if best == len(path) or not under else under


def key_lines(text: str) -> list[tuple[int, tuple[str, ...]]]:
    """``(line, full key path)`` of each table header and key/value line of ``text``; a
    key's path starts with its table's. Lines inside multi-line values may be misread:
    only a fault's line depends on this."""
    table: tuple[str, ...] = ()
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("["):
            header = _key_path(stripped)
            if header:
                table = header
                found.append((number, header))
            continue
        # The key ends at the first "=" after which the line parses as `key = 0`.
        for at in (i for i, char in enumerate(stripped) if char == "="):
            keys = _key_path(stripped[:at] + "= 0")
            if keys:
                found.append((number, table + keys))
                break
    return found


def _key_path(fragment: str) -> tuple[str, ...] | None:
    """The key path the TOML ``fragment`` (a header, or ``key = 0``) defines, or None if
    it does not parse."""
    try:
        node: Any = tomllib.loads(fragment)
    except tomllib.TOMLDecodeError:
        return None
    keys: list[str] = []
    while isinstance(node, dict) and len(node) == 1:
        ((key, node),) = node.items()
        keys.append(key)
        if isinstance(node, list) and node:  # [[array.of.tables]]
            node = node[-1]
    return tuple(keys)


def canonical(catalogue: Catalogue) -> str:
    """``catalogue`` as canonical JSON: ``{"modeles": {name: {price: "decimal"}},
    "reference": name}``, keys sorted, no spaces, prices as exact decimal text (``"0.3"``).
    Raises ``ValueError`` for a price that no decimal writes exactly (a user's never is)."""
    modeles = {nom: {key: _decimal_text(getattr(row, key)) for key in PRIX}
               for nom, row in catalogue.tarifs.items()}
    return json.dumps({"modeles": modeles, "reference": catalogue.reference},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def from_canonical(text: str) -> Catalogue:
    """The catalogue ``canonical`` wrote as ``text``, exactly. Raises ``ValueError`` (and
    ``KeyError``) for other text."""
    doc = json.loads(text)
    return Catalogue({nom: Tarif.of(*(row[key] for key in PRIX))
                      for nom, row in doc["modeles"].items()}, doc["reference"])


def _decimal_text(price: Fraction) -> str:
    """``price`` (>= 0, a denominator dividing a power of ten) as exact decimal text,
    without trailing zeros: ``Fraction(3, 10)`` -> ``"0.3"``."""
    places = 0
    while 10**places % price.denominator:
        places += 1
        if places > 4 * DECIMALES:
            raise ValueError(f"{price} has no exact decimal text")
    digits = str(price.numerator * 10**places // price.denominator).rjust(places + 1, "0")
    if not places:
        return digits
    return f"{digits[:-places]}.{digits[-places:]}".rstrip("0").rstrip(".")
