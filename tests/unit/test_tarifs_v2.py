"""The generated price table ``domain.tarifs_v2`` and the formula ``pondere-v2`` (issue 15,
section 2; SPEC, "Prices"; ADR-0071).

The table must be exactly what ``scripts/tarifs.py`` writes from the installed
``genai-prices`` catalogue (in the ``test`` extra, so this never skips), and each of its
prices must be what the catalogue's own ``calc_price`` charges, checked through that
library's pricing path rather than the script's reading of its data classes.
"""

from __future__ import annotations

import copy
from datetime import UTC, date, datetime
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from genai_prices import Usage, calc_price
from genai_prices.data import providers

from miam_economies.domain import tarifs, tarifs_v2
from miam_economies.domain.bilan import FiguresModele
from miam_economies.domain.catalogue import Catalogue, Tarif
from miam_economies.domain.events import Pilotage, from_payload
from miam_economies.domain.formulas import FORMULES, PONDERE, PONDERE_V2, poids
from scripts import tarifs as script
from tests.conftest import EXAMPLE_BATCH

ANTHROPIC = next(p for p in providers if p.id == "anthropic")
AU = datetime.combine(date.fromisoformat(tarifs_v2.PRIX_AU), datetime.min.time(), UTC)


def test_the_checked_in_table_is_the_scripts_output() -> None:
    # Fails after a genai-prices upgrade or an edit by hand: run `make tarifs`, and freeze
    # a table that differs under a new formula name (ADR-0071).
    assert script.CIBLE.read_text(encoding="utf-8") == script.generer()


def test_the_table_records_its_source_version_and_day() -> None:
    from importlib.metadata import version

    assert version("genai-prices") == tarifs_v2.GENAI_PRICES
    assert script.PRIX_AU.isoformat() == tarifs_v2.PRIX_AU
    doc = tarifs_v2.__doc__ or ""
    assert f"version {tarifs_v2.GENAI_PRICES}" in doc and tarifs_v2.PRIX_AU in doc
    assert "sha256" in doc and "Base rates only" in doc


def _charged(name: str, **usage: int) -> Fraction:
    """What the catalogue's ``calc_price`` charges for ``usage`` of ``name``, USD."""
    price = calc_price(Usage(**usage), name, provider_id="anthropic",
                       genai_request_timestamp=AU)
    assert isinstance(price.total_price, Decimal)
    return Fraction(price.total_price)


@pytest.mark.parametrize("name", sorted(tarifs_v2.TARIFS))
def test_each_row_is_what_the_catalogue_charges_below_any_tier(name: str) -> None:
    # 1,000 tokens: far below any long-context tier (100,000 and up), so the base rate.
    # Anthropic's input_tokens count the cached tokens too, so a cache read of 1,000 is
    # priced as input 1,000 of which 1,000 read from the cache.
    row, per_thousand = tarifs_v2.TARIFS[name], Fraction(1000, 1_000_000)
    assert _charged(name, input_tokens=1000) == row.input * per_thousand
    assert _charged(name, output_tokens=1000) == row.output * per_thousand
    assert _charged(name, input_tokens=1000, cache_write_tokens=1000) == (
        row.cache_write * per_thousand)
    assert _charged(name, input_tokens=1000, cache_read_tokens=1000) == (
        row.cache_read * per_thousand)


def test_every_anthropic_model_of_the_catalogue_is_priced_but_those_without_cache_rates(
) -> None:
    priced = {m.id for m in ANTHROPIC.models
              if any(ANTHROPIC.find_model(n) is m for n in tarifs_v2.TARIFS)}
    left_out = {m.id for m in ANTHROPIC.models} - priced
    no_cache = {m.id for m in ANTHROPIC.models
                if m.get_prices(AU).cache_read_mtok is None}
    assert left_out == no_cache == {"claude-2", "claude-v1"}  # retired, no prompt caching
    assert len(priced) >= 25


def test_the_contracts_example_model_has_haiku_5_5_base_prices() -> None:
    # genai-prices 0.2.3, Claude Haiku 5.5: 0.10 in, 0.50 out, 0.125 cache write, 0.01
    # cache read per million tokens; 5x above 100,000 prompt tokens, which is dropped.
    expected = Tarif(Fraction(1, 10), Fraction(1, 2), Fraction(1, 8), Fraction(1, 100))
    assert tarifs_v2.CATALOGUE.tarif("claude-haiku-5-5") == expected
    assert tarifs_v2.CATALOGUE.tarif("claude-haiku-5-5-20261001") == expected
    assert tarifs.tarif("claude-haiku-5-5") is None  # pondere-v1's table is frozen


