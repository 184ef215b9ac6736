"""The contract's formulas, and the named formulas the projections fold events with.

All figures are Claude tokens (integers). Sources: contract ``000_*.txt``, "Calcul des
estimations" (``evites_serveur``), "Calcul du coût" (``cout_pilotage``), "Événement
correction" (``cout_correction``). Rounding follows JavaScript's ``Math.round``
(ADR-0005).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction

from miam_economies.domain import tarifs, tarifs_v2
from miam_economies.domain.catalogue import Catalogue
from miam_economies.domain.events import Correction, Delegation, Pilotage, Usage


def js_round_div(numerator: int, denominator: int) -> int:
    """``Math.round(numerator / denominator)`` in exact integer arithmetic.

    JavaScript rounds halves toward +infinity (``Math.round(2.5) == 3``,
    ``Math.round(-2.5) == -2``), unlike Python's ``round`` (banker's). ``denominator`` > 0.
    Raises ``ZeroDivisionError`` for a zero denominator.
    """
    return (2 * numerator + denominator) // (2 * denominator)


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
class Prix:
    """The price table a weighted formula is defined on, as its figures' provenance:
    ``catalogue`` (USD per million tokens, exact), ``source`` (where the table comes from,
    in words) and, for a table a user set from a file, the file's ``sha256`` (hex) and
    name (``fichier``; ADR-0131). One weighted token is one input token of the
    catalogue's reference model, so it is worth ``usd_par_million`` / 10^6 USD
    (ADR-0130)."""

    catalogue: Catalogue
    source: str
    sha256: str | None = None
    fichier: str | None = None

    @property
    def reference(self) -> str:
        """The reference model: its input token is the weighted figures' unit."""
        return self.catalogue.reference

    @property
    def usd_par_million(self) -> Fraction:
        """USD per million weighted tokens: the reference model's input price, exact."""
        return self.catalogue.tarifs[self.catalogue.reference].input


@dataclass(frozen=True)
class Formule:
    """A named, versioned accounting formula: pure functions of one stored event, tokens.

    ``evites(delegation)``, ``cout_pilotage(pilotage)`` and ``cout_correction(correction)``
    give the three figures the projections fold (SPEC, "Replay after a formula change").
    ``prix``: the price table of a weighted formula (``pondere-*`` and the user's), whose
    figures then have a value in USD (ADR-0130); None for the contract's token counts.
    """

    name: str
    evites: Callable[[Delegation], int]
    cout_pilotage: Callable[[Pilotage], int]
    cout_correction: Callable[[Correction], int]
    prix: Prix | None = None


def counts_serveur(d: Delegation) -> tuple[int, int, int]:
    """(lus, ecrits, rendus) of a delegation recomputed from its raw counters, tokens:
    lus = max(0, tokens_entree - consigne), ecrits = tokens_sortie, rendus = ecrits for
    ``complet`` (the plugin's ``rendus`` for ``apercu``: the answer's length is not sent).
    Source: contract, "Calcul des estimations"."""
    lus = max(0, d.tokens_entree - d.estimation.consigne)
    ecrits = d.tokens_sortie
    return lus, ecrits, ecrits if d.retour == "complet" else d.estimation.rendus


def evites_serveur(d: Delegation) -> int:
    """The delegation's evites recomputed from its raw counters, tokens (contract,
    "Calcul des estimations"): lus = max(0, entree - consigne), ecrits = sortie, rendus =
    ecrits for ``complet`` (the plugin's ``rendus`` for ``apercu``: the answer's length is
    not sent), and the consigne and the reading count only without a subagent (agent_id
    null). The consigne's length is not sent either: the plugin's ``consigne`` is used."""
    return evites_of_counts(d, *counts_serveur(d))


def evites_of_counts(d: Delegation, lus: int, ecrits: int, rendus: int) -> int:
    """``evites_serveur`` of ``d`` from its ``counts_serveur`` already computed, tokens
    (the anomaly check needs both: ADR-0062)."""
    if d.agent_id is not None:
        return lus + ecrits
    return lus + ecrits - (d.estimation.consigne + rendus)


V1 = Formule(
    name="v1",
    evites=lambda d: d.estimation.evites,
    cout_pilotage=lambda p: p.cout,
    cout_correction=lambda c: c.cout,
)
"""The contract as it stands: the figures exactly as the plugin sent them."""

V1_SERVEUR = Formule(
    name="v1-serveur",
    evites=evites_serveur,
    cout_pilotage=lambda p: cout_pilotage(p.usage),
    cout_correction=lambda c: cout_correction(c.tokens_lus, c.tokens_ecrits),
)
"""The contract's own formulas, recomputed by the server from the raw counters."""


