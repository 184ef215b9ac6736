"""Unit tests of ``domain.validation``: the schema-1 rules of SPEC.md, "Wire contract" and
"Events (schema 1)".

The valid events are the contract's example batch (``examples/contract-batch.json``) and
one correction; each test breaks one thing in a fresh copy.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from miam_economies.domain.events import Correction, Delegation, Estimation, Pilotage, Usage
from miam_economies.domain.strict_json import NotStrictJson, loads_strict
from miam_economies.domain.validation import (
    MAX_BATCH,
    MAX_FAULTS,
    Fault,
    SchemaError,
    instant_fault,
    validate_batch,
    validate_event,
)
from tests.conftest import EXAMPLE_BATCH, EXAMPLE_CORRECTION

# --- Valid events -----------------------------------------------------------------------

# The contract's example batch: a delegation of subagent a1, then the end of a1's turn.
EXAMPLE_DELEGATION, EXAMPLE_PILOTAGE = EXAMPLE_BATCH["evenements"]

A_CORRECTION = EXAMPLE_CORRECTION

VALID = {
    "delegation": EXAMPLE_DELEGATION,
    "pilotage": EXAMPLE_PILOTAGE,
    "correction": A_CORRECTION,
}


def fresh(kind: str) -> dict[str, Any]:
    """A deep copy of the valid event of type ``kind``, safe to mutate."""
    return copy.deepcopy(VALID[kind])


def set_path(event: dict[str, Any], path: str, value: Any) -> None:
    """Set ``event[a][b]`` for the dotted ``path`` ``"a.b"``."""
    *parents, last = path.split(".")
    target = event
    for key in parents:
        target = target[key]
    target[last] = value


def del_path(event: dict[str, Any], path: str) -> None:
    """Remove the field at the dotted ``path``."""
    *parents, last = path.split(".")
    target = event
    for key in parents:
        target = target[key]
    del target[last]


def faults_of(body: Any) -> SchemaError:
    """The SchemaError ``validate_batch`` raises for ``body`` (fails the test if none)."""
    with pytest.raises(SchemaError) as info:
        validate_batch(body)
    return info.value


def where(error: SchemaError) -> list[tuple[int | None, str]]:
    """The (index, champ) of each fault, in order."""
    return [(f.index, f.champ) for f in error.faults]


def where_event(index: int, event: Any) -> list[tuple[int | None, str]]:
    return [(f.index, f.champ) for f in validate_event(index, event)]


# --- The contract's example and a correction are valid ----------------------------------


def test_contract_example_batch_is_valid_and_returns_one_typed_value_per_event() -> None:
    result = validate_batch({"evenements": [fresh("delegation"), fresh("pilotage")]})

    assert [type(e) for e in result] == [Delegation, Pilotage]


def test_contract_example_delegation_comes_back_with_every_field() -> None:
    (delegation, _) = validate_batch({"evenements": [fresh("delegation"), fresh("pilotage")]})

    assert isinstance(delegation, Delegation)
    assert delegation.type == "delegation"
    assert delegation.id == "claude-code:dem-9c8a4d0189"
    assert delegation.date == "2026-10-30T09:12:04.512Z"
    assert delegation.client == "claude-code"
    assert delegation.session_id == "c009a419-e17b-4036-9531-ac29eaa481d4"
    assert delegation.demande_id == "dem-9c8a4d0189"
    assert delegation.agent_id == "a1"
    assert delegation.par_subagent is True
    assert delegation.retour == "complet"
    assert delegation.tokens_entree == 4100
    assert delegation.tokens_sortie == 900
    assert delegation.estimation == Estimation(
        lus=4000, ecrits=900, consigne=100, rendus=900, evites=4900, methode="caracteres/4"
    )
    assert delegation.payload == EXAMPLE_DELEGATION


def test_contract_example_pilotage_comes_back_with_every_field() -> None:
    (_, pilotage) = validate_batch({"evenements": [fresh("delegation"), fresh("pilotage")]})

    assert isinstance(pilotage, Pilotage)
    assert pilotage.type == "pilotage"
    assert pilotage.id == "claude-code:c009a419-e17b-4036-9531-ac29eaa481d4:a1:t"
    assert pilotage.date == "2026-10-30T09:12:09.031Z"
    assert pilotage.client == "claude-code"
    assert pilotage.session_id == "c009a419-e17b-4036-9531-ac29eaa481d4"
    assert pilotage.agent_id == "a1"
    assert pilotage.turn_id == "t"
    assert pilotage.demande_ids == ("dem-9c8a4d0189",)
    assert pilotage.modele == "claude-haiku-5-5"
    assert pilotage.usage == Usage(
        input_tokens=800, output_tokens=200, cache_read_input_tokens=10000,
        cache_creation_input_tokens=0,
    )
    assert pilotage.cout == 2000
    assert pilotage.payload == EXAMPLE_PILOTAGE


def test_contract_example_events_have_no_fault_one_by_one() -> None:
    assert validate_event(0, fresh("delegation")) == []
    assert validate_event(1, fresh("pilotage")) == []


def test_the_readmes_edit_correction_is_valid() -> None:
    assert validate_event(0, fresh("correction")) == []

    (correction,) = validate_batch({"evenements": [fresh("correction")]})

    assert isinstance(correction, Correction)
    assert correction.type == "correction"
    assert correction.id == "claude-code:c009a419-e17b-4036-9531-ac29eaa481d4:toolu_01"
    assert correction.demande_id == "dem-9c8a4d0189"
    assert correction.outil == "Edit"
    assert correction.tool_use_id == "toolu_01"
    assert correction.tokens_lus == 0
    assert correction.tokens_ecrits == 490
    assert correction.cout == 490


def test_batch_order_is_kept_in_the_returned_values() -> None:
    result = validate_batch(
        {"evenements": [fresh("correction"), fresh("pilotage"), fresh("delegation")]}
    )

    assert [e.type for e in result] == ["correction", "pilotage", "delegation"]


# --- Every required field ---------------------------------------------------------------

COMMON_FIELDS = ("schema", "type", "id", "date", "client", "session_id")

REQUIRED = {
    "delegation": COMMON_FIELDS + (
        "demande_id", "agent_id", "par_subagent", "retour", "tokens_entree", "tokens_sortie",
        "estimation", "estimation.lus", "estimation.ecrits", "estimation.consigne",
        "estimation.rendus", "estimation.evites", "estimation.methode",
    ),
    "pilotage": COMMON_FIELDS + (
        "agent_id", "turn_id", "demande_ids", "modele", "cout", "usage",
        "usage.input_tokens", "usage.output_tokens", "usage.cache_read_input_tokens",
        "usage.cache_creation_input_tokens",
    ),
    "correction": COMMON_FIELDS + (
        "demande_id", "outil", "tool_use_id", "tokens_lus", "tokens_ecrits", "cout",
    ),
}

TYPE_AND_FIELD = [(kind, path) for kind, paths in REQUIRED.items() for path in paths]


@pytest.mark.parametrize(("kind", "path"), TYPE_AND_FIELD)
def test_missing_required_field_is_one_fault_named_by_its_path_at_the_event_index(
    kind: str, path: str
) -> None:
    broken = fresh(kind)
    del_path(broken, path)
    # Two valid events before it, so the index has to be the event's own.
    body = {"evenements": [fresh("delegation"), fresh("pilotage"), broken]}

    error = faults_of(body)

    assert where(error) == [(2, path)]
    assert error.omitted == 0


@pytest.mark.parametrize(("kind", "path"), TYPE_AND_FIELD)
def test_validate_event_names_the_missing_field(kind: str, path: str) -> None:
    broken = fresh(kind)
    del_path(broken, path)

    assert where_event(7, broken) == [(7, path)]


# --- Integer counters ---------------------------------------------------------------------

NON_NEGATIVE_COUNTERS = [
    ("delegation", "tokens_entree"),
    ("delegation", "tokens_sortie"),
    ("delegation", "estimation.lus"),
    ("delegation", "estimation.ecrits"),
    ("delegation", "estimation.consigne"),
    ("delegation", "estimation.rendus"),
    ("pilotage", "cout"),
    ("pilotage", "usage.input_tokens"),
    ("pilotage", "usage.output_tokens"),
    ("pilotage", "usage.cache_read_input_tokens"),
    ("pilotage", "usage.cache_creation_input_tokens"),
    ("correction", "tokens_lus"),
    ("correction", "tokens_ecrits"),
    ("correction", "cout"),
]
EVITES = [("delegation", "estimation.evites")]
ALL_COUNTERS = NON_NEGATIVE_COUNTERS + EVITES

NOT_INTEGERS = [
    pytest.param(True, id="true_is_a_boolean"),
    pytest.param(False, id="false_is_a_boolean"),
    pytest.param(3.0, id="float_three_point_zero"),
    pytest.param(2.5, id="float_two_and_a_half"),
    pytest.param("3", id="string_three"),
    pytest.param(None, id="null"),
    pytest.param(float("nan"), id="nan"),
    pytest.param(float("inf"), id="infinity"),
    pytest.param([3], id="list"),
    pytest.param({"n": 3}, id="object"),
]


@pytest.mark.parametrize("value", NOT_INTEGERS)
@pytest.mark.parametrize(("kind", "path"), ALL_COUNTERS)
def test_counter_that_is_not_a_json_integer_is_refused(kind: str, path: str, value: Any) -> None:
    event = fresh(kind)
    set_path(event, path, value)

    assert where_event(0, event) == [(0, path)]


@pytest.mark.parametrize(("kind", "path"), NON_NEGATIVE_COUNTERS)
def test_negative_counter_is_refused(kind: str, path: str) -> None:
    event = fresh(kind)
    set_path(event, path, -1)

    assert where_event(0, event) == [(0, path)]


def test_negative_evites_is_accepted() -> None:
    event = fresh("delegation")
    event["estimation"]["evites"] = -1

    (delegation,) = validate_batch({"evenements": [event]})

    assert isinstance(delegation, Delegation)
    assert delegation.estimation.evites == -1


def test_evites_down_to_minus_max_safe_integer_is_accepted() -> None:
    event = fresh("delegation")
    event["estimation"]["evites"] = -(2**53 - 1)

    assert validate_event(0, event) == []


def test_evites_below_minus_max_safe_integer_is_refused() -> None:
    event = fresh("delegation")
    event["estimation"]["evites"] = -(2**53)

    assert where_event(0, event) == [(0, "estimation.evites")]


@pytest.mark.parametrize(("kind", "path"), ALL_COUNTERS)
def test_two_to_the_53_is_beyond_javascript_safe_integers_and_refused(
    kind: str, path: str
) -> None:
    event = fresh(kind)
    set_path(event, path, 2**53)

    assert where_event(0, event) == [(0, path)]


@pytest.mark.parametrize(("kind", "path"), ALL_COUNTERS)
def test_max_safe_integer_is_accepted(kind: str, path: str) -> None:
    event = fresh(kind)
    set_path(event, path, 2**53 - 1)

    assert validate_event(0, event) == []


@pytest.mark.parametrize(("kind", "path"), ALL_COUNTERS)
def test_zero_is_accepted_for_every_counter(kind: str, path: str) -> None:
    event = fresh(kind)
    set_path(event, path, 0)

    assert validate_event(0, event) == []


# --- Other field types --------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(VALID))
@pytest.mark.parametrize(
    "schema",
    [
        pytest.param(1.0, id="float_one"),
        pytest.param(True, id="true"),
        pytest.param(2, id="two"),
        pytest.param(0, id="zero"),
        pytest.param("1", id="string_one"),
        pytest.param(None, id="null"),
    ],
)
def test_schema_other_than_the_number_one_is_refused(kind: str, schema: Any) -> None:
    event = fresh(kind)
    event["schema"] = schema

    assert where_event(0, event) == [(0, "schema")]


@pytest.mark.parametrize(
    "kind",
    ["autre", "Delegation", "DELEGATION", "", "delegations", None, 1],
)
def test_unknown_type_is_refused(kind: Any) -> None:
    event = fresh("delegation")
    event["type"] = kind

    error = faults_of({"evenements": [event]})

    assert where(error) == [(0, "type")]


def test_null_agent_id_means_the_main_agent_and_is_accepted_for_a_delegation() -> None:
    event = fresh("delegation")
    event["agent_id"] = None
    event["par_subagent"] = False

    (delegation,) = validate_batch({"evenements": [event]})

    assert isinstance(delegation, Delegation)
    assert delegation.agent_id is None


def test_null_agent_id_is_refused_for_a_pilotage() -> None:
    event = fresh("pilotage")
    event["agent_id"] = None

    assert where_event(0, event) == [(0, "agent_id")]


@pytest.mark.parametrize("value", [1, 0, "true", None])
def test_par_subagent_that_is_not_a_boolean_is_refused(value: Any) -> None:
    event = fresh("delegation")
    event["par_subagent"] = value

    assert where_event(0, event) == [(0, "par_subagent")]


@pytest.mark.parametrize("retour", ["autre", "Complet", "", None])
def test_retour_other_than_complet_or_apercu_is_refused(retour: Any) -> None:
    event = fresh("delegation")
    event["retour"] = retour

    assert where_event(0, event) == [(0, "retour")]


def test_retour_apercu_is_accepted() -> None:
    event = fresh("delegation")
    event["retour"] = "apercu"

    assert validate_event(0, event) == []


@pytest.mark.parametrize("outil", ["Grep", "read", "Glob", "", None])
def test_outil_outside_the_five_tools_is_refused(outil: Any) -> None:
    event = fresh("correction")
    event["outil"] = outil

    assert where_event(0, event) == [(0, "outil")]


@pytest.mark.parametrize("outil", ["Read", "Edit", "Write", "NotebookEdit", "Bash"])
def test_each_of_the_five_tools_is_accepted(outil: str) -> None:
    event = fresh("correction")
    event["outil"] = outil

    assert validate_event(0, event) == []


@pytest.mark.parametrize(
    ("demande_ids", "champ"),
    [
        pytest.param([], "demande_ids", id="empty_list"),
        pytest.param("dem-1", "demande_ids", id="bare_string"),
        pytest.param(None, "demande_ids", id="null"),
        pytest.param({"0": "dem-1"}, "demande_ids", id="object"),
        pytest.param(["a", 3], "demande_ids[1]", id="second_item_a_number"),
    ],
)
def test_demande_ids_must_be_a_non_empty_list_of_strings(demande_ids: Any, champ: str) -> None:
    event = fresh("pilotage")
    event["demande_ids"] = demande_ids

    assert where_event(0, event) == [(0, champ)]


def test_each_non_string_demande_id_is_its_own_fault() -> None:
    event = fresh("pilotage")
    event["demande_ids"] = [1, "dem-1", None]

    assert where_event(0, event) == [(0, "demande_ids[0]"), (0, "demande_ids[2]")]


def test_several_demande_ids_are_accepted() -> None:
    event = fresh("pilotage")
    event["demande_ids"] = ["dem-1", "dem-2", "dem-3"]

    (pilotage,) = validate_batch({"evenements": [event]})

    assert isinstance(pilotage, Pilotage)
    assert pilotage.demande_ids == ("dem-1", "dem-2", "dem-3")


@pytest.mark.parametrize("kind", list(VALID))
@pytest.mark.parametrize("champ", ["id", "client"])
def test_empty_id_or_client_is_refused(kind: str, champ: str) -> None:
    event = fresh(kind)
    event[champ] = ""

    assert where_event(0, event) == [(0, champ)]


STRING_FIELDS = [
    ("delegation", "id"), ("delegation", "client"), ("delegation", "session_id"),
    ("delegation", "demande_id"), ("delegation", "estimation.methode"),
    ("pilotage", "agent_id"), ("pilotage", "turn_id"), ("pilotage", "modele"),
    ("correction", "demande_id"), ("correction", "tool_use_id"),
]


@pytest.mark.parametrize(("kind", "path"), STRING_FIELDS)
def test_string_field_holding_a_number_is_refused(kind: str, path: str) -> None:
    event = fresh(kind)
    set_path(event, path, 42)

    assert where_event(0, event) == [(0, path)]


@pytest.mark.parametrize(
    ("kind", "path"), [("delegation", "estimation"), ("pilotage", "usage")]
)
@pytest.mark.parametrize("value", [None, [], "{}", 0])
def test_nested_object_that_is_not_an_object_is_one_fault(
    kind: str, path: str, value: Any
) -> None:
    event = fresh(kind)
    event[path] = value

    assert where_event(0, event) == [(0, path)]


# --- Dates --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "date",
    [
        pytest.param("2026-10-30T09:12:04.512Z", id="toISOString_form"),
        pytest.param("2026-10-30T09:12:04Z", id="no_fraction"),
        pytest.param("2026-10-30T11:12:04.512+02:00", id="positive_offset"),
    ],
)
def test_date_with_an_offset_is_accepted(date: str) -> None:
    event = fresh("delegation")
    event["date"] = date

    assert validate_event(0, event) == []


@pytest.mark.parametrize(
    "date",
    [
        pytest.param("2026-10-30T09:12:04.512", id="no_offset"),
        pytest.param("20250301T120000Z", id="compact_form"),
        pytest.param("2025-W09-6", id="week_form"),
        pytest.param("2026-10-30", id="date_only"),
        pytest.param("2026-13-30T09:12:04Z", id="month_thirteen"),
        pytest.param("2026-10-30 09:12:04Z", id="space_separator"),
        pytest.param("2026-10-30T09:12Z", id="no_seconds"),
        pytest.param("", id="empty"),
        pytest.param(1793351524512, id="epoch_milliseconds"),
        pytest.param(None, id="null"),
    ],
)
def test_date_without_offset_or_not_in_extended_form_is_refused(date: Any) -> None:
    event = fresh("pilotage")
    event["date"] = date

    assert where_event(0, event) == [(0, "date")]


# --- Batch level --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        pytest.param([EXAMPLE_DELEGATION], id="body_is_a_list"),
        pytest.param("evenements", id="body_is_a_string"),
        pytest.param(None, id="body_is_null"),
        pytest.param(3, id="body_is_a_number"),
        pytest.param({}, id="evenements_missing"),
        pytest.param({"events": [EXAMPLE_DELEGATION]}, id="evenements_misspelt"),
        pytest.param({"evenements": EXAMPLE_DELEGATION}, id="evenements_is_an_object"),
        pytest.param({"evenements": "[]"}, id="evenements_is_a_string"),
        pytest.param({"evenements": None}, id="evenements_is_null"),
        pytest.param({"evenements": []}, id="evenements_is_empty"),
    ],
)
def test_batch_level_fault_has_no_index_and_names_evenements(body: Any) -> None:
    error = faults_of(copy.deepcopy(body))

    assert where(error) == [(None, "evenements")]
    assert error.omitted == 0


@pytest.mark.parametrize(("body", "hint"), [
    (EXAMPLE_DELEGATION, 'looks like one event (it has "type"): send {"evenements": '
                         '[that event]}'),
    ({"events": [EXAMPLE_DELEGATION]}, 'the body is {"evenements": [...]}, a list of events'),
])
def test_a_body_without_evenements_says_what_the_body_is(body: Any, hint: str) -> None:
    (fault,) = faults_of(copy.deepcopy(body)).faults
    assert fault.message.startswith("required field is missing: ")
    assert hint in fault.message
    assert ("looks like one event" in fault.message) == ("type" in body)


def test_501_events_is_one_batch_level_fault() -> None:
    body = {"evenements": [fresh("correction") for _ in range(MAX_BATCH + 1)]}

    error = faults_of(body)

    assert MAX_BATCH + 1 == 501
    assert where(error) == [(None, "evenements")]


def test_exactly_500_valid_events_are_accepted() -> None:
    body = {"evenements": [fresh("correction") for _ in range(500)]}

    result = validate_batch(body)

    assert len(result) == 500
    assert all(isinstance(e, Correction) for e in result)


@pytest.mark.parametrize("not_an_object", [None, 3, "delegation", [EXAMPLE_DELEGATION], True])
def test_event_that_is_not_an_object_is_refused_at_its_index(not_an_object: Any) -> None:
    body = {"evenements": [fresh("delegation"), copy.deepcopy(not_an_object)]}

    error = faults_of(body)

    assert len(error.faults) == 1
    assert error.faults[0].index == 1


def test_validate_event_refuses_an_event_that_is_not_an_object() -> None:
    faults = validate_event(4, ["schema", 1])

    assert len(faults) == 1
    assert faults[0].index == 4


# --- Unknown fields -----------------------------------------------------------------------


def test_unknown_top_level_key_of_the_body_is_ignored() -> None:
    body = {"evenements": [fresh("delegation")], "version_plugin": "0.9.1", "lot": 7}

    result = validate_batch(body)

    assert [type(e) for e in result] == [Delegation]


@pytest.mark.parametrize("kind", list(VALID))
def test_unknown_event_field_is_accepted_and_kept_in_the_payload(kind: str) -> None:
    event = fresh(kind)
    event["nouveau_champ"] = {"a": [1, 2.5, None]}

    (value,) = validate_batch({"evenements": [event]})

    assert value.payload["nouveau_champ"] == {"a": [1, 2.5, None]}
    assert value.payload["id"] == VALID[kind]["id"]


def test_unknown_field_inside_estimation_is_accepted_and_kept_in_the_payload() -> None:
    event = fresh("delegation")
    event["estimation"]["poids_ecriture"] = 3

    (delegation,) = validate_batch({"evenements": [event]})

    assert delegation.payload["estimation"]["poids_ecriture"] == 3
    assert delegation.estimation.evites == 4900


def test_unknown_field_inside_usage_is_accepted_and_kept_in_the_payload() -> None:
    event = fresh("pilotage")
    event["usage"]["server_tool_use"] = {"web_search_requests": 0}

    (pilotage,) = validate_batch({"evenements": [event]})

    assert pilotage.payload["usage"]["server_tool_use"] == {"web_search_requests": 0}


# --- Every fault listed -------------------------------------------------------------------


def test_event_with_three_bad_fields_yields_three_faults() -> None:
    event = fresh("delegation")
    event["schema"] = 2
    event["tokens_entree"] = "4100"
    event["estimation"]["consigne"] = -1

    error = faults_of({"evenements": [fresh("pilotage"), event]})

    assert sorted(where(error), key=lambda w: w[1]) == [
        (1, "estimation.consigne"), (1, "schema"), (1, "tokens_entree"),
    ]
    assert error.omitted == 0


def test_two_bad_events_yield_faults_with_both_indexes() -> None:
    first = fresh("pilotage")
    first["usage"]["input_tokens"] = 1.5
    last = fresh("correction")
    last["outil"] = "Grep"

    error = faults_of({"evenements": [first, fresh("delegation"), last]})

    assert where(error) == [(0, "usage.input_tokens"), (2, "outil")]


def test_one_bad_event_refuses_the_whole_batch() -> None:
    bad = fresh("correction")
    del bad["cout"]

    error = faults_of({"evenements": [fresh("delegation"), fresh("pilotage"), bad]})

    assert where(error) == [(2, "cout")]


def test_faults_carry_a_non_empty_message() -> None:
    event = fresh("correction")
    event["tokens_lus"] = True

    (fault,) = validate_event(0, event)

    assert isinstance(fault, Fault)
    assert isinstance(fault.message, str) and fault.message.strip() != ""
    assert fault.as_dict() == {"index": 0, "champ": "tokens_lus", "message": fault.message}


def test_faults_are_capped_at_max_faults_and_the_rest_counted_as_omitted() -> None:
    # Each event has two faults: 2 * (MAX_FAULTS // 2 + 10) = MAX_FAULTS + 20 in all.
    events = []
    for _ in range(MAX_FAULTS // 2 + 10):
        event = fresh("correction")
        event["tokens_lus"] = -1
        event["tokens_ecrits"] = "5"
        events.append(event)

    error = faults_of({"evenements": events})

    assert len(error.faults) == MAX_FAULTS
    assert error.omitted == 20
    assert error.faults[0] == Fault(0, "tokens_lus", error.faults[0].message)
    assert error.faults[1].champ == "tokens_ecrits"


def test_exactly_max_faults_omits_nothing() -> None:
    events = []
    for _ in range(MAX_FAULTS):
        event = fresh("correction")
        event["cout"] = None
        events.append(event)

    error = faults_of({"evenements": events})

    assert len(error.faults) == MAX_FAULTS
    assert error.omitted == 0
    assert [f.index for f in error.faults] == list(range(MAX_FAULTS))


def test_batch_of_501_bad_events_caps_faults_after_the_batch_level_one() -> None:
    events = []
    for _ in range(MAX_BATCH + 1):
        event = fresh("correction")
        event["outil"] = "Grep"
        events.append(event)

    error = faults_of({"evenements": events})

    assert error.faults[0].index is None
    assert error.faults[0].champ == "evenements"
    assert len(error.faults) == MAX_FAULTS
    assert error.omitted == (MAX_BATCH + 1) + 1 - MAX_FAULTS


def test_a_content_length_of_thousands_of_digits_is_too_large_not_an_error() -> None:
    import asyncio

    from starlette.requests import Request

    from miam_economies.api.http.body import BodyTooLarge, read_capped

    scope = {"type": "http", "method": "POST", "path": "/economies", "headers": [
        (b"content-length", b"0" * 5_000 + b"5")]}
    with pytest.raises(BodyTooLarge):
        asyncio.run(read_capped(Request(scope), 4, timeout=1))


# --- Strict JSON: the refusal names what was read -----------------------------------------


@pytest.mark.parametrize(("raw", "text"), [
    (b"\xff{}", "the text is not UTF-8: invalid start byte at byte 0"),
    (b"{not json", "the text is not JSON: Expecting property name enclosed in double quotes: "
                   "line 1 column 2 (char 1)"),
    (b"[" * 100_000, "the text is nested too deeply"),
])
def test_a_strict_json_refusal_calls_what_was_read_by_its_name(raw: bytes, text: str) -> None:
    for what in ("text", "body", "line"):
        with pytest.raises(NotStrictJson) as refused:
            loads_strict(raw, what) if what != "text" else loads_strict(raw)
        assert str(refused.value) == text.replace("the text is", f"the {what} is", 1)


@pytest.mark.parametrize("date", ["2026-10-30T09:12:04.512Z", "2026-10-30T10:12:04+01:00",
                                  "yesterday", "2026-02-30T00:00:00Z", "0001-01-01T00:00:00Z",
                                  None, 3])
def test_instant_fault_is_the_events_date_rule(date: Any) -> None:
    event = fresh("correction")
    event["date"] = date
    said = [f.message for f in validate_event(0, event) if f.champ == "date"]
    assert said == ([] if instant_fault(date) is None else [instant_fault(date)])

