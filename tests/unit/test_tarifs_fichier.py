"""A user's price file (``domain.tarifs_fichier``; issue 24, point 2; ADR-0131): read
exactly, refused with the line and the field at fault, located without a positions API,
recorded as canonical JSON that rebuilds the same table."""

from __future__ import annotations

import copy
import hashlib
import re
from fractions import Fraction
from pathlib import Path

import pytest

from miam_economies.domain.catalogue import Tarif
from miam_economies.domain.errors import MiamEconomiesError
from miam_economies.domain.events import Pilotage, from_payload
from miam_economies.domain.formulas import pondere
from miam_economies.domain.tarifs_fichier import (
    TarifsError,
    canonical,
    champ,
    from_canonical,
    key_lines,
    ligne,
    lire,
)
from tests.conftest import EXAMPLE_BATCH
from tests.price_files import SONNET, refused

FILE = SONNET + """
[modeles."claude-opus-5"]
input = 5
output = 25
cache_write = 6.25
cache_read = 0.50
"""
"""A valid file: line 8 is Sonnet's cache_read, line 10 Opus's header, 14 its cache_read."""


def test_prices_are_read_exactly_never_as_binary_floats() -> None:
    read = lire(FILE.encode(), "prix.toml")
    sonnet = read.catalogue.tarifs["claude-sonnet-4-5"]
    assert sonnet.cache_read == Fraction(3, 10)  # a float would give 5404319552844595/2^54
    assert sonnet == Tarif(Fraction(3), Fraction(15), Fraction(15, 4), Fraction(3, 10))
    assert read.catalogue.tarifs["claude-opus-5"].cache_read == Fraction(1, 2)
    assert read.catalogue.reference == "claude-sonnet-4-5"


def test_integers_exponents_and_other_toml_numbers_are_exact() -> None:
    text = FILE.replace("cache_read = 0.50", "cache_read = 5e-1").replace(
        "output = 25", "output = 0x19").replace("cache_write = 6.25", "cache_write = 6_250e-3")
    opus = lire(text.encode(), "prix.toml").catalogue.tarifs["claude-opus-5"]
    assert opus == Tarif(Fraction(5), Fraction(25), Fraction(25, 4), Fraction(1, 2))


def test_the_checksum_is_the_files_bytes_and_the_name_is_kept() -> None:
    read = lire(FILE.encode(), "prix.toml")
    assert read.sha256 == hashlib.sha256(FILE.encode()).hexdigest()
    assert read.fichier == "prix.toml"
    # A comment is part of the file: another checksum, the same table.
    other = lire(("# v2\n" + FILE).encode(), "prix.toml")
    assert other.sha256 != read.sha256
    assert canonical(other.catalogue) == canonical(read.catalogue)


