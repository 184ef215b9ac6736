"""Which representation an ``Accept`` header asks of a breakdown route (ADR-0134; RFC
9110, section 12.5.1): CSV only when it prefers ``text/csv`` to ``application/json``."""

from __future__ import annotations

import pytest

from miam_economies.api.http.representation import prefers_csv


@pytest.mark.parametrize("accept", [
    "text/csv",
    "text/csv; charset=utf-8",
    "TEXT/CSV",
    "text/csv, */*",  # equal weight: the exact range beats the wildcard
    "text/*, application/json;q=0.9",
    "application/json;q=0.5, text/csv",
    "text/csv;q=0.8, application/json;q=0.7",
    "application/json;q=0, text/csv;q=0.001",
    "*/*;q=0.1, text/csv;q=0.2",
])
def test_a_header_preferring_csv_gets_csv(accept: str) -> None:
    assert prefers_csv(accept)


@pytest.mark.parametrize("accept", [
    "",
    "*/*",
    "application/json",
    "text/html",  # neither: the default, JSON
    "text/csv, application/json",  # a tie: the default
    "text/csv;q=0.5, */*",
    "text/csv;q=0",
    "text/csv;q=0, */*",
    "text/*;q=0.9, application/json",
    "text/csv;q=2",  # not a qvalue: the range is left out
    "text/csv;q=abc",
    "text/csv;q=0.5, application/*",
])
def test_any_other_header_keeps_json(accept: str) -> None:
    assert not prefers_csv(accept)
