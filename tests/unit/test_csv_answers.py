"""The CSV of a breakdown (issue 24, point 5; ADR-0134): every shape of the bilan (no
``par``, one dimension, ``par=client``, two dimensions, model cells, money) and the
classement, each made from the typed result (``BilanLu``, ``ClassementLu``; ADR-0163),
read back with ``csv.DictReader`` and compared with the wire answer made from the same
result, figure by figure; exact integers past 2^63, null cells, and text cells that a
spreadsheet would take for a formula."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Any

import pytest

from miam_economies.api.service.answers import (
    GROUPE_EN_USD,
    bilan_answer,
    classement_answer,
    groupe_en_usd,
    groupes_answer,
)
from miam_economies.api.service.csv_answers import bilan_csv, classement_csv, number_cell
from miam_economies.api.service.results import BilanLu, ClassementLu
from miam_economies.domain.bilan import Figures, FiguresModele
from miam_economies.domain.classement import Groupe, classement
from miam_economies.domain.echantillon import Echantillon
from miam_economies.domain.formulas import PONDERE_V2, Prix
from miam_economies.projections.view import BilanSnapshot

FIGURES = ["delegations", "evites", "pilotage", "corrections", "net", "taux_reprise"]
USAGE = ["input_tokens", "output_tokens", "cache_read_input_tokens",
         "cache_creation_input_tokens"]
TRIGGERS = "=+-@\t\r\0"  # OWASP, "CSV Injection" (NUL: ASVS 1.2.10)
BIG = 2**64 + 1  # past 2^63: a float or a 64-bit integer would lose it


def cell(delegations: int, evites: int, pilotage: int, corrections: int) -> Figures:
    """A client's figures (tokens)."""
    return Figures(delegations, evites, pilotage, corrections)


def lu(clients: dict[str, Figures] | None = None, par: str | None = None,
       groupes: Any = None, puis: str | None = None, prix: Prix | None = None) -> BilanLu:
    """A bilan as the service reads it: ``clients``, a breakdown's ``groupes`` (cells as
    ``Figures`` or ``FiguresModele``), ``prix`` under a weighted formula."""
    snapshot = BilanSnapshot("v1", 1, 1, clients or {}, par=par, puis=puis,
                             groupes=None if par is None else groupes or {})
    return BilanLu(snapshot, 1, 1, "2026-12-03T00:00:00.000Z", prix=prix)


def ranked_lu(groupes: list[Groupe], prix: Prix | None = None) -> ClassementLu:
    """A classement of ``groupes`` by preset, as the service reads it."""
    return ClassementLu("preset", "v1", 1, 3, "taux", groupes, [], 0, prix=prix)


def read(text: str) -> list[dict[str, str]]:
    """The CSV's rows as dicts, after checking RFC 4180's line ends and the header."""
    assert text.endswith("\r\n")
    assert "\n" not in text.replace("\r\n", "")  # no bare line end outside a quoted field
    return list(csv.DictReader(io.StringIO(text, newline="")))


def header(text: str) -> list[str]:
    return next(csv.reader(io.StringIO(text, newline="")))


def unguarded(text: str) -> str:
    """A text cell as the user wrote it: the guard's ``'`` taken off (the test's own
    statement of the rule)."""
    return text[1:] if text[:1] == "'" and text[1:2] in TRIGGERS and text[1:2] else text


def value(text: str) -> Any:
    """A figure cell read back: empty is None, an integer an int, else a float."""
    if text == "":
        return None
    try:
        return int(text)
    except ValueError:
        return float(text)


def assert_figures(row: dict[str, str], figures: dict[str, Any] | Figures) -> None:
    if isinstance(figures, Figures):
        figures = figures.as_dict()
    for name in FIGURES:
        assert value(row[name]) == figures[name], (name, row[name], figures[name])
        if isinstance(figures[name], int):
            assert row[name] == str(figures[name])  # written whole, never 1.8e19


def rows_of(groupes: dict[str, Any], depth: int) -> Iterator[tuple[list[str], str, Any]]:
    # (keys, client, cell) of a nested groupes dict, ``depth`` dimensions deep.
    for key, inner in groupes.items():
        if depth == 1:
            for client, figures in inner.items():
                yield [key], client, figures
        else:
            for keys, client, figures in rows_of(inner, depth - 1):
                yield [key, *keys], client, figures


def test_a_bilan_without_par_is_one_row_per_client_and_no_total() -> None:
    economies = {"claude-code": cell(3, 4900, 2000, 490), "claude-code-ci": cell(0, 0, 10, 0)}
    text = bilan_csv(lu(economies))
    assert header(text) == ["client", *FIGURES]
    rows = read(text)
    assert [r["client"] for r in rows] == sorted(economies)
    for row in rows:
        assert_figures(row, economies[row["client"]])
    assert rows[1]["taux_reprise"] == ""  # evites 0: taux null, an empty cell


