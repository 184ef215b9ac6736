"""Names a read understands, and what it says of one it does not (issue 32, item 1;
ADR-0164): a dimension (``par``, ``puis``, ``apparier``) is a built-in one or a field
found in MIAM's journal, and a query parameter is one the route reads. Anything else is
refused, naming it, listing what exists and the nearest spelling: a typo is never answered
with figures that look like data (``?par=jours`` gave one ``(inconnu)`` group holding every
demande).

Pure: the fields a journal holds are read by the caller and handed in.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from difflib import get_close_matches

from miam_economies.domain.breakdowns import PERIODES
from miam_economies.domain.errors import MiamEconomiesError

BUILT_IN = (*PERIODES, "client", "modele", "demande", "session")
"""The dimensions that are not a journal field (SPEC, "Breakdowns")."""


class NotUnderstood(MiamEconomiesError, ValueError):
    """A name or value a read does not understand: ``parametre`` names the parameter as
    the wire spells it (``par``, ``puis``, ``apparier``, ``attendre``, or the unknown
    query parameter itself), and the message begins with it, says what exists and the
    nearest spelling."""

    def __init__(self, parametre: str, message: str) -> None:
        super().__init__(message)
        self.parametre = parametre


CLOSE = 0.6
"""``difflib``'s ratio from which a name is offered as the one meant."""

SURELY_MEANT = 0.85
"""The ratio from which a name that is not built in is refused as a typo of a built-in one
even before the journal's fields are known (``jours``: 0.89 to ``jour``; ``model``: 0.91
to ``modele``); below it (``mode``: 0.80) it may be a field the journal will hold."""


def nearest(word: str, candidates: Iterable[str], cutoff: float = CLOSE) -> str | None:
    """The candidate closest to ``word`` by ``difflib``'s ratio (at least ``cutoff``),
    compared without case and with ``-`` read as ``_`` (the command line's spelling of a
    query parameter: ``jusqu-au`` is ``jusqu_au``); None when none is close."""
    by_key = {c.lower().replace("-", "_"): c for c in candidates}
    found = get_close_matches(word.lower().replace("-", "_"), list(by_key), n=1,
                              cutoff=cutoff)
    return by_key[found[0]] if found else None


def _suggestion(word: str, candidates: Iterable[str]) -> str:
    close = nearest(word, candidates)
    return "" if close is None else f"; did you mean {close!r}?"


def check_dimension(parametre: str, name: str, champs: Collection[str] | None,
                    built_in: Collection[str] = BUILT_IN) -> bool:
    """Whether dimension ``name`` (given as ``parametre``) is understood: a name of
    ``built_in``, or a field of MIAM's journal (``journal.<field>`` too) among ``champs``,
    the fields the demandes' first journal lines hold as scalars. Returns True when it is
    known, False when it cannot be known (``champs`` None or empty: no journal line with
    a field read yet, so the field is answered as before, every demande ``(inconnu)``, and
    the answer says so). Raises ``NotUnderstood`` for a name neither built in nor a field
    of a journal that has fields, listing both and the nearest spelling (among the
    journal's fields only for ``journal.<field>``); and, before the fields are known, for
    an unprefixed name ``SURELY_MEANT`` to be a built-in one (``jours``)."""
    if name in built_in:
        return True
    prefixed = name.startswith("journal.")
    field = name.removeprefix("journal.")
    if not champs:
        meant = None if prefixed else nearest(name, built_in, SURELY_MEANT)
        if meant is not None:
            raise NotUnderstood(parametre, (
                f"{parametre}: {name!r} is not a built-in dimension "
                f"({', '.join(built_in)}); did you mean {meant!r}? (a field of MIAM's "
                f"journal by that name: journal.{name})"))
        return False
    if field in champs:
        return True
    fields = sorted(champs)
    what = (f"is neither a built-in dimension ({', '.join(built_in)}) nor" if built_in
            else "is not")
    raise NotUnderstood(parametre, (
        f"{parametre}: {name!r} {what} a field of MIAM's journal: no demande's first line "
        f"holds a scalar {field!r} (fields found: {', '.join(fields)})"
        f"{_suggestion(field, fields if prefixed else [*built_in, *fields])}"))


def check_parameters(given: Iterable[str], known: Collection[str], where: str) -> None:
    """Raise ``NotUnderstood`` for the first name of ``given`` (a query's parameters, in
    order) that is not in ``known`` (those ``where``, a route, reads), naming the known
    ones and the nearest spelling; nothing for a query of known names only."""
    for name in given:
        if name not in known:
            shown = ", ".join(sorted(known)) or "none"
            raise NotUnderstood(name, f"{name}: not a parameter of {where} (it reads: "
                                    f"{shown}){_suggestion(name, known)}")


def check_once(names: Iterable[str]) -> None:
    """Raise ``NotUnderstood`` for a parameter given twice (``?par=a&par=b``): which one
    counts would be a guess."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise NotUnderstood(name, f"{name}: given more than once")
        seen.add(name)


WAIT = ("1", "true")
"""What ``attendre`` takes (SPEC, "Interfaces": ``?attendre=1``; ``true`` too)."""


def wait_asked(value: str | None) -> bool:
    """Whether ``attendre``'s ``value`` (None: not given) asks to wait. Raises
    ``NotUnderstood`` for any value but ``WAIT``'s: ``attendre=yes`` did not wait, in
    silence."""
    if value is None:
        return False
    if value not in WAIT:
        raise NotUnderstood("attendre", f"attendre: takes 1 (or true), not {value[:20]!r}")
    return True
