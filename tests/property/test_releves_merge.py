"""The merge law of relevés is a law: any order of a reply's lines, any split of them over
files and imports, any repetition, gives the same replies, and a reply is never a sum of
its lines (SPEC, "Claude Code's own record...", "Merged, not summed" and "Stored as
events"; ADR-0169).

The lines are written to real files and read by the real reader; each import stores its
observations under their stable ids (a doublon is stored once), and the fold merges what
is stored. What every arrangement must give is computed here from the generated lines
alone (largest counter, earliest instant, the non-null value), not by the code under test.
"""

from __future__ import annotations

import json
import tempfile
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, NamedTuple

from hypothesis import given, settings
from hypothesis import strategies as st

from miam_economies.api.service.transcripts import read_transcripts
from miam_economies.domain.events import Usage
from miam_economies.domain.releves import (
    COUNTERS,
    Observation,
    ReplyKey,
    merge,
    merge_replies,
    observation_id,
)

BASE = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
COUNTER = st.integers(min_value=0, max_value=2**53 - 1) | st.integers(0, 50)
OFFSETS = st.sampled_from([timedelta(0), timedelta(hours=2), timedelta(hours=-10)])
NOISE = [json.dumps({"type": "user", "sessionId": "s-1", "message": {"content": "ok"}}),
         "not json", "", json.dumps({"type": "summary", "summary": "assistant at work"})]


class Line(NamedTuple):
    key: ReplyKey
    text: str
    counters: tuple[int, int, int, int]
    moment: datetime
    model: str | None
    agent: str | None
    stop: str | None
    sidechain: bool


@st.composite
def reply_lines(draw: st.DrawFn, n: int) -> list[Line]:
    """The lines of reply ``n``: 1 to 5 of them, agreeing on each non-null value."""
    session = draw(st.sampled_from(["s-1", "s-2"]))
    kind = draw(st.sampled_from(["message_id", "message_id", "request_id", "uuid"]))
    model = draw(st.sampled_from(["claude-opus-4-5", "claude-haiku-4-5"]))
    agent = draw(st.none() | st.sampled_from(["a1", "b2"]))
    stop = draw(st.none() | st.sampled_from(["end_turn", "tool_use"]))
    sidechain = agent is not None and draw(st.booleans())
    lines = []
    for k in range(draw(st.integers(1, 5))):
        counters = tuple(draw(COUNTER) for _ in COUNTERS)
        moment = BASE + timedelta(milliseconds=draw(st.integers(0, 10**7)))
        offset = draw(OFFSETS)
        stamp = moment.astimezone(timezone(offset)).isoformat(timespec="milliseconds")
        line_model = model if draw(st.integers(0, 3)) else None
        line_agent = agent if draw(st.booleans()) else None
        line_stop = stop if draw(st.booleans()) else None
        message: dict[str, Any] = {
            "model": line_model, "stop_reason": line_stop,
            "usage": {name: value for name, value in zip(COUNTERS, counters, strict=True)
                      if value or draw(st.booleans())}}  # a zero may be left out
        document: dict[str, Any] = {"type": "assistant", "sessionId": session,
                                    "uuid": f"u-{n}" if kind == "uuid" else f"u-{n}-{k}",
                                    "timestamp": stamp, "isSidechain": sidechain,
                                    "message": message}
        if kind == "message_id":
            message["id"] = f"msg_{n}"
        if kind in ("message_id", "request_id"):
            document["requestId"] = f"req_{n}"
        if line_agent is not None:
            document["agentId"] = line_agent
        value = {"message_id": f"msg_{n}", "request_id": f"req_{n}", "uuid": f"u-{n}"}[kind]
        lines.append(Line(ReplyKey(session, kind, value), json.dumps(document),
                          counters, moment, line_model, line_agent, line_stop, sidechain))
    return lines


def expected(lines: list[Line]) -> dict[ReplyKey, Observation]:
    """Each reply as the SPEC defines it, worked out from the lines themselves."""
    replies = {}
    for key in {line.key for line in lines}:
        mine = [line for line in lines if line.key == key]

        def non_null(values: list[str | None]) -> str | None:
            found = {v for v in values if v is not None}
            assert len(found) <= 1  # the generated lines agree
            return found.pop() if found else None

        first = min(line.moment for line in mine)
        replies[key] = Observation(
            key, Usage(*(max(line.counters[i] for line in mine) for i in range(4))),
            first.strftime("%Y-%m-%dT%H:%M:%S.") + f"{first.microsecond // 1000:03d}Z",
            non_null([line.model for line in mine]), non_null([line.agent for line in mine]),
            non_null([line.stop for line in mine]), any(line.sidechain for line in mine))
    return replies