def test_a_breakdown_has_its_key_column_named_by_par() -> None:
    groupes = {"2026-10-30": {"claude-code": cell(1, 4900, 2000, 0)},
               "2026-10-31": {"claude-code": cell(2, 100, 30, 7),
                              "claude-code-ci": cell(1, 5, 9, 1)}}
    for par in ("jour", "semaine", "preset", "journal.modele"):
        text = bilan_csv(lu(par=par, groupes=groupes))
        assert header(text) == [par, "client", *FIGURES]
        rows = read(text)
        expected = list(rows_of(groupes, 1))
        assert len(rows) == len(expected)
        for row, (keys, client, figures) in zip(rows, expected, strict=True):
            assert [row[par], row["client"]] == [*keys, client]
            assert_figures(row, figures)


def test_par_client_leaves_out_the_key_column_that_repeats_the_client() -> None:
    groupes = {"a": {"a": cell(1, 10, 3, 1)}, "b": {"b": cell(2, 20, 5, 0)}}
    text = bilan_csv(lu(par="client", groupes=groupes))
    assert header(text) == ["client", *FIGURES]
    rows = read(text)
    assert [r["client"] for r in rows] == ["a", "b"]
    assert_figures(rows[1], groupes["b"]["b"])


def test_two_dimensions_give_both_key_columns_then_the_client() -> None:
    groupes = {"rapide": {"2026-W52": {"claude-code": cell(1, 4900, 2000, 0)},
                          "2027-W01": {"claude-code": cell(2, 700, 100, 50),
                                       "claude-code-ci": cell(1, -30, 10, 0)}},
               "precis": {"2027-W01": {"claude-code": cell(4, 9000, 1000, 8000)}}}
    text = bilan_csv(lu(par="preset", puis="semaine", groupes=groupes))
    assert header(text) == ["preset", "semaine", "client", *FIGURES]
    rows = read(text)
    expected = list(rows_of(groupes, 2))
    assert len(rows) == len(expected) == 4
    for row, (keys, client, figures) in zip(rows, expected, strict=True):
        assert [row["preset"], row["semaine"], row["client"]] == [*keys, client]
        assert_figures(row, figures)
    assert rows[2]["net"] == "-40"  # a negative figure: no guard, it is a number


def model_groupes() -> dict[str, Any]:
    """A ``par=modele`` groupes as the view reads it, one model without a known price
    (``usd`` null)."""
    haiku = FiguresModele(tours=2, input_tokens=805, output_tokens=400,
                          cache_read_input_tokens=BIG, cache_creation_input_tokens=3,
                          cout=2010)
    unknown = FiguresModele(tours=1, input_tokens=1, output_tokens=2, cout=3)
    return {"claude-haiku-5-5": {"claude-code": haiku},
            "modele-inconnu-9": {"claude-code": unknown}}


def assert_model_row(row: dict[str, str], figures: dict[str, Any]) -> None:
    assert_figures(row, figures)
    assert value(row["tours"]) == figures["tours"]
    for name in USAGE:
        assert row[name] == str(figures["usage"][name])
    assert value(row["usd"]) == figures["usd"]


def test_model_cells_add_turns_usage_and_usd() -> None:
    groupes = groupes_answer(model_groupes())  # the wire's cells, for the comparison
    assert groupes["modele-inconnu-9"]["claude-code"]["usd"] is None
    text = bilan_csv(lu(par="modele", groupes=model_groupes()))
    assert header(text) == ["modele", "client", *FIGURES, "tours", *USAGE, "usd"]
    rows = read(text)
    for row, (keys, _, figures) in zip(rows, rows_of(groupes, 1), strict=True):
        assert row["modele"] == keys[0]
        assert_model_row(row, figures)
    assert rows[0]["cache_read_input_tokens"] == str(BIG)
    assert rows[1]["usd"] == ""


def test_modele_as_the_second_dimension_adds_the_model_columns_too() -> None:
    groupes = {"2026-10-30": groupes_answer(model_groupes())}
    text = bilan_csv(lu(par="jour", puis="modele", groupes={"2026-10-30": model_groupes()}))
    assert header(text) == ["jour", "modele", "client", *FIGURES, "tours", *USAGE, "usd"]
    rows = read(text)
    for row, (keys, _, figures) in zip(rows, rows_of(groupes, 2), strict=True):
        assert [row["jour"], row["modele"]] == keys
        assert_model_row(row, figures)


