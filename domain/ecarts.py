"""From pairs' differences to verdicts: Holm's step-down, the intervals drawn at each
step's level, and the claims held back (pure; SPEC, "Ranking presets: the classement";
ADR-0081). ``domain.comparaisons`` and ``domain.appariees`` form the pairs' ``Ecart``s;
this module judges them all alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from miam_economies.domain.intervalles import Intervalle
from miam_economies.domain.quantiles import t_quantile, t_two_sided

NIVEAU_VERDICT = 0.99
"""The family-wise confidence of the verdicts and of their intervals, two-sided: where
nothing differs, any verdict of a classement is wrong at most 1 - 0.99 = 1 % of the time,
the SPEC's target, and a claim between two groups that do differ names the wrong one at
most 0.5 % of the time (95 % would allow 5 % and 2.5 %; ADR-0081)."""

MIN_CORRECTIONS = 3
"""Effective corrections, (Σc)²/Σc² (``Echantillon.corrections_effectives``), each group
needs before a taux verdict: fewer, and the sample cannot tell rare large reworks from
none (ADR-0081)."""


@dataclass(frozen=True, slots=True)
class Comparaison:
    """One pair's verdict, the SPEC's fields: ``a`` ranked above ``b``; ``difference`` =
    the criterion of a minus that of b (tokens per demande, or a taux); ``intervalle`` its
    interval at ``NIVEAU_VERDICT`` adjusted for the number of pairs (a bound None where the
    data cannot give it); ``verdict``; ``raison`` (why a claim is held back, else None);
    ``taches`` the common tasks of a paired comparison (None otherwise)."""

    a: str
    b: str
    difference: float | None
    intervalle: Intervalle | None
    verdict: str
    raison: str | None
    taches: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """The wire shape: the fields in order, the interval a list, ``taches`` only for a
        paired comparison."""
        out: dict[str, Any] = {"a": self.a, "b": self.b, "difference": self.difference,
                               "intervalle": None if self.intervalle is None
                               else list(self.intervalle),
                               "verdict": self.verdict, "raison": self.raison}
        if self.taches is not None:
            out["taches"] = self.taches
        return out


@dataclass(frozen=True, slots=True)
class Ecart:
    """A pair before Holm: ``difference`` (a - b) and its standard error ``se``, ``df``
    degrees of freedom; ``hold`` the reason no claim may be made (None: none);
    ``open_low``/``open_high`` the bounds the data cannot give; ``unfloored`` the
    (se, df) the pair would have without the size floor, when the floor bound, and
    ``floor_note`` the reason to give if the floor alone holds a claim back;
    ``measured`` False when there is no spread to judge by (no interval); ``taches`` the
    common tasks of a paired comparison."""

    a: str
    b: str
    difference: float | None
    se: float = 0.0
    df: int = 1
    hold: str | None = None
    open_low: bool = False
    open_high: bool = False
    unfloored: tuple[float, int] | None = None
    floor_note: str | None = None
    measured: bool = True
    taches: int | None = None


def unmeasured(a: str, b: str, difference: float | None, why: str,
               taches: int | None = None) -> Ecart:
    """A pair with nothing to judge its difference by: no interval, judged last."""
    return Ecart(a, b, difference, hold=why, measured=False, taches=taches)


def taux_hold(cle: str, corrections: float, effectives: float, where: str = ""
              ) -> tuple[str | None, bool]:
    """Why group ``cle`` holds a taux claim back, and whether its taux has no upper bound:
    no correction yet (unbounded), or fewer than ``MIN_CORRECTIONS`` effective ones."""
    if corrections == 0:
        return f"no correction yet in {cle}{where}", True
    if effectives < MIN_CORRECTIONS:
        return (f"too few corrections in {cle}{where} to bound its taux_reprise (fewer than "
                f"{MIN_CORRECTIONS} equal ones)"), False
    return None, False


def holm(ecarts: Sequence[Ecart], selon: str) -> list[Comparaison]:
    """Holm's step-down over the pairs, in their order: the pair of smallest p-value is
    judged at level α/m, the next at α/(m - 1)... (α = 1 - ``NIVEAU_VERDICT``); at the
    first pair not separated the steps stop, and it and every later pair are judged, and
    their intervals drawn, at its level, so the intervals are compatible with the steps
    (not simultaneous). A pair held back, or without a spread, is judged last (p = 1):
    it never opens a looser level for the others. A pair is claimed exactly when its
    interval excludes 0 and no ``hold`` stands."""
    alpha, m = 1 - NIVEAU_VERDICT, len(ecarts)
    order = sorted(range(m), key=lambda i: (_p_value(ecarts[i]), i))
    out: list[Comparaison | None] = [None] * m
    stopped_at: int | None = None
    for step, i in enumerate(order):
        ecart = ecarts[i]
        k = m - step if stopped_at is None else stopped_at
        level = 1 - alpha / (2 * k)
        bounds = _bounds(ecart, ecart.se, ecart.df, level)
        separated = (stopped_at is None and bounds is not None
                     and (bounds[0] > 0 or bounds[1] < 0))
        if stopped_at is None and not separated:
            stopped_at = k
        out[i] = _verdict(ecart, bounds, separated, level, selon)
    return [c for c in out if c is not None]


def _p_value(ecart: Ecart) -> float:
    if not ecart.measured or ecart.hold is not None or ecart.difference is None:
        return 1.0
    return t_two_sided(ecart.difference / ecart.se, ecart.df)


def _bounds(ecart: Ecart, se: float, df: int, level: float) -> tuple[float, float] | None:
    if not ecart.measured or ecart.difference is None:
        return None
    half = t_quantile(level, df) * se
    return ecart.difference - half, ecart.difference + half


def _verdict(ecart: Ecart, bounds: tuple[float, float] | None, separated: bool,
             level: float, selon: str) -> Comparaison:
    intervalle: Intervalle | None = None
    if bounds is not None:
        intervalle = (None if ecart.open_low else bounds[0],
                      None if ecart.open_high else bounds[1])
    verdict, raison = "indiscernable", ecart.hold
    if separated and raison is None:
        assert bounds is not None
        a_ahead = bounds[0] > 0 if selon == "net" else bounds[1] < 0
        verdict = "a_devant" if a_ahead else "b_devant"
    elif raison is None and ecart.unfloored is not None:
        unfloored = _bounds(ecart, *ecart.unfloored, level)
        if unfloored is not None and (unfloored[0] > 0 or unfloored[1] < 0):
            raison = ecart.floor_note
    return Comparaison(ecart.a, ecart.b, ecart.difference, intervalle, verdict, raison,
                       ecart.taches)
