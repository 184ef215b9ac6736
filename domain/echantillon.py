"""A group's sample: the exact sums over its demandes that every figure, interval and
verdict of the classement is computed from (pure; ADR-0073).

The unit is a demande whose delegation has arrived, with the per-demande view's figures
(tokens): its delegation's ``evites``, its pilotage share, its corrections, and
``net = evites - pilotage - corrections``. Sums add, so a projection keeps them
incrementally and reads a classement without the demandes; they stay exact ints at any
size (ADR-0051), and only ratios and intervals are floats, computed at read time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import astuple, dataclass
from fractions import Fraction


@dataclass(frozen=True, slots=True)
class Echantillon:
    """The exact sums over one group's demandes (tokens; squares in tokens²).

    ``demandes`` counts them; ``evites``, ``pilotage`` and ``corrections`` sum their
    figures; ``evites_squared``, ``corrections_squared``, ``evites_times_corrections`` and
    ``net_squared`` sum e², c², e·c and (e - p - c)² per demande. ``a + b`` is the sample
    of both groups of demandes; ``a - b`` takes ``b``'s demandes out again: a demande's
    figures change as its pilotages and corrections arrive, so a fold replaces its
    contribution, ``groupe - Echantillon.demande(*old) + Echantillon.demande(*new)``.
    """

    demandes: int = 0
    evites: int = 0
    pilotage: int = 0
    corrections: int = 0
    evites_squared: int = 0
    corrections_squared: int = 0
    evites_times_corrections: int = 0
    net_squared: int = 0

    @staticmethod
    def demande(evites: int, pilotage: int, corrections: int) -> Echantillon:
        """The sample of one demande with these figures (tokens)."""
        return Echantillon(*Echantillon.sums_of(evites, pilotage, corrections))

    @staticmethod
    def sums_of(evites: int, pilotage: int, corrections: int) -> tuple[int, ...]:
        """The eight sums of one demande with these figures, in field order, as a plain
        tuple: what a projection adds per demande without building a sample object."""
        net = evites - pilotage - corrections
        return (1, evites, pilotage, corrections, evites * evites,
                corrections * corrections, evites * corrections, net * net)

    @staticmethod
    def of(rows: Iterable[tuple[int, int, int]]) -> Echantillon:
        """The sample of demandes given as ``(evites, pilotage, corrections)`` (tokens)."""
        n = e = p = c = ee = cc = ec = nn = 0
        for evites, pilotage, corrections in rows:  # local sums: no object per demande
            net = evites - pilotage - corrections
            n += 1
            e += evites
            p += pilotage
            c += corrections
            ee += evites * evites
            cc += corrections * corrections
            ec += evites * corrections
            nn += net * net
        return Echantillon(n, e, p, c, ee, cc, ec, nn)

    def __add__(self, other: Echantillon) -> Echantillon:
        return Echantillon(*(a + b for a, b in zip(astuple(self), astuple(other), strict=True)))

    def __sub__(self, other: Echantillon) -> Echantillon:
        return Echantillon(*(a - b for a, b in zip(astuple(self), astuple(other), strict=True)))

    @property
    def net(self) -> int:
        """evites - pilotage - corrections, tokens."""
        return self.evites - self.pilotage - self.corrections

    @property
    def corrections_effectives(self) -> Fraction:
        """How many equal corrections would carry the corrections' sum as unevenly as
        these do: (Σc)²/Σc² (Kish's effective count; k when k demandes have the same
        correction, about 1 when one carries the sum). 0 without corrections. The taux
        interval's gamma shape and the taux verdicts' hold read it (ADR-0081)."""
        if self.corrections_squared <= 0:
            return Fraction(0)
        return Fraction(self.corrections * self.corrections, self.corrections_squared)