def test_money_is_written_as_the_exact_decimal_text_it_is() -> None:
    prix = PONDERE_V2.prix
    assert prix is not None
    economies = {"claude-code": cell(1, 4900, 2000, 0), "claude-code-ci": cell(1, 0, BIG, 0)}
    priced = lu(economies, prix=prix)
    answer = bilan_answer(priced)
    text = bilan_csv(priced)
    assert header(text) == ["client", *FIGURES, "evites_usd", "pilotage_usd",
                            "corrections_usd", "net_usd"]
    for row in read(text):
        figures = answer["economies"][row["client"]]
        assert_figures(row, figures)
        for name, usd in figures["en_usd"].items():
            assert row[f"{name}_usd"] == usd  # as is: no float, no guard on the minus
    assert any(row["net_usd"].startswith("-") for row in read(text))
    without = bilan_csv(lu({"c": cell(1, 1, 1, 1)}))
    assert "_usd" not in without  # the contract's token formulas: no money columns


def test_money_columns_follow_the_formula_not_the_rows() -> None:
    # No row at all under a weighted formula: the header still has the USD columns.
    assert PONDERE_V2.prix is not None
    text = bilan_csv(lu(par="preset", prix=PONDERE_V2.prix))
    assert header(text)[-4:] == ["evites_usd", "pilotage_usd", "corrections_usd", "net_usd"]
    model = bilan_csv(lu(par="modele", groupes=model_groupes(), prix=PONDERE_V2.prix))
    rows = read(model)
    cout = model_groupes()["claude-haiku-5-5"]["claude-code"].cout
    assert rows[0]["pilotage_usd"] == bilan_answer(
        lu(par="modele", groupes=model_groupes(), prix=PONDERE_V2.prix)
    )["groupes"]["claude-haiku-5-5"]["claude-code"]["en_usd"]["pilotage"]
    assert int(rows[0]["pilotage"]) == cout


def test_integers_past_2_63_stay_exact() -> None:
    huge = Figures(1_100, BIG * 1_000, BIG * 999, 2**63)  # net = BIG - 2^63: still exact
    figures = huge.as_dict()
    text = bilan_csv(lu({"claude-code": huge}))
    (row,) = read(text)
    for name in ("evites", "pilotage", "corrections", "net"):
        assert int(row[name]) == figures[name]
    assert int(row["evites"]) - int(row["pilotage"]) - int(row["corrections"]) == int(row["net"])
    assert float(row["taux_reprise"]) == figures["taux_reprise"]


def test_taux_reprise_is_the_floats_repr_and_null_is_empty() -> None:
    thirds = cell(1, 3, 0, 1)  # 1/3: repr gives the shortest text that reads back exact
    text = bilan_csv(lu({"a": thirds, "b": cell(1, -5, 0, 2)}))
    a, b = read(text)
    assert a["taux_reprise"] == repr(1 / 3) and float(a["taux_reprise"]) == 1 / 3
    assert b["taux_reprise"] == ""


@pytest.mark.parametrize("trigger", list(TRIGGERS))
def test_text_that_a_spreadsheet_would_evaluate_gets_a_leading_quote(trigger: str) -> None:
    client = f"{trigger}HYPERLINK(\"http://x\",\"clic\")"
    key = f"{trigger}cmd|' /C calc'!A0"
    text = bilan_csv(lu(par="preset", groupes={key: {client: cell(1, 10, 20, 0)}}))
    (row,) = read(text)
    assert row["preset"] == "'" + key and row["client"] == "'" + client
    assert (unguarded(row["preset"]), unguarded(row["client"])) == (key, client)
    assert row["net"] == "-10"  # a figure is never guarded


def test_ordinary_text_is_kept_as_is_commas_quotes_and_line_ends_included() -> None:
    names = ["claude-code", "a, \"b\"\r\nc", "'quoted already", "2026-10-30", "é ü"]
    text = bilan_csv(lu({n: cell(1, 1, 0, 0) for n in names}))
    assert [r["client"] for r in csv.DictReader(io.StringIO(text, newline=""))] == sorted(
        names)


def test_a_par_named_like_a_column_or_a_formula_is_told_apart() -> None:
    groupes = {"x": {"c": cell(1, 1, 0, 0)}}
    for par, column in (("net", "journal.net"), ("=1+1", "'=1+1")):
        text = bilan_csv(lu(par=par, groupes=groupes))
        assert header(text) == [column, "client", *FIGURES]


def test_a_cell_is_no_list() -> None:
    with pytest.raises(TypeError):
        number_cell([1, 2])


