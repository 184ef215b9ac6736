"""The contract's formulas, and the named formulas the projections fold events with.

All figures are Claude tokens (integers). Sources: contract ``000_*.txt``, "Calcul des
estimations" (``estimer``), "Calcul du coût" (``cout_pilotage``), "Événement correction"
(``cout_correction``). Rounding follows JavaScript's ``Math.round`` (ADR-0005).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from domain.events import Correction, Delegation, Estimation, Pilotage, Usage


def js_round_div(numerator: int, denominator: int) -> int:
    """``Math.round(numerator / denominator)`` in exact integer arithmetic.

    JavaScript rounds halves toward +infinity (``Math.round(2.5) == 3``,
    ``Math.round(-2.5) == -2``), unlike Python's ``round`` (banker's). ``denominator`` > 0.
    Raises ``ZeroDivisionError`` for a zero denominator.
    """
    return (2 * numerator + denominator) // (2 * denominator)


def ceil_div(numerator: int, denominator: int) -> int:
    """``Math.ceil(numerator / denominator)`` in exact integer arithmetic (denominator > 0)."""
    return -(-numerator // denominator)


def estimer(*, tokens_entree: int, tokens_sortie: int, longueur_consigne: int,
            longueur_reponse: int, retour: str, par_subagent: bool,
            methode: str = "caracteres/4") -> Estimation:
    """The plugin's ``estimer``: what one delegation saves Claude, in tokens.

    ``longueur_*`` are lengths in characters (4 characters a token). ``consigne`` =
    ceil(len/4); ``lus`` = max(0, entree - consigne); ``ecrits`` = sortie; ``rendus`` =
    ceil(len(reponse)/4) for ``"apercu"`` else ecrits; ``evites`` = lus + ecrits -
    (consigne + rendus) for the main agent, lus + ecrits under a subagent (whose pilotage
    already pays the consigne and the reading). Not bounded below.
    """
    consigne = ceil_div(longueur_consigne, 4)
    lus = max(0, tokens_entree - consigne)
    ecrits = tokens_sortie
    rendus = ceil_div(longueur_reponse, 4) if retour == "apercu" else ecrits
    evites = lus + ecrits if par_subagent else lus + ecrits - (consigne + rendus)
    return Estimation(lus, ecrits, consigne, rendus, evites, methode)


def cout_pilotage(usage: Usage) -> int:
    """Pilotage cost of one subagent turn, tokens.

    input + cache_creation + output + Math.round(cache_read / 10): a cache read costs a
    tenth of an input token (contract, "Calcul du coût"; ADR-0005 for the rounding).
    """
    return (usage.input_tokens + usage.cache_creation_input_tokens + usage.output_tokens
            + js_round_div(usage.cache_read_input_tokens, 10))


def cout_correction(tokens_lus: int, tokens_ecrits: int) -> int:
    """Correction cost of one tool call by the main agent, tokens: lus + ecrits.

    Source: contract, "Événement correction" (``cout`` = tokens_lus + tokens_ecrits).
    """
    return tokens_lus + tokens_ecrits


@dataclass(frozen=True)
class Formule:
    """A named, versioned accounting formula: pure functions of one stored event, tokens.

    ``evites(delegation)``, ``cout_pilotage(pilotage)`` and ``cout_correction(correction)``
    give the three figures the projections fold (SPEC, "Replay after a formula change").
    """

    name: str
    evites: Callable[[Delegation], int]
    cout_pilotage: Callable[[Pilotage], int]
    cout_correction: Callable[[Correction], int]


V1 = Formule(
    name="v1",
    evites=lambda d: d.estimation.evites,
    cout_pilotage=lambda p: p.cout,
    cout_correction=lambda c: c.cout,
)
"""The contract as it stands: the figures exactly as the plugin sent them."""

FORMULES: Mapping[str, Formule] = {V1.name: V1}
"""Registry of formulas by name; later formulas are added here (issue 4)."""
