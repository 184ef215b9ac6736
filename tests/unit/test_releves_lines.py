"""One transcript line read (``domain.releves_lines``): the key and its fallbacks, the agent,
the timestamp in UTC, and every way a line is ignored (SPEC, "Claude Code's own record...",
"What is read")."""

from __future__ import annotations

import json
from typing import Any

import pytest

from miam_economies.domain.releves import Observation, ReplyKey
from miam_economies.domain.releves_lines import (
    BAD_COUNTER,
    BAD_FIELD,
    NO_USAGE,
    NOT_A_REPLY,
    NOT_JSON,
    Ignored,
    agent_of_file,
    parse_line,
    surely_not_a_reply,
)


def line(**changes: Any) -> dict[str, Any]:
    """A reply line; ``changes`` set top-level fields (``message``'s through ``message=``),
    a value of ``...`` removes the field."""
    document: dict[str, Any] = {
        "parentUuid": None, "isSidechain": False, "sessionId": "s-1", "type": "assistant",
        "message": {"model": "claude-opus-4-5", "id": "msg_1", "role": "assistant",
                    "content": [], "stop_reason": "end_turn",
                    "usage": {"input_tokens": 1, "output_tokens": 2,
                              "cache_read_input_tokens": 3,
                              "cache_creation_input_tokens": 4}},
        "requestId": "req_1", "uuid": "u-1", "timestamp": "2026-11-20T09:00:00.123Z"}
    for name, value in changes.items():
        if value is ...:
            del document[name]
        else:
            document[name] = value
    return document


def message(**changes: Any) -> dict[str, Any]:
    """The default line's ``message`` with ``changes`` (``...`` removes a field)."""
    result = dict(line()["message"])
    for name, value in changes.items():
        if value is ...:
            del result[name]
        else:
            result[name] = value
    return result


def usage(**changes: Any) -> dict[str, Any]:
    """The default ``usage`` with ``changes`` (``...`` removes a counter)."""
    result = dict(line()["message"]["usage"])
    for name, value in changes.items():
        if value is ...:
            del result[name]
        else:
            result[name] = value
    return result


def parse(document: Any, agent: str | None = None) -> Observation | Ignored:
    return parse_line(json.dumps(document), agent)


def observed(document: Any, agent: str | None = None) -> Observation:
    outcome = parse(document, agent)
    assert isinstance(outcome, Observation), outcome
    return outcome


def test_a_reply_line_is_an_observation() -> None:
    got = observed(line())
    assert got.key == ReplyKey("s-1", "message_id", "msg_1")
    assert (got.usage.input_tokens, got.usage.output_tokens, got.usage.cache_read_input_tokens,
            got.usage.cache_creation_input_tokens) == (1, 2, 3, 4)
    assert (got.timestamp, got.model, got.agent_id, got.stop_reason, got.is_sidechain) == (
        "2026-11-20T09:00:00.123Z", "claude-opus-4-5", None, "end_turn", False)


@pytest.mark.parametrize(("changes", "key"), [
    ({}, ReplyKey("s-1", "message_id", "msg_1")),
    ({"message": message(id=...)}, ReplyKey("s-1", "request_id", "req_1")),
    ({"message": message(id=None)}, ReplyKey("s-1", "request_id", "req_1")),
    ({"message": message(id="")}, ReplyKey("s-1", "request_id", "req_1")),
    ({"message": message(id=...), "requestId": ...}, ReplyKey("s-1", "uuid", "u-1")),
    ({"message": message(id=...), "requestId": None}, ReplyKey("s-1", "uuid", "u-1")),
])
def test_the_key_falls_back_from_message_id_to_request_id_to_uuid(
        changes: dict[str, Any], key: ReplyKey) -> None:
    assert observed(line(**changes)).key == key


@pytest.mark.parametrize(("line_agent", "file_agent", "agent"), [
    (..., None, None), (..., "a7c1e90", "a7c1e90"), ("b1", "a7c1e90", "b1"), ("b1", None, "b1"),
    (None, "a7c1e90", "a7c1e90"),
])
def test_the_agent_is_the_lines_else_the_files_else_the_main_one(
        line_agent: Any, file_agent: str | None, agent: str | None) -> None:
    document = line() if line_agent is ... else line(agentId=line_agent)
    assert observed(document, file_agent).agent_id == agent


@pytest.mark.parametrize(("stamp", "utc"), [
    ("2026-11-20T09:00:00.123Z", "2026-11-20T09:00:00.123Z"),
    ("2026-11-20T11:00:00.123+02:00", "2026-11-20T09:00:00.123Z"),
    ("2026-11-20T09:00:00Z", "2026-11-20T09:00:00.000Z"),
    ("2026-11-20T09:00:00.123456789Z", "2026-11-20T09:00:00.123Z"),
])
def test_the_timestamp_is_kept_in_utc_with_milliseconds(stamp: str, utc: str) -> None:
    assert observed(line(timestamp=stamp)).timestamp == utc


def test_missing_counters_are_zero_and_other_usage_fields_are_left() -> None:
    got = observed(line(message=message(usage={"output_tokens": 7, "service_tier": None,
                                               "cache_creation": {"x": 1}})))
    assert (got.usage.input_tokens, got.usage.output_tokens, got.usage.cache_read_input_tokens,
            got.usage.cache_creation_input_tokens) == (0, 7, 0, 0)
    assert observed(line(message=message(usage={}))).usage.output_tokens == 0