def groupes_classement() -> list[Groupe]:
    """A real classement (``domain.classement``): a ranked group, an unranked one without
    evites (null taux, null taux interval), one demande (null net interval)."""
    samples = {"rapide": Echantillon.of([(4900, 2000, 0), (12_000, 3_100, 1_200),
                                         (800, 1_500, 0), (30_000, 2_600, 0)]),
               "=precis": Echantillon.of([(0, 5_000, 4_000), (0, 6_500, 0)]),
               "seul": Echantillon.of([(BIG, 0, 1)])}
    return classement(samples, minimum=3)


def test_the_classement_is_one_row_per_group_with_each_interval_in_two_columns() -> None:
    ranked = ranked_lu(groupes_classement())
    groupes = classement_answer(ranked)["groupes"]
    text = classement_csv(ranked)
    assert header(text) == [
        "cle", "demandes", "sessions", "evites", "pilotage", "corrections", "net",
        "net_par_demande",
        "taux_reprise", "intervalle_net_par_demande_bas", "intervalle_net_par_demande_haut",
        "intervalle_taux_reprise_bas", "intervalle_taux_reprise_haut", "suffisant", "rang",
        "derive_depuis", "derive_avant", "derive_apres", "derive_bas", "derive_haut"]
    rows = read(text)
    assert len(rows) == len(groupes) == 3
    for row, g in zip(rows, groupes, strict=True):
        assert unguarded(row["cle"]) == g["cle"]
        for name in ("demandes", "evites", "pilotage", "corrections", "net",
                     "net_par_demande", "taux_reprise", "rang"):
            assert value(row[name]) == g[name], name
        for name in ("intervalle_net_par_demande", "intervalle_taux_reprise"):
            bounds = [value(row[f"{name}_bas"]), value(row[f"{name}_haut"])]
            assert bounds == (g[name] or [None, None]), name
        assert row["suffisant"] == ("true" if g["suffisant"] else "false")
    assert {g["cle"] for g in groupes} >= {"=precis", "seul"}
    assert any(r["cle"] == "'=precis" for r in rows)
    assert any(g["intervalle_taux_reprise"] is None for g in groupes)  # an empty pair seen
    assert "a_devant" not in text and "comparaisons" not in text  # pairs: JSON only


def test_the_classement_in_money_adds_a_usd_column_per_key() -> None:
    assert PONDERE_V2.prix is not None
    ranked = ranked_lu(groupes_classement(), PONDERE_V2.prix)
    text = classement_csv(ranked)
    assert header(text)[-7:] == ["evites_usd", "pilotage_usd", "corrections_usd", "net_usd",
                                 "net_par_demande_usd",
                                 "intervalle_net_par_demande_usd_bas",
                                 "intervalle_net_par_demande_usd_haut"]
    for row, g in zip(read(text), classement_answer(ranked)["groupes"], strict=True):
        assert (row["net_usd"], row["net_par_demande_usd"]) == (
            g["en_usd"]["net"], g["en_usd"]["net_par_demande"])


def test_a_null_interval_in_money_first_still_takes_two_columns() -> None:
    # The real answer's money (answers.groupe_en_usd under pondere-v2), the group whose
    # net interval is null first: each row has the interval's two USD columns.
    samples = {"seul": Echantillon.of([(4_900, 2_000, 490)]),
               "rapide": Echantillon.of([(4900, 2000, 0), (12_000, 3_100, 1_200),
                                         (800, 1_500, 0)])}
    assert PONDERE_V2.prix is not None
    ranked = classement(samples, minimum=1)
    ranked.sort(key=lambda g: g.intervalle_net_par_demande is not None)
    groupes = [{**g.as_dict(), "en_usd": groupe_en_usd(g, PONDERE_V2.prix)} for g in ranked]
    assert groupes[0]["en_usd"]["intervalle_net_par_demande"] is None
    assert groupes[1]["en_usd"]["intervalle_net_par_demande"] is not None
    rows = read(classement_csv(ranked_lu(ranked, PONDERE_V2.prix)))
    for row, g in zip(rows, groupes, strict=True):
        usd = g["en_usd"]["intervalle_net_par_demande"] or ["", ""]
        assert [row["intervalle_net_par_demande_usd_bas"],
                row["intervalle_net_par_demande_usd_haut"]] == [b or "" for b in usd]
        assert row["net_usd"] == g["en_usd"]["net"]


def test_an_empty_classement_is_its_header() -> None:
    text = classement_csv(ranked_lu([]))
    assert text.count("\r\n") == 1 and header(text)[0] == "cle"
    assert PONDERE_V2.prix is not None
    priced = classement_csv(ranked_lu([], PONDERE_V2.prix))
    # Columns from the formula, not from the groups: the USD columns with no group.
    assert header(priced)[-1] == "intervalle_net_par_demande_usd_haut"
    assert [h for h in header(priced) if h.endswith("_usd")] == [
        f"{k}_usd" for k in GROUPE_EN_USD if not k.startswith("intervalle_")]
