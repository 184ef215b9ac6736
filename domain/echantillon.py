"""A group's sample: the exact sums over its demandes, and over its sessions, that every
figure, interval and verdict of the classement is computed from (pure; ADR-0073,
ADR-0166).

The unit is a demande whose delegation has arrived, with the per-demande view's figures
(tokens): its delegation's ``evites``, its pilotage share, its corrections, and
``net = evites - pilotage - corrections``. A demande belongs to its delegation's session
(``session_id``): the demandes of one Claude Code session share a repository, a difficulty
and a subagent's turns, so the variances of the classement are taken over sessions
(cluster-robust, ADR-0166), from the sums of each session's totals' squares and products.
Sums add, so a projection keeps them incrementally and reads a classement without the
demandes; they stay exact ints at any size (ADR-0051), and only ratios and intervals are
floats, computed at read time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

Row = tuple[int, int, int]
"""One demande's ``(evites, pilotage, corrections)``, tokens."""


@dataclass(frozen=True, slots=True)
class Echantillon:
    """The exact sums over one group's demandes and sessions (tokens; squares in tokens²).

    Per demande: ``demandes`` counts them; ``evites``, ``pilotage`` and ``corrections``
    sum their figures; ``evites_squared``, ``corrections_squared``,
    ``evites_times_corrections`` and ``net_squared`` sum e², c², e·c and (e - p - c)².

    Per session (each session's totals n_s, E_s, C_s, net_s over the group's demandes of
    that session): ``sessions`` counts the sessions with a demande; ``session_demandes_squared``
    sums n_s², ``session_net_squared`` net_s², ``session_demandes_times_net`` n_s·net_s,
    ``session_evites_squared`` E_s², ``session_corrections_squared`` C_s² and
    ``session_evites_times_corrections`` E_s·C_s, and for the net's leverage correction
    (ADR-0175) ``session_demandes_cubed`` n_s³, ``session_demandes_squared_times_net``
    n_s²·net_s and ``session_demandes_times_net_squared`` n_s·net_s². Where every
    session holds one demande, these equal the per-demande sums (and the classement
    today's per-demande answer).

    ``a + b`` is the sample of both groups when they share no session; ``a - b`` takes
    ``b``'s demandes out again when they are whole sessions of ``a``. A projection, whose
    sessions gain demandes one at a time, replaces a session's contribution instead
    (``session_sums_of`` of its totals after, minus before: ADR-0166).
    """

    demandes: int = 0
    evites: int = 0
    pilotage: int = 0
    corrections: int = 0
    evites_squared: int = 0
    corrections_squared: int = 0
    evites_times_corrections: int = 0
    net_squared: int = 0
    sessions: int = 0
    session_demandes_squared: int = 0
    session_net_squared: int = 0
    session_demandes_times_net: int = 0
    session_evites_squared: int = 0
    session_corrections_squared: int = 0
    session_evites_times_corrections: int = 0
    session_demandes_cubed: int = 0
    session_demandes_squared_times_net: int = 0
    session_demandes_times_net_squared: int = 0

    @staticmethod
    def demande(evites: int, pilotage: int, corrections: int) -> Echantillon:
        """The sample of one demande with these figures (tokens), alone in its session."""
        return Echantillon.of_sessions([[(evites, pilotage, corrections)]])

    @staticmethod
    def sums_of(evites: int, pilotage: int, corrections: int) -> tuple[int, ...]:
        """The eight per-demande sums of one demande with these figures, in field order,
        as a plain tuple: what a projection adds per demande without building a sample
        object (its session's sums: ``session_sums_of``)."""
        net = evites - pilotage - corrections
        return (1, evites, pilotage, corrections, evites * evites,
                corrections * corrections, evites * corrections, net * net)

    @staticmethod
    def session_sums_of(demandes: int, evites: int, pilotage: int, corrections: int
                        ) -> tuple[int, ...]:
        """The ten per-session sums (``sessions`` ...
        ``session_demandes_times_net_squared``, in field order) of one session whose
        demandes in the group total these figures (tokens): all 0 for a session without a
        demande."""
        if demandes == 0:
            return (0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        net = evites - pilotage - corrections
        squared = demandes * demandes
        return (1, squared, net * net, demandes * net, evites * evites,
                corrections * corrections, evites * corrections, squared * demandes,
                squared * net, demandes * net * net)

    @staticmethod
    def of(rows: Iterable[Row]) -> Echantillon:
        """The sample of demandes given as ``(evites, pilotage, corrections)`` (tokens),
        each in a session of its own (independent demandes)."""
        return Echantillon.of_sessions([row] for row in rows)

    @staticmethod
    def of_sessions(sessions: Iterable[Iterable[Row]]) -> Echantillon:
        """The sample of demandes given session by session: each item the
        ``(evites, pilotage, corrections)`` of one session's demandes (tokens)."""
        sums = [0] * len(Echantillon.__slots__)
        for session in sessions:
            n = e = p = c = 0
            for evites, pilotage, corrections in session:
                for i, value in enumerate(Echantillon.sums_of(evites, pilotage, corrections)):
                    sums[i] += value
                n += 1
                e += evites
                p += pilotage
                c += corrections
            for i, value in enumerate(Echantillon.session_sums_of(n, e, p, c), start=8):
                sums[i] += value
        return Echantillon(*sums)

    def sums(self) -> tuple[int, ...]:
        """The eighteen sums in field order (``dataclasses.astuple`` copies each value
        deeply, a hundred times slower: the classement's read adds samples by day)."""
        return tuple(getattr(self, name) for name in self.__slots__)

    @staticmethod
    def total(samples: Iterable[Echantillon]) -> Echantillon:
        """The sum of ``samples`` (see ``+``); the empty sample for none."""
        acc = [0] * len(Echantillon.__slots__)
        for e in samples:
            for i, name in enumerate(Echantillon.__slots__):
                acc[i] += getattr(e, name)
        return Echantillon(*acc)

    def __add__(self, other: Echantillon) -> Echantillon:
        return Echantillon(*(a + b for a, b in zip(self.sums(), other.sums(), strict=True)))

    def __sub__(self, other: Echantillon) -> Echantillon:
        return Echantillon(*(a - b for a, b in zip(self.sums(), other.sums(), strict=True)))

    @property
    def net(self) -> int:
        """evites - pilotage - corrections, tokens."""
        return self.evites - self.pilotage - self.corrections

    @property
    def sessions_effectives(self) -> float:
        """How many equal sessions would weigh on the mean per demande as these do:
        n²/Σn_s² (Kish's effective count, each demande weighing alike); S when the
        sessions hold as many demandes each, 1 when one holds nearly all, n when each holds
        one. The net's degrees of freedom are counted in these: a few long sessions
        among many short ones tell less than their number (ADR-0171). 0 without a
        demande."""
        if self.session_demandes_squared <= 0:
            return 0.0
        return min(self.sessions, self.demandes * self.demandes / self.session_demandes_squared)

    @property
    def corrections_effectives(self) -> Fraction:
        """How many equal corrections would carry the corrections' sum as unevenly as
        these do, counted over sessions: (ΣC)²/ΣC_s² (Kish's effective count, each
        session's corrections one; k when k sessions have the same corrections, about 1
        when one carries the sum; never more than the per-demande count, since
        corrections are never negative). 0 without corrections. The taux interval's gamma
        shape and the taux verdicts' hold read it (ADR-0081, ADR-0166)."""
        squares = max(self.corrections_squared, self.session_corrections_squared)
        if squares <= 0:
            return Fraction(0)
        return Fraction(self.corrections * self.corrections, squares)