@pytest.mark.parametrize(("text", "line", "field", "words"), [
    (FILE.replace("cache_read = 0.30", "cache_read = -0.30"), 8,
     "modeles.claude-sonnet-4-5.cache_read", "negative"),
    (FILE.replace("input = 5", "input = -1"), 11, "modeles.claude-opus-5.input", "negative"),
    (FILE.replace("cache_read = 0.50\n", ""), 10, "modeles.claude-opus-5.cache_read",
     "missing price"),
    (FILE.replace("output = 25", 'output = "25"'), 12, "modeles.claude-opus-5.output",
     "not a number"),
    (FILE.replace("output = 25", "output = true"), 12, "modeles.claude-opus-5.output",
     "not a number: true"),
    (FILE.replace("output = 25", "output = [25]"), 12, "modeles.claude-opus-5.output",
     "not a number"),
    (FILE.replace("output = 25", "output = nan"), 12, "modeles.claude-opus-5.output",
     "not a finite number"),
    (FILE.replace("output = 25", "output = inf"), 12, "modeles.claude-opus-5.output",
     "not a finite number"),
    (FILE.replace("output = 25", "output = 1e999999999"), 12,
     "modeles.claude-opus-5.output", "must be below"),
    (FILE.replace("output = 25", "output = 1e-999999999"), 12,
     "modeles.claude-opus-5.output", "decimal places"),
    (FILE.replace("input = 5", "inptu = 5"), 11, "modeles.claude-opus-5.inptu",
     "unknown price"),
    (FILE + "prix = 1\n", 15, "modeles.claude-opus-5.prix", "unknown price"),
    ("devise = 'USD'\n" + FILE, 1, "devise", "unknown key"),
    (FILE.replace('reference = "claude-sonnet-4-5"', ""), 1, "reference", "missing"),
    (FILE.replace('"claude-sonnet-4-5"', "3", 1), 2, "reference", "model name"),
    (FILE.replace('"claude-sonnet-4-5"', '"claude-haiku-5-5"', 1), 2, "reference",
     "'claude-haiku-5-5' has no prices"),
    (FILE.replace("input = 3", "input = 0"), 5, "modeles.claude-sonnet-4-5.input",
     "cannot be 0"),
    ('reference = "a"\n', 1, "modeles", "must be tables"),
    ('reference = "a"\n\n[modeles]\n', 3, "modeles", "no model"),
    ('reference = "a"\nmodeles = 3\n', 2, "modeles", "must be tables"),
    ('reference = "a"\n[modeles]\na = 3\n', 3, "modeles.a", "must be a table of prices"),
])
def test_each_fault_is_refused_with_its_line_and_field(text: str, line: int, field: str,
                                                        words: str) -> None:
    error = refused(text)
    assert (error.ligne, error.champ) == (line, field)
    assert words in error.probleme
    assert str(error) == f"prix.toml:{line}: {field}: {error.probleme}"
    assert isinstance(error, MiamEconomiesError) and isinstance(error, ValueError)


@pytest.mark.parametrize(("text", "line"), [
    (FILE.replace("output = 25", "output = 25 ="), 12),
    (FILE.replace('[modeles."claude-opus-5"]', '[modeles."claude-opus-5"'), 10),
    (FILE + "[modeles.claude-sonnet-4-5]\n", 15),  # a table defined twice
    (FILE.replace("output = 15", "output = 15\noutput = 16"), 7),  # a key twice
    ('reference = "claude-sonnet-4-5', 1),
])
def test_text_that_is_not_toml_is_refused_at_tomllibs_line(text: str, line: int) -> None:
    error = refused(text)
    assert (error.ligne, error.champ) == (line, "")
    assert str(error).startswith(f"prix.toml:{line}: not TOML: ")
    assert "(at line" not in str(error)


def test_bytes_that_are_not_utf8_are_refused_at_their_line() -> None:
    with pytest.raises(TarifsError) as caught:
        lire(FILE.encode().replace(b"# USD", b"# \xff USD").replace(b"input = 5",
                                                                     b"input = 5 # \xe9"),
             "prix.toml")
    assert caught.value.ligne == 1 and "UTF-8" in str(caught.value)


