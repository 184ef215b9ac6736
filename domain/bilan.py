"""The bilan's figures, the days they are cut in and the bounds a read gives them (pure).

Source: contract ``000_*.txt``, "À implémenter dans MIAM", point 4; SPEC.md, "The bilan".
Every figure is a sum over events, so folding is commutative and associative: any arrival
order gives the same figures, provided each stored event is folded exactly once (the
store's uniqueness and the projection's tracking position see to that; ADR-0002, ADR-0004).
What one event adds is folded by ``projections.delta.PageDelta``, per event type and by
hand for speed (ADR-0062); ``tests/corpus.py`` and ``bench/naive.py`` state it apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import astuple, dataclass
from datetime import timedelta, tzinfo
from fractions import Fraction
from math import floor
from typing import Any

from miam_economies.domain.events import Pilotage
from miam_economies.domain.instants import parse_instant
from miam_economies.domain.tarifs_v2 import CATALOGUE as TARIFS_USD

FIGURES = ("delegations", "evites", "pilotage", "corrections", "net", "taux_reprise")
"""The six figures' names, in the wire's order (SPEC, "Interfaces"; ``Figures.as_dict``'s
keys): the tables', the CSV's and the OpenAPI document's columns."""


@dataclass(slots=True)
class Figures:
    """Running sums for one client, day, demande or group: tokens, except ``delegations``
    and ``evenements`` (counts).

    ``evenements`` counts the events folded in (for the conservation check; not part of
    the wire figures). ``net`` and ``taux_reprise`` are derived, never stored. ``a + b``
    makes new sums; ``a.add(b)`` adds ``b`` into ``a`` in place, which a fold does for
    every event (a new value per event would cost more than the fold: ADR-0011).
    """

    delegations: int = 0
    evites: int = 0
    pilotage: int = 0
    corrections: int = 0
    evenements: int = 0

    def add(self, other: Figures) -> None:
        """Add ``other``'s sums into these, in place."""
        self.delegations += other.delegations
        self.evites += other.evites
        self.pilotage += other.pilotage
        self.corrections += other.corrections
        self.evenements += other.evenements

    def __add__(self, other: Figures) -> Figures:
        return Figures(
            self.delegations + other.delegations,
            self.evites + other.evites,
            self.pilotage + other.pilotage,
            self.corrections + other.corrections,
            self.evenements + other.evenements,
        )

    def __sub__(self, other: Figures) -> Figures:
        return Figures(
            self.delegations - other.delegations,
            self.evites - other.evites,
            self.pilotage - other.pilotage,
            self.corrections - other.corrections,
            self.evenements - other.evenements,
        )

    @property
    def net(self) -> int:
        """evites - pilotage - corrections, tokens (contract, "Gain net")."""
        return self.evites - self.pilotage - self.corrections

    @property
    def taux_reprise(self) -> float | None:
        """corrections / evites; None when evites <= 0 (contract, point 4)."""
        return self.corrections / self.evites if self.evites > 0 else None

    def as_dict(self) -> dict[str, Any]:
        """The six figures of the wire format, in the contract's order."""
        return {
            "delegations": self.delegations,
            "evites": self.evites,
            "pilotage": self.pilotage,
            "corrections": self.corrections,
            "net": self.net,
            "taux_reprise": self.taux_reprise,
        }


def parts_pilotage(cout: int, demande_ids: Sequence[str]) -> list[tuple[str, int]]:
    """Split one pilotage's ``cout`` (tokens) evenly over its distinct ``demande_ids``, in
    integers.

    A pilotage covers each demande it lists once, however many times it is listed
    (ADR-0101, amending ADR-0006): with ``n`` distinct demandes, each gets ``cout // n``;
    the ``cout % n`` remaining tokens go one each to the first demandes in sorted order,
    so the parts sum to ``cout`` exactly and do not depend on the order of the list.
    Returns ``[(demande_id, tokens), ...]``, one per distinct demande, in sorted order.
    """
    ordered = sorted(set(demande_ids))
    base, remainder = divmod(cout, len(ordered))
    return [(d, base + (1 if i < remainder else 0)) for i, d in enumerate(ordered)]


def jour(date: str, zone: tzinfo) -> str:
    """The calendar day (``YYYY-MM-DD``) of an event's ``date`` in time zone ``zone``.

    ``date`` is a validated ISO 8601 string with an offset; two dates naming the same
    instant with different offsets fall on the same day. Raises ``ValueError`` otherwise.
    """
    return parse_instant(date).astimezone(zone).date().isoformat()


