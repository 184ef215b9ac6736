"""Price files the tests read (docs/formulas.md, "Prices you set"; ADR-0131, ADR-0162):
one text each, so their line numbers are stated once."""

from __future__ import annotations

import pytest

from miam_economies.domain.tarifs_fichier import TarifsError, lire

SONNET = """\
# USD per million tokens
reference = "claude-sonnet-4-5"

[modeles.claude-sonnet-4-5]
input = 3
output = 15
cache_write = 3.75
cache_read = 0.30
"""
"""A valid file of one model, the reference: line 8 is its cache_read."""

TYPO = SONNET + """
[modeles."claude-opus-41"]
input = 15
output = 75
cache_write = 18.75
cache_read = 1.50
"""
"""The newcomer's file: Opus 4.1 misspelt, its table at line 10."""


def refused(text: str, name: str = "prix.toml") -> TarifsError:
    """The ``TarifsError`` reading ``text`` as the file ``name`` raises (the test fails
    when it raises none)."""
    with pytest.raises(TarifsError) as caught:
        lire(text.encode(), name)
    return caught.value