def test_the_locator_follows_quoted_and_dotted_keys() -> None:
    text = """\
reference = "claude-3.5"
modeles."claude-3.5".input = 3
modeles."claude-3.5".output = 15
modeles . 'claude-3.5' . cache_write = 3.75   # spaces around the dots, a literal string
  modeles."claude-3.5"."cache_read" = 0.30
modeles."a=b" = { input = 1, output = 2, cache_write = 3, cache_read = 4 }

[ modeles . "x.y" ]  # a quoted name with a dot, and spaces in the header
input = 1
"""
    assert key_lines(text) == [
        (1, ("reference",)), (2, ("modeles", "claude-3.5", "input")),
        (3, ("modeles", "claude-3.5", "output")),
        (4, ("modeles", "claude-3.5", "cache_write")),
        (5, ("modeles", "claude-3.5", "cache_read")), (6, ("modeles", "a=b")),
        (8, ("modeles", "x.y")), (9, ("modeles", "x.y", "input"))]
    assert ligne(text, ("modeles", "claude-3.5", "cache_read")) == 5
    assert ligne(text, ("modeles", "a=b", "output")) == 6  # inside an inline table
    assert ligne(text, ("modeles", "x.y", "output")) == 8  # missing: its header
    assert ligne(text, ("modeles", "zz", "input")) == 1  # no line of it: the first
    assert ligne('reference = "a"\n\n[modeles]\n', ("modeles", "zz")) == 3
    # A model written only as dotted keys is at its first line (ADR-0162: these three are
    # no model of the catalogue).
    assert ligne(text, ("modeles", "claude-3.5")) == 2
    error = refused(text)
    assert (error.ligne, error.champ) == (2, 'modeles."claude-3.5"')
    assert "unknown model" in error.probleme
    # And through the reader, the three declared outside the catalogue (a line more above
    # the text): a missing price of the quoted model, and a bad one.
    declared = ('modeles."claude-3.5".hors_catalogue = true\n'
                + text.replace("{ input = 1,", "{ hors_catalogue = true, input = 1,")
                + "hors_catalogue = true\n")
    error = refused(declared)
    assert (error.ligne, error.champ) == (9, 'modeles."x.y".output')
    error = refused(declared.replace("cache_write = 3.75", "cache_write = -3.75"))
    assert (error.ligne, error.champ) == (5, 'modeles."claude-3.5".cache_write')


def test_a_field_is_named_as_toml_writes_it() -> None:
    assert champ(("modeles", "claude-opus-5", "input")) == "modeles.claude-opus-5.input"
    assert champ(("modeles", "claude 3.5", "input")) == 'modeles."claude 3.5".input'


def test_the_canonical_json_rebuilds_the_same_table_and_weights() -> None:
    read = lire(FILE.encode(), "prix.toml")
    text = canonical(read.catalogue)
    assert text == (
        '{"modeles":{"claude-opus-5":{"cache_read":"0.5","cache_write":"6.25","input":"5",'
        '"output":"25"},"claude-sonnet-4-5":{"cache_read":"0.3","cache_write":"3.75",'
        '"input":"3","output":"15"}},"reference":"claude-sonnet-4-5"}')
    again = from_canonical(text)
    assert dict(again.tarifs) == dict(read.catalogue.tarifs)
    assert again.reference == read.catalogue.reference
    assert canonical(again) == text
    tiny = lire(FILE.replace("0.50", "0.000000000001").encode(), "p").catalogue
    assert from_canonical(canonical(tiny)).tarifs["claude-opus-5"].cache_read == Fraction(
        1, 10**12)


def test_a_user_table_weighs_as_pondere_does_on_its_prices() -> None:
    # One Opus 5 turn at the file's prices, in Sonnet 4.5 input tokens ($3 a million):
    # (1,000 x 5 + 100 x 25 + 400 x 6.25 + 10,000 x 0.5) / 3 = 15,000 / 3 = 5,000.
    payload = copy.deepcopy(EXAMPLE_BATCH["evenements"][1])
    payload["modele"] = "claude-opus-5-20261101"
    payload["usage"] = {"input_tokens": 1000, "output_tokens": 100,
                        "cache_creation_input_tokens": 400, "cache_read_input_tokens": 10_000}
    turn = from_payload(payload)
    assert isinstance(turn, Pilotage)
    formula = pondere("mes-prix", lire(FILE.encode(), "prix.toml").catalogue, "test")
    assert formula.cout_pilotage(turn) == 5_000


def test_the_docs_show_this_file_and_its_refusal_as_printed() -> None:
    page = (Path(__file__).parents[2] / "docs" / "formulas.md").read_text(encoding="utf-8")
    shown = re.search(r"^## Prices you set$.*?^```toml\n(.*?)^```", page, re.S | re.M)
    assert shown is not None and shown.group(1) == FILE
    with pytest.raises(TarifsError) as caught:
        lire(FILE.replace("0.30", "-0.30").encode(), "mes-prix.toml")
    assert f"`{caught.value}`" in " ".join(page.split())