@pytest.mark.parametrize("modele", ["claude-opus-4-20250514", "claude-sonnet-4-5-20250929",
                                    "claude-opus-4-6", "claude-opus-5-latest",
                                    "claude-3-5-haiku-20241022", "claude-sonnet-4-6"])
def test_api_names_dated_or_not_find_their_row(modele: str) -> None:
    row = tarifs_v2.CATALOGUE.tarif(modele)
    assert row is not None
    catalogue_model = ANTHROPIC.find_model(modele)
    assert catalogue_model is not None
    assert _charged(modele, output_tokens=1000) == row.output * Fraction(1, 1000)


@pytest.mark.parametrize("modele", ["claude-mystery-9", "", "gpt-4o", "claude-haiku-5",
                                    "claude-haiku-5-5-5", "claude-haiku-5.5",
                                    "claude-2", "claude-sonnet-4-5-2025"])
def test_other_names_are_unknown(modele: str) -> None:
    assert tarifs_v2.CATALOGUE.tarif(modele) is None
    assert tarifs_v2.CATALOGUE.ratios(modele) == tarifs.RATIOS_PAR_DEFAUT


def test_prices_are_exact_fractions_and_names_are_api_names() -> None:
    for name, row in tarifs_v2.TARIFS.items():
        assert script._API_NAME.fullmatch(name), name
        for value in (row.input, row.output, row.cache_write, row.cache_read):
            assert type(value) is Fraction and value >= 0


def test_the_v2_reference_is_the_v1_reference_at_the_same_prices() -> None:
    assert tarifs_v2.REFERENCE == tarifs.REFERENCE == "claude-sonnet-4-5"
    assert tarifs_v2.TARIFS["claude-sonnet-4-5"] == tarifs.TARIFS["claude-sonnet-4-5"]


def test_a_catalogue_needs_a_priced_reference() -> None:
    with pytest.raises(ValueError, match="reference"):
        Catalogue({}, "claude-sonnet-4-5")


# --- pondere-v2 ---------------------------------------------------------------------------


def _pilotage(modele: str) -> Pilotage:
    payload: dict[str, Any] = copy.deepcopy(EXAMPLE_BATCH["evenements"][1])
    payload["modele"] = modele
    event = from_payload(payload)
    assert isinstance(event, Pilotage)
    return event


def test_pondere_v2_is_registered_beside_an_unchanged_pondere_v1() -> None:
    assert FORMULES["pondere-v2"] is PONDERE_V2
    assert FORMULES["pondere-v1"] is PONDERE
    # The example's pilotage, claude-haiku-5-5, unknown to pondere-v1's table: weighed as
    # claude-sonnet-4-5, 800 + 5 x 200 + 10,000 / 10.
    assert PONDERE.cout_pilotage(_pilotage("claude-haiku-5-5")) == 2800


def test_pondere_v2_weighs_the_examples_haiku_5_5_turn_at_its_list_prices() -> None:
    # By hand, from the list prices (USD per million tokens): Haiku 5.5 0.10 in, 0.50 out,
    # 0.01 cache read; unit: one Sonnet 4.5 input token, 3.00. The turn: 800 in, 200 out,
    # 10,000 cache read: (80 + 100 + 100) / 3 = 93.33..., rounded: 93.
    assert PONDERE_V2.cout_pilotage(_pilotage("claude-haiku-5-5")) == 93


def test_pondere_v2_weighs_an_unknown_model_as_the_reference_model() -> None:
    assert PONDERE_V2.cout_pilotage(_pilotage("claude-mystery-9")) == 2800
    assert poids("claude-mystery-9", tarifs_v2.CATALOGUE) == poids(None, tarifs_v2.CATALOGUE)


def test_pondere_v2_weighs_delegations_and_corrections_as_pondere_v1() -> None:
    delegation = from_payload(copy.deepcopy(EXAMPLE_BATCH["evenements"][0]))
    assert PONDERE_V2.evites(delegation) == PONDERE.evites(delegation) == 4000 + 5 * 900


def test_usd_comes_from_the_v2_table_and_stays_null_for_an_unknown_model() -> None:
    # The example's turn at Haiku 5.5's list prices: 800 x 0.10 + 200 x 0.50 + 10,000 x
    # 0.01 = 280 micro-dollars.
    turn = FiguresModele(1, 800, 200, 10_000, 0, 93)
    assert turn.usd("claude-haiku-5-5") == 0.00028
    assert turn.usd("claude-mystery-9") is None
