"""Issue 32, item 1 (ADR-0164): the pure rules of what a read understands."""

from __future__ import annotations

import pytest

from miam_economies.domain.known_names import (
    BUILT_IN,
    NotUnderstood,
    check_dimension,
    check_once,
    check_parameters,
    nearest,
    wait_asked,
)

FIELDS = frozenset({"preset", "format", "test_id", "ok"})


@pytest.mark.parametrize(("typo", "meant"), [
    ("jours", "jour"), ("model", "modele"), ("presets", "preset"), ("Preset", "preset"),
    ("tset_id", "test_id"), ("fromat", "format"), ("clients", "client")])
def test_a_typo_of_a_dimension_is_refused_with_the_nearest_name(typo: str, meant: str
                                                                ) -> None:
    with pytest.raises(NotUnderstood) as refused:
        check_dimension("par", typo, FIELDS)
    message = str(refused.value)
    assert refused.value.parametre == "par"
    assert message.startswith(f"par: {typo!r} is neither a built-in dimension")
    assert f"did you mean {meant!r}?" in message
    for name in (*BUILT_IN, *FIELDS):  # everything that exists is listed
        assert name in message


@pytest.mark.parametrize("name", [*BUILT_IN, "preset", "journal.preset", "test_id"])
def test_built_in_dimensions_and_the_journals_fields_are_known(name: str) -> None:
    assert check_dimension("par", name, FIELDS) is True


@pytest.mark.parametrize("champs", [None, frozenset()])
def test_a_field_of_a_journal_not_read_yet_cannot_be_known(
        champs: frozenset[str] | None) -> None:
    assert check_dimension("par", "preset", champs) is False
    assert check_dimension("par", "jour", champs) is True


def test_a_name_far_from_every_one_gets_no_suggestion() -> None:
    with pytest.raises(NotUnderstood) as refused:
        check_dimension("apparier", "zzzzzz", FIELDS, ())
    assert "did you mean" not in str(refused.value)
    assert str(refused.value).startswith("apparier: 'zzzzzz'")


def test_an_unknown_query_parameter_names_the_known_ones_and_the_spelling() -> None:
    known = ("par", "puis", "depuis", "jusqu_au", "attendre", "format")
    with pytest.raises(NotUnderstood) as refused:
        check_parameters(["par", "jusqu-au"], known, "GET /economies/bilan")
    assert refused.value.parametre == "jusqu-au"
    assert "did you mean 'jusqu_au'?" in str(refused.value)
    assert "GET /economies/bilan" in str(refused.value)
    check_parameters(["par", "jusqu_au"], known, "GET /economies/bilan")  # no error
    with pytest.raises(NotUnderstood, match="it reads: none"):
        check_parameters(["verbose"], (), "GET /healthz")


def test_a_parameter_given_twice_is_refused() -> None:
    with pytest.raises(NotUnderstood, match="par: given more than once"):
        check_once(["par", "depuis", "par"])
    check_once(["par", "puis"])


@pytest.mark.parametrize(("value", "asked"), [(None, False), ("1", True), ("true", True)])
def test_attendre_takes_1_or_true(value: str | None, asked: bool) -> None:
    assert wait_asked(value) is asked


@pytest.mark.parametrize("value", ["yes", "0", "True", "", "false", "2"])
def test_attendre_refuses_anything_else(value: str) -> None:
    with pytest.raises(NotUnderstood, match="attendre: takes 1 \\(or true\\)"):
        wait_asked(value)


def test_nearest_reads_a_dash_as_an_underscore() -> None:
    assert nearest("jusqu-au", ["depuis", "jusqu_au"]) == "jusqu_au"
    assert nearest("xyz", ["depuis"]) is None


@pytest.mark.parametrize(("typo", "meant"), [("jours", "jour"), ("model", "modele"),
                                            ("clients", "client"), ("semaines", "semaine")])
def test_a_sure_typo_of_a_built_in_name_is_refused_before_the_journal_has_fields(
        typo: str, meant: str) -> None:
    for champs in (None, frozenset()):
        with pytest.raises(NotUnderstood, match=f"did you mean {meant!r}"):
            check_dimension("par", typo, champs)
    assert check_dimension("par", f"journal.{typo}", None) is False  # asked as a field


@pytest.mark.parametrize("field", ["mode", "preset", "format", "test_id", "agent"])
def test_a_name_that_may_be_a_field_is_answered_before_the_journal_has_fields(
        field: str) -> None:
    assert check_dimension("par", field, None) is False


def test_a_prefixed_field_is_offered_only_the_journals_fields() -> None:
    with pytest.raises(NotUnderstood) as refused:
        check_dimension("par", "journal.jours", FIELDS)
    assert "did you mean" not in str(refused.value)  # not the built-in jour
    with pytest.raises(NotUnderstood) as refused:
        check_dimension("par", "journal.fromat", FIELDS)
    assert str(refused.value).endswith("did you mean 'format'?")
    assert "no demande's first line holds a scalar 'fromat'" in str(refused.value)


def test_a_task_field_is_refused_without_an_empty_list_of_built_ins() -> None:
    with pytest.raises(NotUnderstood) as refused:
        check_dimension("apparier", "tset_id", FIELDS, ())
    assert str(refused.value).startswith(
        "apparier: 'tset_id' is not a field of MIAM's journal: no demande's first line")
    assert "()" not in str(refused.value)
    assert str(refused.value).endswith("did you mean 'test_id'?")
