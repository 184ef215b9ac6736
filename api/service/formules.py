"""Which formula a name means: one built in (``domain.formulas.FORMULES``) or one a user
set from a price file, recorded in the projection's view (ADR-0009, ADR-0131).

Every process that folds or reads a projection (``serve``, the projector child, a
replay, MIAM's read functions, a PostgreSQL hub) asks ``formula_for`` with its view: a
user formula is rebuilt from the recorded table alone, never from the file, so a server
restarted on a projection built under one folds new events with the same prices.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from miam_economies.domain.errors import MiamEconomiesError
from miam_economies.domain.formulas import FORMULES, Formule, pondere
from miam_economies.domain.modeles_connus import non_tarifes
from miam_economies.domain.tarifs_fichier import (
    FormuleEnregistree,
    TarifsFichier,
    canonical,
    from_canonical,
)
from miam_economies.projections.view import BilanView

NOM = re.compile(r"[a-z0-9][a-z0-9._-]{0,62}")
"""A user formula's name: lower-case letters, digits, ``.``, ``_``, ``-``; 63 at most."""

RESERVE = re.compile(r"(pondere-)?v[0-9]")
"""Names starting like the built-in ones (``v1``, ``pondere-v2``...) are the releases' to
give: a user formula named ``pondere-v3`` would be shadowed by a later built-in one."""


class UnknownFormula(MiamEconomiesError, ValueError):
    """No formula of that name: neither built in nor recorded from a price file."""


class FormulaRefused(MiamEconomiesError, ValueError):
    """A user formula refused before anything is written: a malformed name, a built-in's
    name, or a name recorded from another price file (a name is a version: ADR-0009)."""


class PriceFileUnreadable(MiamEconomiesError, OSError):
    """The price file cannot be read (missing, a directory, no permission)."""


def builtin_names() -> str:
    """The built-in formulas' names, for messages: ``pondere-v1, ..., v1-serveur``."""
    return ", ".join(sorted(FORMULES))


def formula_for(view: BilanView, name: str) -> Formule:
    """The formula ``name``: a built-in one, else the user formula recorded in ``view``
    (``BilanView.recorded_formula``). Raises ``UnknownFormula`` naming the built-in
    and the recorded ones (``unknown_formula``), and the view's ``PersistenceError``."""
    builtin = FORMULES.get(name)
    if builtin is not None:
        return builtin
    recorded = view.recorded_formula(name)
    if recorded is None:
        raise unknown_formula(name, view.recorded_formulas())
    return user_formula(recorded)


def unknown_formula(name: str, recorded: Iterable[str] = ()) -> UnknownFormula:
    """The ``UnknownFormula`` for ``name``: the nearest name of the built-in formulas and
    of the ``recorded`` ones (users' formulas, from price files) if one is close
    (``difflib``), the built-in names, the recorded ones, and the way to set one's own
    prices (issue 32, point 1)."""
    recorded = sorted(recorded)
    nearest = difflib.get_close_matches(name, [*sorted(FORMULES), *recorded], 1, 0.6)
    meant = f" (did you mean {nearest[0]}?)" if nearest else ""
    yours = f"; recorded from price files: {', '.join(recorded)}" if recorded else ""
    return UnknownFormula(f"no formula {name!r}{meant}; built in: {builtin_names()}{yours}; "
                          f"or set your prices: replay --formule {name} --tarifs FILE")


@functools.lru_cache(maxsize=64)
def user_formula(recorded: FormuleEnregistree) -> Formule:
    """The weighted formula of a recorded price table (``domain.formulas.pondere``),
    its ``prix`` naming the file and its checksum. Cached: the same record gives the same
    ``Formule`` and catalogue, whose weights are cached by identity."""
    return pondere(recorded.nom, from_canonical(recorded.tarifs),
                   source=f"price file {recorded.fichier}", sha256=recorded.sha256,
                   fichier=recorded.fichier)


def check_user_name(name: str) -> None:
    """Raise ``FormulaRefused`` unless ``name`` may name a user formula: ``NOM``, and
    neither a built-in name nor one shaped like them (``RESERVE``)."""
    if name in FORMULES or RESERVE.match(name):
        kind = "a built-in formula's name" if name in FORMULES else "reserved for releases"
        raise FormulaRefused(
            f"{name!r} is {kind} (built in: {builtin_names()}; names starting with "
            "v<digit> or pondere-v<digit> are reserved): name your prices otherwise, "
            "e.g. mes-prix")
    if not NOM.fullmatch(name):
        raise FormulaRefused(
            f"{name!r} cannot name a formula: 1 to 63 of a-z, 0-9, '.', '_', '-', "
            "starting with a letter or digit")


def price_file_bytes(path: Path) -> bytes:
    """The bytes of the price file at ``path``. Raises ``PriceFileUnreadable``."""
    try:
        return path.read_bytes()
    except OSError as exc:
        raise PriceFileUnreadable(
            f"{path}: the price file cannot be read: {exc.strerror or exc}") from None


def to_record(name: str, tarifs: TarifsFichier, enregistre_le: str) -> FormuleEnregistree:
    """What the view records for user formula ``name`` on the file read as ``tarifs``."""
    return FormuleEnregistree(name, tarifs.sha256, tarifs.fichier,
                              canonical(tarifs.catalogue), enregistre_le)


def check_same_file(recorded: FormuleEnregistree, sha256: str, fichier: str) -> None:
    """Raise ``FormulaRefused`` unless formula ``recorded`` came from a file of checksum
    ``sha256`` (the file ``fichier`` given again): a name is a version (ADR-0009)."""
    if recorded.sha256 != sha256:
        raise FormulaRefused(
            f"formula {recorded.nom!r} is recorded from {recorded.fichier} (sha256 "
            f"{recorded.sha256[:12]}..., {recorded.enregistre_le}), not from this "
            f"{fichier} (sha256 {sha256[:12]}...): a formula's name is its version; "
            "give the new prices a new name")


def unpriced(formula: Formule, modeles: Iterable[str] | None) -> dict[str, Any] | None:
    """``{"modeles": [names], "reference": name}``: the models of ``modeles`` (the
    store's, as events name them) that ``formula``'s price table does not price, sorted,
    so that their pilotage weighs as its ``reference`` model
    (``domain.modeles_connus.non_tarifes``; ADR-0162); None for a formula of token
    counts, which prices nothing."""
    if formula.prix is None:
        return None
    catalogue = formula.prix.catalogue
    return {"modeles": non_tarifes(catalogue, modeles or ()),
            "reference": catalogue.reference}