@st.composite
def arrangement(draw: st.DrawFn) -> tuple[list[Line], list[list[list[str]]]]:
    """Lines of up to 4 replies, shuffled with noise, and split into imports of files:
    imports[i][f] is the text lines of file f of import i. A line may be in several."""
    lines = [line for n in range(draw(st.integers(1, 4))) for line in draw(reply_lines(n))]
    texts = [line.text for line in lines] + draw(st.lists(st.sampled_from(NOISE), max_size=4))
    texts += draw(st.lists(st.sampled_from(texts), max_size=3))  # lines read again
    texts = draw(st.permutations(texts))
    cuts = sorted(draw(st.lists(st.integers(0, len(texts)), max_size=5)))
    files = [texts[a:b] for a, b in zip([0, *cuts], [*cuts, len(texts)], strict=True)]
    split = sorted(draw(st.lists(st.integers(0, len(files)), max_size=2)))
    imports = [files[a:b] for a, b in zip([0, *split], [*split, len(files)], strict=True)]
    return lines, imports


def imported(imports: list[list[list[str]]]) -> tuple[dict[ReplyKey, Observation], int, int]:
    """Each import read from real files and stored by id; the fold of what is stored, the
    number of observations stored and of doublons."""
    stored: dict[Any, Observation] = {}
    doublons = 0
    with tempfile.TemporaryDirectory() as folder:
        for i, files in enumerate(imports):
            paths = []
            for f, texts in enumerate(files):
                path = Path(folder, f"import-{i}", f"file-{f}.jsonl")
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text("".join(text + "\n" for text in texts), encoding="utf-8")
                paths.append(path)
            if not paths:
                continue
            for observation in read_transcripts(paths):
                identity = observation_id(observation)
                doublons += identity in stored
                stored.setdefault(identity, observation)
    return merge_replies(stored.values()), len(stored), doublons


@settings(max_examples=150)
@given(arrangement())
def test_any_order_and_split_over_files_and_imports_gives_the_same_replies(
        case: tuple[list[Line], list[list[list[str]]]]) -> None:
    lines, imports = case
    replies, stored, _ = imported(imports)
    assert replies == expected(lines)
    assert stored <= len(lines)  # a line read again is a doublon, never a new observation
    again, stored_again, _ = imported(imports + imports)
    assert (again, stored_again) == (replies, stored)


@given(reply_lines(0), st.integers(2, 6))
def test_a_reply_is_never_the_sum_of_its_lines(lines: list[Line], copies: int) -> None:
    repeated = [lines[0]] * copies + lines
    replies, _, doublons = imported([[[line.text for line in repeated]]])
    assert list(replies.values()) == list(expected(lines).values())
    assert doublons >= copies
    for i, name in enumerate(COUNTERS):
        assert getattr(replies[lines[0].key].usage, name) == max(x.counters[i] for x in lines)


VALUES = st.none() | st.sampled_from(["a", "b", "Z", "\u00e9", "end_turn", "tool_use"])


@st.composite
def observations(draw: st.DrawFn) -> list[Observation]:
    """Observations of one reply that may disagree on every value."""
    key = ReplyKey("s-1", "message_id", "msg_1")
    return [Observation(key, Usage(*(draw(COUNTER) for _ in COUNTERS)),
                        f"2026-11-20T09:00:{draw(st.integers(0, 59)):02d}.000Z",
                        draw(VALUES), draw(VALUES), draw(VALUES), draw(st.booleans()))
            for _ in range(draw(st.integers(1, 8)))]


@given(observations(), st.randoms(use_true_random=False))
def test_the_merge_is_associative_commutative_and_idempotent(
        found: list[Observation], random: Any) -> None:
    reference = merge_replies(found)[found[0].key]
    shuffled = found + random.sample(found, k=random.randint(0, len(found)))
    random.shuffle(shuffled)
    while len(shuffled) > 1:  # any bracketing: merge two neighbours picked at random
        i = random.randrange(len(shuffled) - 1)
        shuffled[i:i + 2] = [merge(shuffled[i], shuffled[i + 1])]
    assert shuffled[0] == reference
    for field in ("model", "agent_id", "stop_reason"):
        observed = [getattr(o, field) for o in found if getattr(o, field) is not None]
        assert getattr(reference, field) == (min(observed) if observed else None)
    assert reference.timestamp == min(o.timestamp for o in found)