class Jours:
    """``jour`` for one ``zone``, memoised by the hour (or the minute) the date is written
    in: ``Jours(zone)(date) == jour(date, zone)`` for every valid ``date``, at a dict
    look-up per event instead of a parse and a zone conversion (ADR-0062).

    A key is the date's first 13 characters (``YYYY-MM-DDTHH``) and its written offset
    (``Z`` or ``±hh:mm``): every instant written with that key lies in one hour. The
    hour's day is kept only when the hour's first and last instants fall on the same day
    at the same offset in ``zone`` (so no midnight and no transition inside: a zone a
    half-hour off the written offset cuts some hours at midnight); otherwise the minute
    (first 16 characters) is tried the same way, and a date in neither is computed
    uncached. At most ``LIMIT`` keys are kept per level (then the level starts again), so
    memory stays bounded over any history. Threads may share one: every entry kept is
    exact, and one lost to a concurrent ``clear`` is computed again.
    """

    LIMIT = 100_000

    __slots__ = ("zone", "_hours", "_minutes")

    def __init__(self, zone: tzinfo):
        self.zone = zone
        self._hours: dict[str, str] = {}
        self._minutes: dict[str, str] = {}

    def __call__(self, date: str) -> str:
        """The calendar day (``YYYY-MM-DD``) of ``date`` in the zone; see ``jour``."""
        key = date[:13] + (date[-6:] if date[-1] != "Z" else "Z")
        day = self._hours.get(key)
        return day if day is not None else self._uncached(date, key)

    def _uncached(self, date: str, key: str) -> str:
        offset = key[13:]
        day = self._span(self._hours, key, date[:13] + ":00:00" + offset, _LAST_OF_HOUR)
        if day is not None:
            return day
        key = date[:16] + offset
        day = self._minutes.get(key)
        if day is None:
            day = self._span(self._minutes, key, date[:16] + ":00" + offset,
                             _LAST_OF_MINUTE)
        return day if day is not None else jour(date, self.zone)

    def _span(self, cache: dict[str, str], key: str, first: str,
              length: timedelta) -> str | None:
        # The day of every instant from ``first`` to ``first + length``, if one: kept.
        start = parse_instant(first).astimezone(self.zone)
        end = (parse_instant(first) + length).astimezone(self.zone)
        if start.date() != end.date() or start.utcoffset() != end.utcoffset():
            return None
        if len(cache) >= self.LIMIT:
            cache.clear()
        day = cache[key] = start.date().isoformat()
        return day


_LAST_OF_HOUR = timedelta(hours=1, microseconds=-1)
_LAST_OF_MINUTE = timedelta(minutes=1, microseconds=-1)


@dataclass(slots=True)
class FiguresModele:
    """Pilotage per Claude model (``modele``): ``tours`` (turns, a count), the four usage
    counters and ``cout`` (tokens) summed over its turns (SPEC, "per model"). ``add_turn``
    adds one turn in place, as a fold does."""

    tours: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cout: int = 0

    def __add__(self, other: FiguresModele) -> FiguresModele:
        return FiguresModele(*(a + b for a, b in zip(astuple(self), astuple(other),
                                                    strict=True)))

    def add_turn(self, pilotage: Pilotage, cout: int) -> None:
        """Add one turn whose pilotage cost under the fold's formula is ``cout`` (tokens),
        in place."""
        u = pilotage.usage
        self.tours += 1
        self.input_tokens += u.input_tokens
        self.output_tokens += u.output_tokens
        self.cache_read_input_tokens += u.cache_read_input_tokens
        self.cache_creation_input_tokens += u.cache_creation_input_tokens
        self.cout += cout

    def usd(self, modele: str) -> float | None:
        """What these turns cost at ``modele``'s API base prices, USD, to the micro-dollar;
        None for a model without a known price, never 0. Prices: ``domain.tarifs_v2`` (the
        ``genai-prices`` catalogue, ADR-0071) whatever the formula, since USD is no
        formula's figure."""
        price = TARIFS_USD.tarif(modele)
        if price is None:
            return None
        micro_dollars = (self.input_tokens * price.input + self.output_tokens * price.output
                         + self.cache_creation_input_tokens * price.cache_write
                         + self.cache_read_input_tokens * price.cache_read)
        # Exact until here; rounded once, halves up (ADR-0005), to whole micro-dollars.
        return floor(micro_dollars + Fraction(1, 2)) / 1_000_000

    def as_dict(self, modele: str) -> dict[str, Any]:
        """The model cell's wire shape: the six figures (pilotage = cout; a model steers,
        it saves nothing itself: ADR-0006), ``tours``, ``usage`` and ``usd``."""
        return {
            **Figures(pilotage=self.cout).as_dict(),
            "usd": self.usd(modele),
            "tours": self.tours,
            "usage": {
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "cache_read_input_tokens": self.cache_read_input_tokens,
                "cache_creation_input_tokens": self.cache_creation_input_tokens,
            },
        }


def total(figures: Iterable[Figures]) -> Figures:
    """The sum of several clients' figures (an empty iterable gives zeros)."""
    return sum(figures, Figures())
