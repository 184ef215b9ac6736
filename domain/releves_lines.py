"""One line of a Claude Code transcript: an observation of a reply, or ignored (pure).

SPEC, "Claude Code's own record: relevés, sessions, and the share saved", "What is read":
a reply line is a JSON object with ``"type": "assistant"`` and a ``message`` object
holding ``usage`` (``input_tokens``, ``output_tokens``, ``cache_read_input_tokens``,
``cache_creation_input_tokens``: integers >= 0, a missing counter is 0), with
``sessionId``, ``uuid``, ``timestamp`` and, where present, ``message.id``,
``message.model``, ``requestId``, ``agentId``, ``isSidechain`` and
``message.stop_reason``. Every other line, a line that is not JSON, and a reply line with
a negative or non-integer counter is ignored: counted, never an error. Pure: the reader
of files (``api.service.transcripts``) hands each line here with its file's agent id.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from miam_economies.domain.errors import MiamEconomiesError
from miam_economies.domain.events import Usage
from miam_economies.domain.releves import COUNTERS, KeyKind, Observation, ReplyKey, utc_millis
from miam_economies.domain.schema import MAX_SAFE_INTEGER
from miam_economies.domain.storable_text import text_fault


@dataclass(frozen=True, slots=True)
class Ignored:
    """A line that is no observation of a reply, and why (``reason``, one of the
    constants below: a diagnostic, not part of the contract, which counts them all as
    ``ignorees``)."""

    reason: str


NOT_JSON = Ignored("not_json")
"""Not a JSON document (a line cut mid-write, a stray text; an integer of over 4,300
digits, which Python's decoder refuses; nesting too deep to decode)."""
NOT_A_REPLY = Ignored("not_a_reply")
"""JSON, but not an object with ``"type": "assistant"`` and a ``message`` object (user,
system, summary, file-history-snapshot... lines). Also a line that cannot hold the text
``assistant`` (``surely_not_a_reply``), whether JSON or not: it is not decoded."""
NO_USAGE = Ignored("no_usage")
"""An assistant line whose ``message`` has no ``usage`` object."""
BAD_COUNTER = Ignored("bad_counter")
"""A counter that is negative, not an integer (``3.0``, ``"3"``, ``true``, ``null``), or
over 2^53 - 1 (no JSON writer of the transcripts gives it exactly)."""
BAD_FIELD = Ignored("bad_field")
"""``sessionId``, ``uuid`` or ``timestamp`` missing, or a field of the SPEC's list not
of its kind: an id, the model, the agent or the stop reason that is not a string (or is
not storable: ``domain.storable_text``), a ``timestamp`` that is not an ISO 8601 instant
with an offset, an ``isSidechain`` that is not a boolean."""


class _BadField(MiamEconomiesError):
    """Raised by ``_text`` inside ``parse_line``, which turns it into ``BAD_FIELD``
    (never out of it; of our root all the same, as every exception of ours: ADR-0123)."""


def surely_not_a_reply(line: str | bytes) -> bool:
    """Whether ``line`` cannot be a reply line, without decoding it: it holds neither
    the text ``assistant`` nor a ``\\u`` escape (the only way JSON can write that word
    otherwise). Most lines of a transcript (tool results) are skipped so."""
    if isinstance(line, bytes):
        return b"assistant" not in line and b"\\u" not in line
    return "assistant" not in line and "\\u" not in line


def agent_of_file(parts: Sequence[str]) -> str | None:
    """The agent id a transcript file's name gives, from its path's ``parts`` (folders,
    then the file name): ``<id>`` for a file ``agent-<id>.jsonl`` under a folder named
    ``subagents`` (directly, or in the ``workflows/wf_*/`` folders newer versions
    write beneath it), else None (SPEC, "What is read"). A line's own ``agentId``
    comes first (``parse_line``)."""
    if len(parts) < 2 or "subagents" not in parts[:-1]:
        return None
    name = parts[-1]
    if not (name.startswith("agent-") and name.endswith(".jsonl")):
        return None
    return name[len("agent-"):-len(".jsonl")] or None


def _text(value: Any) -> str | None:
    """``value`` as the SPEC reads an optional string field: None when absent, null or
    empty; the string when it is storable; raises ``_BadField`` for anything else."""
    if value is None or value == "":
        return None
    if not isinstance(value, str) or text_fault(value) is not None:
        raise _BadField
    return value


def _usage(usage: dict[str, Any]) -> Usage | None:
    """The four counters of a ``usage`` object (a missing one is 0), or None when one is
    not an integer from 0 to 2^53 - 1 (a boolean is not an integer)."""
    counts: dict[str, int] = {}
    for name in COUNTERS:
        value = usage.get(name, 0)
        if type(value) is not int or not 0 <= value <= MAX_SAFE_INTEGER:
            return None
        counts[name] = value
    return Usage(**counts)


def parse_line(line: str, file_agent_id: str | None = None) -> Observation | Ignored:
    """The observation of a reply that ``line`` (one line of a transcript, its end of
    line kept or not) is, or why it is ignored (``Ignored``; never raises).

    ``file_agent_id``: the agent id of the line's file (``agent_of_file``), None for a
    main agent's file. The observation's key is (``sessionId``, ``message.id``), else
    (``sessionId``, ``requestId``), else (``sessionId``, ``uuid``); its agent is the
    line's ``agentId``, else ``file_agent_id``, else None (the main agent); its
    timestamp is the line's, in UTC with milliseconds (``releves.utc_millis``); an
    absent, null or empty optional field is None, an absent ``isSidechain`` false.
    Source: SPEC, "Claude Code's own record...", "What is read" and "Merged, not
    summed"; the ignored outcomes are this module's constants.
    """
    if surely_not_a_reply(line):
        return NOT_A_REPLY
    try:
        document = json.loads(line)
    except (ValueError, RecursionError):
        return NOT_JSON
    if not isinstance(document, dict) or document.get("type") != "assistant":
        return NOT_A_REPLY
    message = document.get("message")
    if not isinstance(message, dict):
        return NOT_A_REPLY
    raw_usage = message.get("usage")
    if not isinstance(raw_usage, dict):
        return NO_USAGE
    usage = _usage(raw_usage)
    if usage is None:
        return BAD_COUNTER
    try:
        return _observation(document, message, usage, file_agent_id)
    except _BadField:
        return BAD_FIELD


def _observation(document: dict[str, Any], message: dict[str, Any], usage: Usage,
                 file_agent_id: str | None) -> Observation:
    """The observation of a reply line whose usage was read; raises ``_BadField``."""
    session_id, line_uuid = _text(document.get("sessionId")), _text(document.get("uuid"))
    stamp = document.get("timestamp")
    timestamp = utc_millis(stamp) if isinstance(stamp, str) else None
    if session_id is None or line_uuid is None or timestamp is None:
        raise _BadField
    message_id, request_id = _text(message.get("id")), _text(document.get("requestId"))
    kind: KeyKind
    if message_id is not None:
        kind, value = "message_id", message_id
    elif request_id is not None:
        kind, value = "request_id", request_id
    else:
        kind, value = "uuid", line_uuid
    sidechain = document.get("isSidechain")
    if sidechain is not None and not isinstance(sidechain, bool):
        raise _BadField
    return Observation(
        key=ReplyKey(session_id, kind, value), usage=usage, timestamp=timestamp,
        model=_text(message.get("model")),
        agent_id=_text(document.get("agentId")) or _text(file_agent_id),
        stop_reason=_text(message.get("stop_reason")), is_sidechain=sidechain is True)
