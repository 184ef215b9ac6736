"""Relevé values (``domain.releves``): the merge of a reply's observations, the cost rule, the
stable id, and the payload read back (SPEC, "Claude Code's own record...", "Merged, not
summed", "Stored as events", "A session"; ADR-0169)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from miam_economies.domain.events import Usage
from miam_economies.domain.releves import (
    Observation,
    ReleveError,
    ReplyKey,
    as_payload,
    cost,
    from_payload,
    merge,
    merge_replies,
    observation_id,
    utc_millis,
)

KEY = ReplyKey("s-1", "message_id", "msg_1")


def obs(i: int = 0, o: int = 0, r: int = 0, c: int = 0, *, key: ReplyKey = KEY,
        at: str = "2026-11-20T09:00:00.000Z", model: str | None = "m",
        agent: str | None = None, stop: str | None = None,
        sidechain: bool = False) -> Observation:
    return Observation(key, Usage(i, o, r, c), at, model, agent, stop, sidechain)


def test_merge_keeps_each_counter_at_its_largest_never_a_sum() -> None:
    merged = merge(obs(1, 8, 300, 40), obs(1, 412, 299, 41))
    assert merged.usage == Usage(1, 412, 300, 41)


def test_a_reply_on_five_lines_counts_once() -> None:
    line = obs(3, 412, 15000, 1200, stop="tool_use")
    replies = merge_replies([line] * 5)
    assert list(replies.values()) == [line]
    assert sum(cost(r) for r in replies.values()) == cost(line) == 3 + 1200 + 412 + 1500


def test_merge_keeps_the_earliest_timestamp() -> None:
    early = obs(at="2026-11-20T09:00:00.001Z")
    late = obs(at="2026-11-20T09:00:00.010Z")
    assert merge(late, early).timestamp == merge(early, late).timestamp == early.timestamp


def test_merge_keeps_a_non_null_value_over_null_whatever_the_order() -> None:
    a = obs(model=None, agent="a1", stop=None)
    b = obs(model="claude-x", agent=None, stop="end_turn")
    for merged in (merge(a, b), merge(b, a)):
        assert (merged.model, merged.agent_id, merged.stop_reason) == (
            "claude-x", "a1", "end_turn")
        assert not merged.incomplete


def test_lines_that_disagree_keep_the_smallest_value_in_code_point_order() -> None:
    # The SPEC says a reply's lines agree; where they do not, the choice is order-proof.
    a, b = obs(model="claude-b", stop="tool_use", agent="a2"), obs(model="claude-a",
                                                                    stop="end_turn", agent="a1")
    assert merge(a, b) == merge(b, a)
    assert (merge(a, b).model, merge(a, b).stop_reason, merge(a, b).agent_id) == (
        "claude-a", "end_turn", "a1")
    assert merge(obs(model="Z"), obs(model="a")).model == "Z"  # code points: "Z" < "a"


def test_a_sidechain_flag_on_any_line_stays() -> None:
    assert merge(obs(sidechain=False), obs(sidechain=True)).is_sidechain


def test_merge_refuses_two_replies() -> None:
    with pytest.raises(ReleveError, match="one reply"):
        merge(obs(), obs(key=ReplyKey("s-1", "message_id", "msg_2")))


def test_merge_is_idempotent() -> None:
    a = obs(1, 2, 3, 4, stop="end_turn")
    assert merge(a, a) == a


def test_replies_are_keyed_by_session_kind_and_value() -> None:
    keys = [ReplyKey("s-1", "message_id", "x"), ReplyKey("s-2", "message_id", "x"),
            ReplyKey("s-1", "request_id", "x"), ReplyKey("s-1", "uuid", "x")]
    assert len(merge_replies(obs(key=k) for k in keys)) == 4


@pytest.mark.parametrize(("cache_read", "tenth"), [
    (0, 0), (4, 0), (5, 1), (14, 1), (15, 2), (25, 3), (16205, 1621), (2048, 205),
    (2**53 - 1, 900719925474099),
])
def test_the_cost_adds_a_tenth_of_the_cache_reads_halves_up(cache_read: int,
                                                            tenth: int) -> None:
    assert cost(obs(7, 11, cache_read, 13)) == 7 + 11 + 13 + tenth


def test_the_same_observation_has_the_same_id() -> None:
    a = obs(1, 2, 3, 4, stop="end_turn", agent="a1", sidechain=True)
    assert observation_id(a) == observation_id(dataclasses.replace(a))
    assert observation_id(a).version == 5


@pytest.mark.parametrize("change", [
    {"usage": Usage(1, 3, 3, 4)}, {"usage": Usage(2, 2, 3, 4)}, {"usage": Usage(1, 2, 4, 4)},
    {"usage": Usage(1, 2, 3, 5)}, {"timestamp": "2026-11-20T09:00:00.001Z"},
    {"model": None}, {"model": "n"}, {"agent_id": None}, {"agent_id": "a2"},
    {"stop_reason": None}, {"stop_reason": "tool_use"}, {"is_sidechain": False},
    {"key": ReplyKey("s-2", "message_id", "msg_1")},
    {"key": ReplyKey("s-1", "request_id", "msg_1")},
    {"key": ReplyKey("s-1", "message_id", "msg_2")},
])
def test_anything_else_observed_gives_another_id(change: dict[str, Any]) -> None:
    a = obs(1, 2, 3, 4, stop="end_turn", agent="a1", sidechain=True)
    assert observation_id(dataclasses.replace(a, **change)) != observation_id(a)


def test_the_id_does_not_hang_on_a_separator() -> None:
    # Texts that would read alike joined by a separator give two ids.
    a = obs(key=ReplyKey("s/1", "message_id", "m"))
    b = obs(key=ReplyKey("s", "message_id", "1/m"))
    assert observation_id(a) != observation_id(b)


def test_the_payload_reads_back_as_the_observation() -> None:
    for a in (obs(1, 2, 3, 4, stop="end_turn", agent="a1", sidechain=True),
              obs(model=None, key=ReplyKey("s", "uuid", "u-\u00e9"))):
        payload = as_payload(a)
        assert payload["usage"] == {"input_tokens": a.usage.input_tokens,
                                    "output_tokens": a.usage.output_tokens,
                                    "cache_read_input_tokens": a.usage.cache_read_input_tokens,
                                    "cache_creation_input_tokens":
                                        a.usage.cache_creation_input_tokens}
        assert from_payload(payload) == a


@pytest.mark.parametrize(("change", "field"), [
    ({"key_kind": "line"}, "key_kind"), ({"key": ""}, "key"), ({"session_id": None},
                                                              "session_id"),
    ({"usage": None}, "usage"), ({"usage": {"input_tokens": 1}}, "usage.output_tokens"),
    ({"timestamp": "2026-11-20T09:00:00Z"}, "timestamp"), ({"timestamp": 5}, "timestamp"),
    ({"is_sidechain": None}, "is_sidechain"), ({"model": 3}, "model"),
    ({"agent_id": "a\u0000"}, "agent_id"),
])
def test_a_payload_not_of_the_shape_is_refused_naming_the_field(change: dict[str, Any],
                                                                field: str) -> None:
    payload = {**as_payload(obs(1, 2, 3, 4)), **change}
    with pytest.raises(ReleveError, match=field.replace(".", r"\.")):
        from_payload(payload)


@pytest.mark.parametrize("counter", [-1, True, 1.0, 2**53, None])
def test_a_stored_counter_must_be_a_safe_integer(counter: Any) -> None:
    payload = as_payload(obs())
    payload["usage"] = {**payload["usage"], "cache_read_input_tokens": counter}
    with pytest.raises(ReleveError, match="cache_read_input_tokens"):
        from_payload(payload)


def test_from_payload_refuses_what_is_not_an_object() -> None:
    with pytest.raises(ReleveError):
        from_payload([])  # type: ignore[arg-type]


@pytest.mark.parametrize(("text", "utc"), [
    ("2026-11-20T09:00:00.123Z", "2026-11-20T09:00:00.123Z"),
    ("2026-11-20T00:30:00-10:00", "2026-11-20T10:30:00.000Z"),
    ("2026-11-20T09:00:00", None), ("2026-11-20", None), ("", None), ("noon", None),
    ("0001-01-01T00:00:00+01:00", None),  # before year 1 in UTC
])
def test_utc_millis(text: str, utc: str | None) -> None:
    assert utc_millis(text) == utc
