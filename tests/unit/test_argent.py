"""Weighted tokens in USD, exact decimal text (``domain.argent``; ADR-0130), and the
contract's example under ``pondere-v2`` in USD, computed by hand."""

from __future__ import annotations

from decimal import Decimal, localcontext
from fractions import Fraction
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from miam_economies.api.service.answers import bilan_answer, en_usd, prix_answer
from miam_economies.api.service.results import BilanLu
from miam_economies.domain.argent import decimal_text, dollars, usd, usd_rounded
from miam_economies.domain.events import from_payload
from miam_economies.domain.formulas import PONDERE_V2, V1
from miam_economies.projections.delta import PageDelta
from miam_economies.projections.view import BilanSnapshot
from tests.conftest import EXAMPLE_BATCH, EXAMPLE_CORRECTION

# Prices as a price list writes them: USD per million tokens, a few decimals.
prices = st.decimals(min_value=0, max_value=1000, places=4, allow_nan=False)


def by_decimal(tokens: int, price: Decimal) -> str:
    """The same product in ``decimal`` arithmetic with precision to spare."""
    with localcontext() as ctx:
        ctx.prec = 200
        return format(Decimal(tokens) * price / Decimal(1_000_000), "f")


@given(st.integers(min_value=-(2**80), max_value=2**80), prices)
def test_usd_is_the_exact_product_whatever_the_size(tokens: int, price: Decimal) -> None:
    text = usd(tokens, Fraction(price))
    assert Decimal(text) == Decimal(by_decimal(tokens, price))
    assert "e" not in text.lower() and len(text.split(".")[1]) >= 2


def test_decimal_text_examples() -> None:
    assert usd(12_000_000, Fraction(3)) == "36.00"
    assert usd(1, Fraction(3)) == "0.000003"
    assert usd(-7, Fraction("0.8")) == "-0.0000056"
    assert usd(0, Fraction(3)) == "0.00"
    assert decimal_text(Fraction(-1, 8)) == "-0.125"
    with pytest.raises(ValueError):
        decimal_text(Fraction(1, 3))
    assert dollars("-1234.017871") == "-$1,234.017871" and dollars("0.000279") == "$0.000279"
    assert dollars(None) == "-"


def test_a_mean_is_rounded_half_up_to_the_micro_dollar() -> None:
    assert usd_rounded(Fraction(10, 3), Fraction(3)) == "0.00001"  # 10 micro-dollars
    assert usd_rounded(Fraction(1, 6), Fraction(3)) == "0.000001"  # 0.5 -> 1
    assert usd_rounded(Fraction(-1, 6), Fraction(3)) == "0.00"  # -0.5 -> 0, halves up


def test_the_contract_example_under_pondere_v2_in_usd_by_hand() -> None:
    """By hand, at genai-prices' Claude Sonnet 4.5 (the reference: $3 per million input
    tokens, $15 per million output tokens) and Claude Haiku 5.5 ($0.10 input, $0.50
    output, $0.01 cache read, per million):

    * the delegation (a subagent's): 4,100 - 100 = 4,000 tokens read and 900 written,
      that Claude would have read and written: 4,000 x $3/M + 900 x $15/M = $0.0255,
      which is 8,500 reference tokens (4,000 + 900 x 5);
    * the pilotage, 800 input, 200 output, 10,000 cache-read Haiku tokens: 800 x 0.1 +
      200 x 0.5 + 10,000 x 0.01 = 280 micro-dollars, 93.33 reference tokens, rounded per
      event to 93 (ADR-0005), so the figure is worth 93 x $3/M = $0.000279;
    * the correction, 490 tokens written by the main agent (Sonnet): 490 x $15/M =
      $0.00735 (2,450 reference tokens);
    * net: 0.0255 - 0.000279 - 0.00735 = $0.017871.
    """
    delta = PageDelta(PONDERE_V2, ZoneInfo("UTC"))
    for payload in [*EXAMPLE_BATCH["evenements"], EXAMPLE_CORRECTION]:
        delta.add(from_payload(payload))
    figures = delta.clients["claude-code"]
    assert (figures.evites, figures.pilotage, figures.corrections) == (8500, 93, 2450)
    assert PONDERE_V2.prix is not None
    assert en_usd(figures, PONDERE_V2.prix.usd_par_million) == {
        "evites": "0.0255", "pilotage": "0.000279", "corrections": "0.00735",
        "net": "0.017871"}
    assert prix_answer(PONDERE_V2.prix) == {
        "modele_reference": "claude-sonnet-4-5", "usd_par_million": "3.00",
        "source": "genai-prices 0.2.3, prices in force on 2026-12-01 (domain.tarifs_v2)",
        "sha256": None}
    # The model's own cell keeps its cost at its own prices, unrounded: $0.00028.
    (cell,) = delta.modeles.values()
    assert cell.usd("claude-haiku-5-5") == 0.00028

    snapshot = BilanSnapshot("pondere-v2", 3, 3, dict(delta.clients), par="client",
                             groupes={"claude-code": {"claude-code": figures}})
    answer = bilan_answer(BilanLu(snapshot, 3, 3, "2026-12-03T00:00:00Z",
                                  prix=PONDERE_V2.prix))
    assert answer["total"]["en_usd"]["net"] == "0.017871"
    assert answer["economies"]["claude-code"]["en_usd"]["evites"] == "0.0255"
    assert answer["groupes"]["claude-code"]["claude-code"]["en_usd"]["net"] == "0.017871"
    assert answer["provenance"]["prix"]["modele_reference"] == "claude-sonnet-4-5"


def test_token_formulas_have_no_money() -> None:
    assert V1.prix is None
    snapshot = BilanSnapshot("v1", 0, 0, {})
    answer = bilan_answer(BilanLu(snapshot, 0, 0, "2026-12-03T00:00:00Z"))
    assert "en_usd" not in answer["total"] and "prix" not in answer["provenance"]
