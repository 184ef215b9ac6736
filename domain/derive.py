"""Whether a group of the classement changed: its recent period against the rest of its
history, at the verdicts' level (pure; SPEC, "Ranking presets: the classement", Drift;
ADR-0167).

The classement pools a group's whole history, so a preset that was much better and is now
worse stays ranked first for as long as its old demandes outweigh its new ones. For each
ranked group, ``derive`` splits its days at the start of its recent period, the last
quarter of its demandes (``RECENT_SHARE``) counted by its delegations' days, and compares
the criterion after with before as the verdicts compare two groups
(``domain.comparaisons.ecart``: Welch over sessions, the size floor, the taux holds), at the
verdicts' level shared over the ranked groups (Bonferroni): where no group changed, any
drift flag of a classement is wrong at most 1 % of the time. The days' samples count a
session's demandes of each day as one cluster (a session that crosses midnight counts
once a day: ADR-0167).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from miam_economies.domain.comparaisons import ecart
from miam_economies.domain.ecarts import NIVEAU_VERDICT, bounds
from miam_economies.domain.echantillon import Echantillon
from miam_economies.domain.intervalles import Intervalle

RECENT_SHARE = Fraction(1, 4)
"""The recent period holds the last quarter of a group's demandes (by day): long enough to
be measured where the whole history is, short enough to show a change before the old
demandes hide it (ADR-0167)."""


@dataclass(frozen=True, slots=True)
class Derive:
    """A group that changed: ``depuis`` the first day of its recent period
    (``YYYY-MM-DD``), ``avant``/``apres`` the criterion before and from that day, and
    ``intervalle`` the interval of ``apres - avant`` at the level it was judged at (a bound
    None where the data cannot give it)."""

    depuis: str
    avant: float
    apres: float
    intervalle: Intervalle

    def as_dict(self) -> dict[str, Any]:
        """The wire shape (SPEC): ``{"depuis", "avant", "apres", "intervalle"}``."""
        return {"depuis": self.depuis, "avant": self.avant, "apres": self.apres,
                "intervalle": list(self.intervalle)}


def recent_start(days: Sequence[tuple[str, Echantillon]]) -> str | None:
    """The first day of the recent period of ``days`` (``(day, sample)`` in day order):
    the latest day from which the days hold at least ``RECENT_SHARE`` of the demandes;
    None when that is the first day (no history before it to compare with)."""
    return start_latest_first(((day, e.demandes) for day, e in reversed(days)),
                              sum(e.demandes for _, e in days))


def start_latest_first(latest_first: Iterable[tuple[str, int]], total: int) -> str | None:
    """``recent_start`` from a group's demandes per day given latest first (``(day,
    demandes)``) and its demandes in all (``total``): the days are taken only until they
    hold ``RECENT_SHARE`` of ``total`` (a view reads no more); None when that takes
    every demande (its first day) or there is none."""
    # held >= RECENT_SHARE·total in integers: a Fraction's comparison per day cost more
    # than the rest of the rule.
    needed, per = RECENT_SHARE.numerator * total, RECENT_SHARE.denominator
    held = 0
    for day, n in latest_first:
        held += n
        if held * per >= needed:
            return None if held >= total else day
    return None


def derive(days: Sequence[tuple[str, Echantillon]], selon: str, tested: int
           ) -> Derive | None:
    """The drift of one group from its samples by day (``(day, sample)``, day order): None
    when its recent period is not told apart from the rest at the verdicts' level shared
    by ``tested`` groups (or cannot be: one day, too few sessions, no spread, a taux
    hold); else a ``Derive``. ``selon``: ``"taux"`` or ``"net"`` (the classement's)."""
    start = recent_start(days)
    if start is None:
        return None
    return drift(start, Echantillon.total(e for day, e in days if day < start),
                 Echantillon.total(e for day, e in days if day >= start), selon, tested)


def drift(start: str, before: Echantillon, after: Echantillon, selon: str, tested: int
          ) -> Derive | None:
    """``derive``'s verdict given the split: ``before`` the group's sample before day
    ``start``, ``after`` from it on (what the view reads without the days' sums:
    ``BilanView.samples``' ``recents``)."""
    if selon == "taux" and (before.evites <= 0 or after.evites <= 0):
        return None
    if before.demandes <= 0 or after.demandes <= 0:
        return None
    pair = ecart("apres", after, "avant", before, selon)
    if not pair.measured or pair.hold is not None or pair.difference is None:
        return None
    level = 1 - (1 - NIVEAU_VERDICT) / (2 * max(1, tested))
    got = bounds(pair, pair.se, pair.df, level)
    if got is None or got[0] <= 0 <= got[1]:
        return None
    avant = before.net / before.demandes if selon == "net" else before.corrections / before.evites
    apres = after.net / after.demandes if selon == "net" else after.corrections / after.evites
    return Derive(start, avant, apres, (None if pair.open_low else got[0],
                                        None if pair.open_high else got[1]))
