"""Each transcript fault's fixture (``tests/fixtures/transcripts/``, its README) read by the
reader and merged into replies: files, lines, ignored lines, replies, incomplete replies,
and each reply's counters, cost, stop reason, agent and sidechain flag, every figure
counted by hand from the files (the cost: input + cache_creation + output +
round(cache_read / 10), halves up; SPEC, "Claude Code's own record...")."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pytest

from miam_economies.api.service.transcripts import TranscriptCounts, read_transcripts
from miam_economies.domain.releves import Observation, cost, merge_replies

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "transcripts"
SONNET, HAIKU = "claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001"


class Reply(NamedTuple):
    """A reply as counted by hand: the four counters, its cost, and what else it keeps."""

    input: int
    output: int
    cache_read: int
    cache_creation: int
    cout: int
    stop_reason: str | None
    agent: str | None = None
    sidechain: bool = False
    model: str = SONNET


class Expected(NamedTuple):
    fichiers: int
    lignes: int
    ignorees: int
    replies: dict[str, Reply]  # by the key's value (message.id)


EXPECTED = {
    "repeated_lines": Expected(1, 15, 6, {
        "msg_01RptAaaaaaaaaaaaaaaaaaa": Reply(3, 412, 15000, 1200, 3115, "tool_use"),
        "msg_01RptBbbbbbbbbbbbbbbbbbb": Reply(2, 1337, 16205, 900, 3860, "tool_use"),
        "msg_01RptCccccccccccccccccccc": Reply(1, 95, 17105, 310, 2117, "end_turn"),
    }),
    "placeholder": Expected(1, 6, 2, {
        "msg_01PhdPppppppppppppppppppp": Reply(4, 96, 0, 2048, 2148, "tool_use", "a7c1e90",
                                               True, HAIKU),
        "msg_01PhdQqqqqqqqqqqqqqqqqqqq": Reply(1, 3, 2048, 530, 739, None, "a7c1e90", True,
                                               HAIKU),
    }),
    "subagent_file": Expected(3, 12, 5, {
        "msg_01SubMaaaaaaaaaaaaaaaaaa": Reply(5, 180, 12000, 3000, 4385, "tool_use"),
        "msg_01SubMbbbbbbbbbbbbbbbbbb": Reply(1, 60, 15000, 400, 1961, "end_turn"),
        "msg_01SubSaaaaaaaaaaaaaaaaaa": Reply(3, 220, 9000, 1500, 2623, "tool_use", "a3f9b21",
                                              True, HAIKU),
        "msg_01SubSbbbbbbbbbbbbbbbbbb": Reply(1, 140, 10500, 260, 1451, "end_turn", "a3f9b21",
                                              True, HAIKU),
        # No agentId on its lines: the agent is the file name's (SPEC, "What is read").
        "msg_01SubSccccccccccccccccccc": Reply(2, 75, 0, 800, 877, "end_turn", "b52d0e4",
                                              True, HAIKU),
    }),
    "inline_sidechain": Expected(1, 9, 4, {
        "msg_01InlMaaaaaaaaaaaaaaaaaa": Reply(4, 120, 8000, 2500, 3424, "tool_use"),
        # Inline sidechain lines carry no agentId and sit in the main file: the SPEC's
        # rule gives the main agent; the flag is kept.
        "msg_01InlCaaaaaaaaaaaaaaaaaa": Reply(3, 64, 0, 1800, 1867, "tool_use", None, True),
        "msg_01InlCbbbbbbbbbbbbbbbbbb": Reply(1, 41, 1800, 700, 922, "end_turn", None, True),
        "msg_01InlMbbbbbbbbbbbbbbbbbb": Reply(1, 33, 10500, 300, 1384, "end_turn"),
    }),
    "resumed_session": Expected(2, 13, 5, {
        "msg_01ResAaaaaaaaaaaaaaaaaaa": Reply(6, 530, 20000, 4100, 6636, "tool_use"),
        "msg_01ResBbbbbbbbbbbbbbbbbbb": Reply(1, 47, 24100, 650, 3108, "end_turn"),
        "msg_01ResCccccccccccccccccccc": Reply(2, 310, 25000, 900, 3712, "tool_use"),
    }),
    "cut_line": Expected(1, 4, 3, {
        "msg_01CutKaaaaaaaaaaaaaaaaaa": Reply(2, 58, 30000, 1200, 4260, "tool_use"),
    }),
    "non_json": Expected(1, 5, 4, {
        "msg_01NjsJbbbbbbbbbbbbbbbbbb": Reply(3, 21, 4096, 512, 946, "end_turn"),
    }),
    "other_lines": Expected(1, 9, 7, {
        "msg_01OthOaaaaaaaaaaaaaaaaaa": Reply(2, 12, 8192, 256, 1089, "end_turn"),
        "2b4d6f80-e002-4e02-8e02-000000000002": Reply(0, 0, 0, 0, 0, "stop_sequence",
                                                      model="<synthetic>"),
    }),
    "negative_counter": Expected(1, 7, 4, {
        "msg_01NegNaaaaaaaaaaaaaaaaaa": Reply(2, 88, 6000, 700, 1390, "tool_use"),
        "msg_01NegNcccccccccccccccccc": Reply(1, 44, 6850, 90, 820, "tool_use"),
    }),
    "non_integer_counter": Expected(1, 7, 6, {
        "msg_01NinFffffffffffffffffff": Reply(2, 17, 9000, 300, 1219, "end_turn"),
    }),
    "missing_counter": Expected(1, 3, 1, {
        "msg_01MisGaaaaaaaaaaaaaaaaaa": Reply(10, 20, 0, 0, 30, "end_turn"),
        "msg_01MisGbbbbbbbbbbbbbbbbbb": Reply(0, 7, 0, 0, 7, "end_turn"),
    }),
}


def read(*names: str) -> tuple[TranscriptCounts, dict[str, Observation]]:
    """The counts and the merged replies (by key value) of the fixtures ``names``."""
    reading = read_transcripts([FIXTURES / name for name in names])
    replies = merge_replies(reading)
    assert len({key.value for key in replies}) == len(replies)
    return reading.counts, {key.value: reply for key, reply in replies.items()}


def test_every_fixture_folder_is_checked() -> None:
    folders = {p.name for p in FIXTURES.iterdir() if p.is_dir()}
    assert folders == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_fixture_gives_its_hand_counted_replies(name: str) -> None:
    expected = EXPECTED[name]
    counts, replies = read(name)
    assert (counts.fichiers, counts.lignes, counts.ignorees, counts.unreadable) == (
        expected.fichiers, expected.lignes, expected.ignorees, [])
    assert set(replies) == set(expected.replies)
    for value, want in expected.replies.items():
        got = replies[value]
        u = got.usage
        assert (u.input_tokens, u.output_tokens, u.cache_read_input_tokens,
                u.cache_creation_input_tokens) == want[:4], value
        assert cost(got) == want.cout, value
        assert (got.stop_reason, got.incomplete) == (want.stop_reason,
                                                     want.stop_reason is None), value
        assert (got.agent_id, got.is_sidechain, got.model) == (want.agent, want.sidechain,
                                                               want.model), value
        assert got.key.kind == "message_id"


def test_repeated_lines_are_one_reply_each_never_summed() -> None:
    _, replies = read("repeated_lines")
    # Summing the 15 lines would give 412 * 3 + 8 * 4 + 1337 + 95 = 2700 output tokens.
    assert sum(r.usage.output_tokens for r in replies.values()) == 412 + 1337 + 95
    # The earliest line of each reply gives its time (the second and sixth lines).
    assert replies["msg_01RptAaaaaaaaaaaaaaaaaaa"].timestamp == "2026-11-20T09:00:02.274Z"
    assert replies["msg_01RptBbbbbbbbbbbbbbbbbbb"].timestamp == "2026-11-20T09:00:06.822Z"


def test_the_placeholder_reply_is_counted_and_flagged_not_dropped() -> None:
    _, replies = read("placeholder")
    incomplete = [r for r in replies.values() if r.incomplete]
    assert [r.key.value for r in incomplete] == ["msg_01PhdQqqqqqqqqqqqqqqqqqqq"]
    assert incomplete[0].usage.output_tokens == 3  # the placeholder's largest, not 0


def test_a_resumed_sessions_copied_replies_count_once_in_their_own_session() -> None:
    counts, replies = read("resumed_session")
    assert counts.observations == 8  # 3 reply lines in each file's copy, 2 new ones
    sessions = {value: r.key.session_id[:8] for value, r in replies.items()}
    assert sessions == {"msg_01ResAaaaaaaaaaaaaaaaaaa": "7d2b9e41",
                        "msg_01ResBbbbbbbbbbbbbbbbbbb": "7d2b9e41",
                        "msg_01ResCccccccccccccccccccc": "e6f1a3c8"}


def test_all_fixtures_at_once_add_up() -> None:
    counts, replies = read(*EXPECTED)
    assert (counts.fichiers, counts.lignes, counts.ignorees) == (14, 90, 47)
    assert len(replies) == 26
    assert sum(r.incomplete for r in replies.values()) == 1
    assert sum(cost(r) for r in replies.values()) == sum(
        want.cout for e in EXPECTED.values() for want in e.replies.values())


def test_the_whole_folder_reads_as_the_fixtures_do() -> None:
    whole = read_transcripts([FIXTURES])
    assert len(merge_replies(whole)) == 26
    assert (whole.counts.fichiers, whole.counts.lignes) == (14, 90)  # no README, no meta
