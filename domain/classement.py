"""The classement: groups of demandes ranked by the taux de reprise (or by net per
demande), each with its 95 % intervals, and the verdicts between them (pure).

Source: SPEC.md, "Ranking presets: the classement"; the methods and their measured
coverage and error rates: ADR-0081 (superseding the interval part of ADR-0072). A group is
an ``Echantillon`` of exact sums (``domain.echantillon``); its intervals are in
``domain.intervalles``, the verdicts between groups in ``domain.comparaisons``. This
module holds the parameters' rules, the order and the ``Groupe`` of the answer.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, fields
from fractions import Fraction
from typing import Any

from miam_economies.domain.breakdowns import check_day
from miam_economies.domain.derive import Derive, drift
from miam_economies.domain.echantillon import Echantillon
from miam_economies.domain.errors import MiamEconomiesError
from miam_economies.domain.intervalles import (
    Intervalle,
    intervalle_net_par_demande,
    intervalle_taux_reprise,
)

CRITERES = {"taux": "taux_reprise", "net": "net_par_demande"}
"""``selon`` -> the figure the groups are ranked on (``critere``): the taux de reprise
ascending (less rework first, the contract's quality figure: the default) or net per
demande descending."""

SELON = "taux"
"""The default ``selon``."""

DEFAULT_MIN = 30
"""Demandes a group needs to be ranked (``min``): on plugin-shaped data, at 30 fewer than
5 % of groups lack a high taux bound (46 % at 10) and the net interval holds the truth
86 % of the time (83 % at 10); ADR-0081."""

MAX_COMPARED = 50
"""Ranked groups compared pair by pair (1,225 pairs): past it, only the best ranked are,
so that a classement of a field with thousands of values answers in milliseconds, not
seconds (ADR-0081)."""

NOT_GROUPS = ("jour", "semaine", "mois", "modele", "demande")
"""Breakdowns ``par`` may not name: the classement's unit is a demande, which these do not
group (SPEC; the periods of ADR-0132 as ``jour``)."""

NOT_TASKS = ("client", "jour", "semaine", "mois", "modele", "demande")
"""What ``apparier`` may not name: a task is a journal field (SPEC)."""


_MIN_RULE = "min must be an integer >= 1"


class ClassementError(MiamEconomiesError, ValueError):
    """A classement parameter the SPEC refuses: ``parametre`` names it as the wire does
    (``par``, ``selon``, ``apparier`` or ``min``), the message says why and begins with
    that name. An edge that spells the parameter otherwise (the command line's ``--par``)
    points at it with ``parametre`` and keeps the message."""

    def __init__(self, parametre: str, message: str):
        super().__init__(parametre, message)
        self.parametre = parametre
        self.message = message

    def __str__(self) -> str:
        return self.message


def check_parametres(par: str, selon: str = SELON, apparier: str | None = None,
                     minimum: int = DEFAULT_MIN, depuis: str | None = None,
                     jusqu_au: str | None = None) -> None:
    """Raise ``ClassementError`` unless the classement's parameters are sound (SPEC,
    "Ranking presets: the classement"): ``par`` is ``client`` or a journal field (not
    ``jour``, ``modele``, ``demande``, nor empty; ``journal.`` prefix allowed); ``selon``
    is ``taux`` or ``net``; ``apparier``, when given, a journal field other than ``par``
    (not ``client``, ``jour``, ``modele``, ``demande``); ``minimum`` at least 1; the
    window's ``depuis`` and ``jusqu_au``, when given, days written ``YYYY-MM-DD``,
    ``depuis`` not after ``jusqu_au`` (ADR-0167). The rules' one statement: every edge
    (route, command, Python reads) calls it."""
    if not par.removeprefix("journal.") or par in NOT_GROUPS:
        raise ClassementError("par", "par must be client or a journal field (preset, "
                              f"format...), not {par!r}: the classement ranks groups of "
                              "demandes")
    if selon not in CRITERES:
        raise ClassementError("selon", f"selon must be {' or '.join(CRITERES)}, "
                              f"not {selon!r}")
    if apparier is not None:
        field = apparier.removeprefix("journal.")
        if not field or apparier in NOT_TASKS:
            raise ClassementError("apparier", "apparier must be a journal field naming a "
                                  f"task (test_id...), not {apparier!r}")
        if field == par.removeprefix("journal.") and par != "client":
            raise ClassementError("apparier", f"apparier must differ from par ({par!r}): "
                                  "a group is compared with another on the tasks both ran")
    if minimum < 1:
        raise ClassementError("min", f"{_MIN_RULE}, not {minimum}")
    for name, day in (("depuis", depuis), ("jusqu_au", jusqu_au)):
        if day is not None:
            try:
                check_day(day)
            except ValueError as exc:
                raise ClassementError(name, f"{name}: {exc}") from None
    if depuis is not None and jusqu_au is not None and depuis > jusqu_au:
        raise ClassementError("depuis", f"depuis ({depuis}) is after jusqu_au ({jusqu_au})")


def parse_min(text: str) -> int:
    """The ``min`` written in ``text`` (a query string's value): ASCII digits only, and at
    most 18 of them so that ``int()`` stays cheap. Raises ``ClassementError``
    (``parametre="min"``, ``check_parametres``'s words) otherwise; whether it is at least
    1 is ``check_parametres``'s to say, after ``par``, ``selon`` and ``apparier``."""
    if not text.isascii() or not text.isdigit() or len(text) > 18:
        raise ClassementError("min", f"{_MIN_RULE}, not {text[:20]!r}")
    return int(text)


@dataclass(frozen=True, slots=True)
class Groupe:
    """One group of the classement, the SPEC's fields in the SPEC's order (tokens; the
    ratios and intervals as floats; ``sessions`` the Claude Code sessions its demandes
    come from, the unit of its variances, None for a group whose sessions are not kept
    (``(inconnu)``, without intervals): ADR-0166; ``rang`` None for a group that is not
    ranked; ``derive`` its drift, None when stable, not ranked or unclustered:
    ADR-0167)."""

    cle: str
    demandes: int
    sessions: int | None
    evites: int
    pilotage: int
    corrections: int
    net: int
    net_par_demande: float
    taux_reprise: float | None
    intervalle_net_par_demande: Intervalle | None
    intervalle_taux_reprise: Intervalle | None
    suffisant: bool
    rang: int | None
    derive: Derive | None = None

    def as_dict(self) -> dict[str, Any]:
        """The wire shape: the fields in order, each interval a ``[low, high]`` list,
        ``derive`` its ``Derive.as_dict`` or null."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in ("intervalle_net_par_demande", "intervalle_taux_reprise"):
            out[name] = None if out[name] is None else list(out[name])
        out["derive"] = None if self.derive is None else self.derive.as_dict()
        return out


def ordre(groupes: Mapping[str, Echantillon], minimum: int, selon: str = SELON
          ) -> list[tuple[str, Echantillon, bool]]:
    """The groups with demandes in the SPEC's order, each with whether it is ranked:
    first the ranked ones (``suffisant``: at least ``minimum`` demandes, and by taux, a
    taux: evites > 0), then the others. By ``selon="taux"``, taux ascending (a null taux
    last); by ``"net"``, net per demande descending; ties keep the order of ``cle``. The
    order compares exact fractions, not the emitted floats. A group with no demande
    (every one taken out again) is left out: it has no figure to rank. Raises
    ``ClassementError`` for a ``minimum`` < 1 or an unknown ``selon``, ``ValueError`` when
    a group has a negative count of demandes."""
    check_parametres("client", selon, None, minimum)
    for cle, e in groupes.items():
        if e.demandes < 0:
            raise ValueError(f"group {cle!r} has {e.demandes} demandes")

    def ranked(e: Echantillon) -> bool:
        return e.demandes >= minimum and (selon == "net" or e.evites > 0)

    def key(item: tuple[str, Echantillon]) -> tuple[bool, bool, Fraction]:
        e = item[1]
        if selon == "net":
            return not ranked(e), False, -Fraction(e.net, e.demandes)
        taux = Fraction(e.corrections, e.evites) if e.evites > 0 else Fraction(0)
        return not ranked(e), e.evites <= 0, taux

    # A stable sort over the cle order: ties keep the cle order.
    present = sorted(sorted((cle, e) for cle, e in groupes.items() if e.demandes > 0),
                     key=key)
    return [(cle, e, ranked(e)) for cle, e in present]


def classement(groupes: Mapping[str, Echantillon], minimum: int, selon: str = SELON,
               unclustered: Collection[str] = (),
               recents: Mapping[str, tuple[str, Echantillon]] | None = None
               ) -> list[Groupe]:
    """The groups of ``ordre`` as the SPEC's ``Groupe``s: figures, intervals
    (``domain.intervalles``), ``suffisant`` and ``rang`` (1, 2, 3... for the ranked ones,
    None for the others). The groups of ``unclustered`` have no kept sessions: no
    ``sessions``, no interval, which would be taken over demandes, and no drift
    (ADR-0166). With ``recents`` (``{cle: (first day of its recent period, its sample
    from that day on)}``: ``BilanView.samples``' ``recents``), each other ranked group's
    ``derive`` (``domain.derive.drift``, its sample before that day its whole one less
    the recent one, the level shared over the ranked groups; ADR-0167). Raises as
    ``ordre``."""
    out = []
    rang = 0
    ordered = ordre(groupes, minimum, selon)
    tested = sum(ranked for _, _, ranked in ordered)
    for cle, e, ranked in ordered:
        rang += ranked
        kept = cle not in unclustered
        recent = None if recents is None or not ranked or not kept else recents.get(cle)
        changed = (None if recent is None else
                   drift(recent[0], e - recent[1], recent[1], selon, tested))
        out.append(Groupe(
            cle=cle, demandes=e.demandes, sessions=e.sessions if kept else None,
            evites=e.evites,
            pilotage=e.pilotage,
            corrections=e.corrections, net=e.net, net_par_demande=e.net / e.demandes,
            taux_reprise=e.corrections / e.evites if e.evites > 0 else None,
            intervalle_net_par_demande=intervalle_net_par_demande(e) if kept else None,
            intervalle_taux_reprise=intervalle_taux_reprise(e) if kept else None,
            suffisant=e.demandes >= minimum, rang=rang if ranked else None, derive=changed))
    return out