@dataclass(frozen=True)
class PoidsEntiers:
    """A catalogue's ``ratios`` over a common ``denominateur``: a weighted sum is then an
    integer numerator, rounded once by ``js_round_div``, exactly as the fractions would be
    (ADR-0005) and about 5x cheaper than ``Fraction`` arithmetic on every folded event."""

    denominateur: int
    input: int
    output: int
    cache_write: int
    cache_read: int

    def arrondi(self, input: int = 0, output: int = 0, cache_write: int = 0,
                cache_read: int = 0) -> int:
        """``Math.round`` of the tokens weighed by these ratios, tokens."""
        return js_round_div(input * self.input + output * self.output
                            + cache_write * self.cache_write + cache_read * self.cache_read,
                            self.denominateur)


@functools.lru_cache(maxsize=512)
def poids(modele: str | None, catalogue: Catalogue = tarifs.CATALOGUE) -> PoidsEntiers:
    """``catalogue.ratios(modele)`` (default: ``pondere-v1``'s table, ``domain.tarifs``) as
    integers over their least common denominator (cached: a table is constant, and a
    model name recurs on every pilotage)."""
    w = catalogue.ratios(modele)
    weights = (w.input, w.output, w.cache_write, w.cache_read)
    denominator = math.lcm(*(f.denominator for f in weights))
    return PoidsEntiers(denominator, *(int(f * denominator) for f in weights))


def pondere(name: str, catalogue: Catalogue, source: str, sha256: str | None = None,
            fichier: str | None = None) -> Formule:
    """The weighted formula ``name`` on the price table ``catalogue``: tokens weighted by
    kind and by model, in input tokens of the catalogue's reference model (contract,
    "Limites de l'estimation": a written token costs more than a read one, a Haiku token is
    not an Opus token), from the raw counters as ``v1-serveur`` recomputes them. A pilotage
    weighs at its model's prices (an unknown model as the reference model); delegations
    and corrections, whose Claude model is not sent, at the reference model's (output 5x,
    cache write 1.25x, cache read 0.1x for ``claude-sonnet-4-5``). One name, one table
    (ADR-0009). ``source``, ``sha256``, ``fichier``: the table's provenance (``Prix``)."""
    reference = poids(None, catalogue)

    def evites(d: Delegation) -> int:
        # Claude would have read the input (input tokens) and written the output (output
        # tokens); without a subagent it also writes the consigne and reads the answer
        # back. The counts are recomputed from the raw counters, as v1-serveur does.
        lus, ecrits, rendus = counts_serveur(d)
        if d.agent_id is None:
            return reference.arrondi(input=lus - rendus, output=ecrits - d.estimation.consigne)
        return reference.arrondi(input=lus, output=ecrits)

    def cout_pilotage(p: Pilotage) -> int:
        u = p.usage
        return poids(p.modele, catalogue).arrondi(
            u.input_tokens, u.output_tokens, u.cache_creation_input_tokens,
            u.cache_read_input_tokens)

    def cout_correction(c: Correction) -> int:
        return reference.arrondi(input=c.tokens_lus, output=c.tokens_ecrits)

    return Formule(name=name, evites=evites, cout_pilotage=cout_pilotage,
                   cout_correction=cout_correction,
                   prix=Prix(catalogue, source, sha256, fichier))


PONDERE = pondere("pondere-v1", tarifs.CATALOGUE,
                  "Anthropic's price list as known on 2025-11-24 (domain.tarifs)")
"""Weighted on ``domain.tarifs`` (Anthropic's prices as known on 2025-11-24, the 4.5
models and older): frozen, replay reproducible. Models it does not list, such as the
contract's ``claude-haiku-5-5``, weigh as ``claude-sonnet-4-5``."""

PONDERE_V2 = pondere("pondere-v2", tarifs_v2.CATALOGUE,
                     f"genai-prices {tarifs_v2.GENAI_PRICES}, prices in force on "
                     f"{tarifs_v2.PRIX_AU} (domain.tarifs_v2)")
"""Weighted on ``domain.tarifs_v2``, generated from the ``genai-prices`` catalogue (its
version and day in that module), base rates only (ADR-0071)."""

FORMULES: Mapping[str, Formule] = {f.name: f for f in (V1, V1_SERVEUR, PONDERE, PONDERE_V2)}
"""Registry of formulas by name (ADR-0009). A formula's name is its version: changing one
means adding a new name, never editing a registered one."""
