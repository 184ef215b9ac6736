"""A price file's model that the catalogue does not know (issue 32, point 1; ADR-0162):
refused with its line and the nearest names unless its table says ``hors_catalogue =
true``; the store's models a table leaves out are named; a formula name that is neither
built in nor recorded is answered with the recorded ones and the nearest. Against 92db6ba
``[modeles."claude-opus-41"]`` was accepted, and every Opus turn weighed as Sonnet."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from miam_economies.api.service.formules import UnknownFormula, unknown_formula
from miam_economies.domain import tarifs, tarifs_v2
from miam_economies.domain.modeles_connus import connu, inconnu, non_tarifes, proches
from miam_economies.domain.tarifs_fichier import canonical, lire
from tests.price_files import SONNET, TYPO, refused


@pytest.mark.parametrize("modele", [
    "claude-opus-4-1", "claude-opus-4-1-20250805", "claude-sonnet-4-5-latest",
    "claude-haiku-5-5",  # pondere-v2's table only
    "claude-3-haiku",    # both tables
])
def test_a_name_of_either_built_in_table_is_known(modele: str) -> None:
    assert connu(modele)


@pytest.mark.parametrize("modele", ["claude-opus-41", "claude-opus-4-1-2025", "qwen-local",
                                    "Claude-Opus-4-1", ""])
def test_other_names_are_not(modele: str) -> None:
    assert not connu(modele)


def test_the_nearest_names_come_first_and_a_date_is_left_out() -> None:
    assert proches("claude-opus-41")[0] == "claude-opus-4-1"
    assert proches("claude-opus-41-20250805")[0] == "claude-opus-4-1"
    assert proches("claude-sonet-4-5")[0] == "claude-sonnet-4-5"
    assert proches("qwen-local") == []
    assert "did you mean" not in inconnu("qwen-local")


def test_a_misspelt_model_is_refused_at_its_table_with_the_nearest_names() -> None:
    error = refused(TYPO, "typo.toml")
    assert (error.ligne, error.champ) == (10, "modeles.claude-opus-41")
    assert str(error).startswith(
        "typo.toml:10: modeles.claude-opus-41: unknown model: no built-in price table has "
        "it (did you mean claude-opus-4-1, ")
    assert "`hors_catalogue = true` in its table" in str(error)


def test_a_model_declared_outside_the_catalogue_is_read_and_not_recorded_as_a_price() -> None:
    declared = TYPO.replace('[modeles."claude-opus-41"]\n',
                            '[modeles."claude-opus-41"]\nhors_catalogue = true\n')
    read = lire(declared.encode(), "typo.toml")
    assert set(read.catalogue.tarifs) == {"claude-sonnet-4-5", "claude-opus-41"}
    # The key is a declaration: the recorded table is the same as without it.
    assert canonical(read.catalogue) == canonical(
        lire(TYPO.replace("claude-opus-41", "claude-opus-4-1").encode(), "t").catalogue
    ).replace("claude-opus-4-1", "claude-opus-41")
    # On a known model it is allowed (a table regenerated later may know the model).
    lire(SONNET.replace("cache_read = 0.30", "cache_read = 0.30\nhors_catalogue = true")
         .encode(), "t")


@pytest.mark.parametrize(("text", "line", "field", "words"), [
    (TYPO.replace("input = 15", "hors_catalogue = false\ninput = 15"), 10,
     "modeles.claude-opus-41", "unknown model"),
    (TYPO.replace("input = 15", 'hors_catalogue = "yes"\ninput = 15'), 11,
     "modeles.claude-opus-41.hors_catalogue", "must be true or false"),
    (TYPO.replace("input = 15", "hors_catalogue = 1\ninput = 15"), 11,
     "modeles.claude-opus-41.hors_catalogue", "must be true or false"),
    # The reference is a model too.
    (SONNET.replace("claude-sonnet-4-5", "claude-sonet-4-5"), 4, "modeles.claude-sonet-4-5",
     "did you mean claude-sonnet-4-5"),
    # A fault in the prices comes first, as it did.
    (TYPO.replace("input = 15", "input = -15"), 11, "modeles.claude-opus-41.input",
     "negative"),
])
def test_each_fault_of_the_declaration_is_refused_with_its_line(text: str, line: int,
                                                                field: str, words: str) -> None:
    error = refused(text, "typo.toml")
    assert (error.ligne, error.champ) == (line, field)
    assert words in error.probleme


def test_the_store_models_a_table_does_not_price_are_named_once_sorted() -> None:
    store = ["claude-opus-4-1-20250805", "qwen-local", "claude-haiku-5-5", "qwen-local",
             "claude-sonnet-4-5"]
    assert non_tarifes(tarifs.CATALOGUE, store) == ["claude-haiku-5-5", "qwen-local"]
    assert non_tarifes(tarifs_v2.CATALOGUE, store) == ["qwen-local"]
    assert non_tarifes(tarifs_v2.CATALOGUE, []) == []


def test_an_unknown_formula_names_the_recorded_ones_and_the_nearest() -> None:
    error = unknown_formula("mes-prx", ["mes-prix", "autres"])
    assert isinstance(error, UnknownFormula)
    assert str(error) == (
        "no formula 'mes-prx' (did you mean mes-prix?); built in: pondere-v1, pondere-v2, "
        "v1, v1-serveur; recorded from price files: autres, mes-prix; or set your prices: "
        "replay --formule mes-prx --tarifs FILE")
    assert str(unknown_formula("ponderev2")).startswith(
        "no formula 'ponderev2' (did you mean pondere-v2?); built in: ")
    assert str(unknown_formula("inconnu")) == (
        "no formula 'inconnu'; built in: pondere-v1, pondere-v2, v1, v1-serveur; or set "
        "your prices: replay --formule inconnu --tarifs FILE")


def test_the_docs_show_the_declaration_and_the_refusal_as_the_reader_gives_them() -> None:
    page = (Path(__file__).parents[2] / "docs" / "formulas.md").read_text(encoding="utf-8")
    section = page.split("## Prices you set", 1)[1].split("\n## ", 1)[0]
    first, declared = re.findall(r"^```toml\n(.*?)^```", section, re.S | re.M)
    read = lire((first + "\n" + declared).encode(), "mes-prix.toml")
    assert "qwen-local" in read.catalogue.tarifs
    flat = " ".join(section.split())
    error = refused(TYPO, "mes-prix.toml")  # the docs' file, its table at line 10 too
    shown = str(error).split("; events")[0]
    assert f"`{shown}; ...`" in flat
    assert f"`{str(unknown_formula('mes-prx', ['mes-prix']))}`" in flat


def test_a_dotted_model_name_unquoted_is_told_to_be_quoted() -> None:
    # [modeles.claude-haiku-5.5] is the table "5" inside the model "claude-haiku-5".
    error = refused(SONNET + "\n[modeles.claude-haiku-5.5]\ninput = 1\n", "mes-prix.toml")
    assert str(error) == ('mes-prix.toml:10: modeles.claude-haiku-5.5: a table, not a price: '
                          'a model name with a dot is quoted, [modeles."claude-haiku-5.5"]')
