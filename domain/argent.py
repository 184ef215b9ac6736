"""Weighted tokens in US dollars, as exact decimal text (pure; ADR-0130).

A figure of a weighted formula (``pondere-*``, or one on a user's price file) counts input
tokens of the formula's reference model, so it is worth ``tokens * usd_par_million /
10^6`` USD. A price is a decimal (``Tarif.of`` reads it from its text, a price file from
its digits), so that product is a decimal with finitely many digits: it is written out
whole, never rounded and never a binary float. Money leaves this module as text
(``"12.345678"``), which JSON, CSV and a spreadsheet all carry without loss.
"""

from __future__ import annotations

from fractions import Fraction

MIN_DECIMALS = 2
"""Digits after the point at least (``"36.00"``, not ``"36"``): the cents of a sum."""


def decimal_text(value: Fraction) -> str:
    """``value`` written in decimal, exactly: at least ``MIN_DECIMALS`` digits after the
    point, more as it needs, no exponent (``Fraction(3, 1_000_000)`` ->
    ``"0.000003"``). Raises ``ValueError`` for a value with no finite decimal expansion
    (a denominator with a prime factor other than 2 and 5)."""
    denominator = value.denominator
    twos = fives = 0
    while denominator % 2 == 0:
        denominator //= 2
        twos += 1
    while denominator % 5 == 0:
        denominator //= 5
        fives += 1
    if denominator != 1:
        raise ValueError(f"{value} has no finite decimal expansion")
    places = max(twos, fives, MIN_DECIMALS)
    scaled = value * 10**places
    assert scaled.denominator == 1
    digits = str(abs(scaled.numerator)).rjust(places + 1, "0")
    sign = "-" if scaled.numerator < 0 else ""
    return f"{sign}{digits[:-places]}.{digits[-places:]}"


def usd(tokens: int, usd_par_million: Fraction) -> str:
    """What ``tokens`` weighted tokens are worth at ``usd_par_million`` (USD per million
    reference input tokens), as exact decimal text (``decimal_text``): ``usd(12_000_000,
    Fraction(3))`` -> ``"36.00"``. Raises ``ValueError`` for a price that is no decimal
    (a price file or ``Tarif.of`` never gives one)."""
    return decimal_text(tokens * usd_par_million / 1_000_000)


def dollars(text: str | None) -> str:
    """An exact amount (decimal text, as ``usd`` writes it: ``"-1234.017871"``) as a person
    reads it: ``"-$1,234.017871"``, every digit kept; ``"-"`` for None. The report and the
    ``bilan`` command print amounts so."""
    if text is None:
        return "-"
    sign, digits = ("-", text[1:]) if text.startswith("-") else ("", text)
    whole, _, decimals = digits.partition(".")
    return f"{sign}${int(whole):,}.{decimals}"


def usd_rounded(value: Fraction, usd_par_million: Fraction) -> str:
    """``value`` weighted tokens (a mean: not an integer) in USD rounded half up to the
    micro-dollar, as decimal text (``decimal_text``: ``"0.000123"``): for the classement's
    net per demande and its interval, which no finite decimal need express exactly."""
    micro = value * usd_par_million
    return decimal_text(Fraction((2 * micro.numerator + micro.denominator)
                                 // (2 * micro.denominator), 1_000_000))
