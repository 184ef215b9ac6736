"""What a breakdown of the bilan may be (pure): its dimensions (``par``, and ``puis`` to
split each group of ``par`` again), the periods days are gathered in, and the day bounds.

Sources: SPEC, "Breakdowns"; issue 24 (weeks, months, two dimensions); ADR-0132 (periods
read from the per-day rows), ADR-0133 (two dimensions). A dimension is a period
(``jour``, ``semaine``: ISO 8601 weeks, ``mois``), ``client``, ``modele`` (the Claude
model of the pilotages), ``demande``, or a field of MIAM's journal (``preset``,
``journal.<field>`` for a field named like one of these).
"""

from __future__ import annotations

from calendar import monthrange
from dataclasses import dataclass
from datetime import date

from miam_economies.domain.errors import MiamEconomiesError

PERIODES = ("jour", "semaine", "mois")
"""The time dimensions: every one is a gathering of the per-day rows, cut in the
projection's zone (so a week or a month starts at local midnight, whatever DST does)."""

CHAMPS_PAR_JOUR = ("preset", "format")
"""The journal fields whose groups the fold also keeps by day (contract, point 4: "le
détail par preset ou par format"), so that they are read by period within the bilan's
read budget; any other field is split by period from the per-demande, per-day rows at
read time, at a cost that grows with the demandes read (ADR-0133)."""

ALONE = "session"
"""The dimension that splits no further and is split by no other: a Claude Code
session's figures are kept per session and client only, each event under its own
``session_id`` (ADR-0176), not per day nor per demande."""

NOT_BY_DEMANDE = "modele"
"""The one dimension that is not a property of a demande: a pilotage's model is the
model of a turn whose cost is split over several demandes, and the per-model rows are not
kept per demande, so it pairs only with a period or ``client``."""


def semaine(jour: str) -> str:
    """The ISO 8601 week (``YYYY-Www``) of day ``jour`` (``YYYY-MM-DD``): weeks start on
    Monday, and week 1 is the one with the year's first Thursday, so the last days of
    December may be in week 1 of the next year and the first days of January in week 52
    or 53 of the previous one (``2026-12-31`` -> ``2026-W53``; ``2027-01-01`` ->
    ``2026-W53``). Raises ``ValueError`` for a malformed day."""
    year, week, _ = date.fromisoformat(jour).isocalendar()
    return f"{year}-W{week:02d}"


def mois(jour: str) -> str:
    """The calendar month (``YYYY-MM``) of day ``jour`` (``YYYY-MM-DD``)."""
    return jour[:7]


def periode(par: str, jour: str) -> str:
    """The key of day ``jour`` in period ``par`` (one of ``PERIODES``): the day itself,
    its ISO week or its month. Raises ``KeyError`` for another ``par``."""
    if par == "jour":
        return jour
    return {"semaine": semaine, "mois": mois}[par](jour)


def dimension(par: str) -> str:
    """The dimension ``par`` names: a period, ``client``, ``modele``, ``demande``,
    ``session``, or ``journal.<field>`` for any other name (``preset`` and
    ``journal.preset`` are one)."""
    if par in (*PERIODES, "client", "modele", "demande", ALONE):
        return par
    return "journal." + par.removeprefix("journal.")


class BoundsError(MiamEconomiesError, ValueError):
    """A breakdown's parameters refused (``check_bounds``); the message names the
    parameter at fault."""


@dataclass(frozen=True, slots=True)
class BoundNames:
    """How an edge spells the parameters ``check_bounds`` names in its messages: the
    query string's by default; the command line passes its flags."""

    depuis: str = "depuis"
    jusqu_au: str = "jusqu_au"
    par: str = "par"
    puis: str = "puis"


WIRE_NAMES = BoundNames()
"""The query string's names: ``GET /economies/bilan``'s and the Python reads'."""


def check_day(text: str) -> str:
    """``text`` if it is a calendar day written ``YYYY-MM-DD``; else ``ValueError``.

    The bounds ``depuis``/``jusqu_au`` of a breakdown by period (SPEC, "Breakdowns").
    """
    digits = text[:4] + text[5:7] + text[8:]
    if (len(text) != 10 or text[4] != "-" or text[7] != "-" or not digits.isascii()
            or not digits.isdigit()):
        raise ValueError(f"{text!r} is not a day written YYYY-MM-DD")
    # Written so, but maybe no such day: say which part is wrong, in our words (the
    # standard library's change between releases).
    year, month, day = int(text[:4]), int(text[5:7]), int(text[8:])
    if not year or not 1 <= month <= 12:
        raise ValueError(f"{text!r} is no calendar day (no "
                         + (f"month {month})" if year else "year 0)"))
    days = monthrange(year, month)[1]
    if not 1 <= day <= days:
        raise ValueError(f"{text!r} is no calendar day ({text[:7]} has {days} days)")
    return text


def check_bounds(par: str | None, depuis: str | None, jusqu_au: str | None,
                 names: BoundNames = WIRE_NAMES, puis: str | None = None) -> None:
    """Raise ``BoundsError`` (a ``ValueError``) unless a breakdown's parameters are sound:
    ``puis`` only with ``par``, naming another dimension, and not ``modele`` beside a
    property of a demande (``NOT_BY_DEMANDE``), nor beside ``session`` (``ALONE``); the
    day bounds each a ``YYYY-MM-DD`` day, only when ``par`` or ``puis`` is a period,
    ``depuis`` not after ``jusqu_au``. The message names the parameter as ``names``
    spells it."""
    if puis is not None:
        if not par:
            raise BoundsError(f"{names.puis} splits the groups of {names.par}: "
                              f"give {names.par} too")
        if not puis:
            raise BoundsError(f"{names.puis}: name a dimension")
        a, b = dimension(par), dimension(puis)
        if a == b:
            raise BoundsError(f"{names.puis}: {puis!r} is the dimension {names.par} "
                              "already names")
        if ALONE in (a, b):
            raise BoundsError(f"{names.puis}: a breakdown by {ALONE!r} takes no second "
                              "dimension (each session's figures are kept whole)")
        if NOT_BY_DEMANDE in (a, b) and not {a, b} & {*PERIODES, "client"}:
            raise BoundsError(
                f"{names.puis}: a pilotage's model is not split by demande, so "
                f"{NOT_BY_DEMANDE!r} pairs only with jour, semaine, mois or client")
    for name, bound in ((names.depuis, depuis), (names.jusqu_au, jusqu_au)):
        if bound is not None:
            try:
                check_day(bound)
            except ValueError as exc:
                raise BoundsError(f"{name}: {exc}") from None
    if (depuis or jusqu_au) and par not in PERIODES and puis not in PERIODES:
        raise BoundsError(f"{names.depuis} and {names.jusqu_au} bound days: use them when "
                          f"{names.par} or {names.puis} is jour, semaine or mois")
    if depuis and jusqu_au and depuis > jusqu_au:
        raise BoundsError(f"{names.depuis} is after {names.jusqu_au}")