def test_null_or_empty_optional_fields_are_none_and_a_missing_sidechain_false() -> None:
    got = observed(line(message=message(model=None, stop_reason=...), isSidechain=...,
                        agentId=""))
    assert (got.model, got.stop_reason, got.agent_id, got.is_sidechain) == (
        None, None, None, False)
    assert got.incomplete
    assert observed(line(isSidechain=True)).is_sidechain


@pytest.mark.parametrize("counter", [-1, 1.0, 3.5, "3", True, False, None, [1], {"n": 1},
                                     2**53])
@pytest.mark.parametrize("name", ["input_tokens", "output_tokens", "cache_read_input_tokens",
                                  "cache_creation_input_tokens"])
def test_a_negative_or_non_integer_counter_is_ignored(name: str, counter: Any) -> None:
    assert parse(line(message=message(usage=usage(**{name: counter})))) == BAD_COUNTER


def test_the_largest_safe_integer_is_a_counter() -> None:
    got = observed(line(message=message(usage=usage(output_tokens=2**53 - 1))))
    assert got.usage.output_tokens == 2**53 - 1


@pytest.mark.parametrize("text", [
    "", "   ", "not json", "{", '{"type": "assistant", "message": {"usage":',
    '{"type":"assistant"} trailing', "1" * 5000 + ' "assistant"', "[" * 100_000 + "assistant",
])
def test_what_is_not_json_is_ignored(text: str) -> None:
    assert isinstance(parse_line(text), Ignored)
    if "assistant" in text:
        assert parse_line(text) == NOT_JSON


@pytest.mark.parametrize("document", [
    [1, 2], "assistant", 3, None, {"type": "user", "message": {"usage": {}}},
    {"type": "summary", "summary": "assistant work", "leafUuid": "u"},
    {"type": "system", "subtype": "turn_duration", "content": "assistant"},
    {"type": "assistant"}, {"type": "assistant", "message": "hi"},
    {"type": ["assistant"], "message": {"usage": {}}},
])
def test_what_is_not_a_reply_line_is_ignored(document: Any) -> None:
    assert parse(document) == NOT_A_REPLY


@pytest.mark.parametrize("bad_usage", [..., None, [], "usage", 0])
def test_an_assistant_line_without_usage_is_ignored(bad_usage: Any) -> None:
    assert parse(line(message=message(usage=bad_usage))) == NO_USAGE


@pytest.mark.parametrize("changes", [
    {"sessionId": ...}, {"sessionId": None}, {"sessionId": ""}, {"sessionId": 7},
    {"uuid": ...}, {"uuid": None}, {"timestamp": ...}, {"timestamp": None},
    {"timestamp": 1763629200000}, {"timestamp": "yesterday"},
    {"timestamp": "2026-11-20T09:00:00"},  # no offset: which instant?
    {"timestamp": "2026-11-20"}, {"timestamp": "2026-13-20T09:00:00Z"},
    {"requestId": 5}, {"agentId": ["a1"]}, {"isSidechain": "yes"}, {"isSidechain": 1},
    {"message": message(id=12)}, {"message": message(model={"name": "x"})},
    {"message": message(stop_reason=True)},
    {"sessionId": "s\ud800"}, {"sessionId": "s\u0000"}, {"message": message(id="x" * 513)},
])
def test_a_reply_line_with_a_field_not_of_its_kind_is_ignored(changes: dict[str, Any]) -> None:
    assert parse(line(**changes)) == BAD_FIELD


def test_a_file_agent_that_no_backend_can_keep_is_a_bad_field() -> None:
    assert parse(line(), "a\u0000") == BAD_FIELD


def test_a_counter_is_checked_before_the_fields() -> None:
    assert parse(line(sessionId=..., message=message(usage=usage(input_tokens=-1)))) == (
        BAD_COUNTER)


def test_a_line_cannot_be_a_reply_without_the_word_assistant_or_an_escape() -> None:
    assert surely_not_a_reply('{"type":"user"}')
    assert surely_not_a_reply(b'{"type":"user"}')
    assert not surely_not_a_reply('{"type":"assistant"}')
    assert not surely_not_a_reply(b'{"type":"\\u0061ssistant"}')
    escaped = json.dumps(line()).replace('"assistant"', '"\\u0061ssistant"')
    assert "assistant" not in escaped and not surely_not_a_reply(escaped)
    assert isinstance(parse_line(escaped), Observation)


def test_the_line_end_is_allowed() -> None:
    assert isinstance(parse_line(json.dumps(line()) + "\r\n"), Observation)


@pytest.mark.parametrize(("parts", "agent"), [
    (("home", "projects", "p", "s", "subagents", "agent-a7c1e90.jsonl"), "a7c1e90"),
    (("s", "subagents", "workflows", "wf_1", "agent-b2.jsonl"), "b2"),
    (("projects", "p", "agent-a7c1e90.jsonl"), None),  # 2.0's layout: lines carry agentId
    (("projects", "p", "s.jsonl"), None),
    (("s", "subagents", "agent-.jsonl"), None),
    (("s", "subagents", "agent-a1.meta.json"), None),
    (("s", "subagents", "journal.jsonl"), None),
    (("agent-a1.jsonl",), None),
    (("subagents",), None),
])
def test_the_agent_of_a_file_is_in_its_name_under_subagents(
        parts: tuple[str, ...], agent: str | None) -> None:
    assert agent_of_file(parts) == agent
