"""Relevés: Claude Code's own record of each reply it received, merged, never summed (pure).

Claude Code writes a transcript line per content block of a reply, and each line repeats
the whole reply's ``usage`` (seed ``001_*``: summing lines overcounts 2.5x). So a reply is
what the observations of one key merge into: each counter at its largest value, the
earliest timestamp, one model, agent and stop reason (SPEC, "Claude Code's own record:
relevés, sessions, and the share saved", "Merged, not summed"). An observation is one
transcript line read (``domain.releves_lines.parse_line``) or any merge of observations of
the same key; the merge is associative, commutative and idempotent, so a fold that merges
stored observations comes out the same whatever the order of lines, files and imports,
and storing one observation twice changes nothing (ADR-0169).

Token counts are Claude tokens (integers). Pure: no I/O, no clock; it imports the
standard library and other ``domain`` modules only, for the rules they state once (the
cost rule, the storable text, instants, the canonical JSON).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias
from uuid import NAMESPACE_URL, UUID, uuid5

from miam_economies.domain.errors import MiamEconomiesError
from miam_economies.domain.events import Usage, canonical
from miam_economies.domain.formulas import cout_pilotage
from miam_economies.domain.instants import iso_utc, parse_instant
from miam_economies.domain.schema import MAX_SAFE_INTEGER
from miam_economies.domain.storable_text import text_fault

KeyKind: TypeAlias = Literal["message_id", "request_id", "uuid"]
"""Which field of its lines a reply's key holds besides ``sessionId``: ``message.id``,
else ``requestId``, else the line's ``uuid`` (SPEC, "Merged, not summed")."""

KEY_KINDS: tuple[KeyKind, ...] = ("message_id", "request_id", "uuid")
"""Every ``KeyKind``, in the order a line's fields are tried."""

COUNTERS = ("input_tokens", "output_tokens", "cache_read_input_tokens",
            "cache_creation_input_tokens")
"""The four usage counters of a reply, tokens, as the Claude API and the transcripts name
them; each kept apart, never added to another at reading."""

PAYLOAD_VERSION = 1
"""The version of ``as_payload``'s shape, part of every ``observation_id``."""

RELEVE_NAMESPACE = uuid5(NAMESPACE_URL, "/economies/releve")
"""The uuid5 namespace of the relevés' stable ids. Not ``NAMESPACE_URL``, under which the
plugin's events' streams are named (``events.stream_id``: ``/economies/`` then any text
the plugin sends), so that no id a plugin sends can name a relevé's stream: two uuid5
names under two namespaces never hash the same text (ADR-0172)."""


class ReleveError(MiamEconomiesError, ValueError):
    """A relevé value refused: a stored payload not of ``as_payload``'s shape, or two
    observations of different keys given to ``merge``. The message says which field."""


@dataclass(frozen=True, slots=True, order=True)
class ReplyKey:
    """The key of one reply: ``session_id`` (the lines' ``sessionId``), ``kind`` (which
    field ``value`` comes from: ``KeyKind``) and ``value`` (that field's text). Lines of
    one key, in one file or several, and across imports, are one reply."""

    session_id: str
    kind: KeyKind
    value: str


@dataclass(frozen=True, slots=True)
class Observation:
    """What was observed of one reply: a transcript line, or a merge of observations.

    ``usage``: the four counters, tokens (integers from 0 to 2^53 - 1; a counter a line
    lacks is 0). ``timestamp``: the earliest instant observed, ISO 8601 in UTC with
    milliseconds (``2026-10-30T09:12:04.512Z``), so text order is time order.
    ``model``, ``agent_id`` (None: the main agent), ``stop_reason``: the value chosen
    among those observed (``merge``), None when none was. ``is_sidechain``: whether any
    line said ``isSidechain: true``. Every text holds to ``domain.storable_text``.
    """

    key: ReplyKey
    usage: Usage
    timestamp: str
    model: str | None
    agent_id: str | None
    stop_reason: str | None
    is_sidechain: bool

    @property
    def incomplete(self) -> bool:
        """True when no line of the reply had a ``stop_reason``: its usage may be a
        streaming placeholder never finalised (SPEC: counted, flagged, never dropped)."""
        return self.stop_reason is None


def _chosen(a: str | None, b: str | None) -> str | None:
    """The value a merge keeps of two observed values: the non-null one, and of two, the
    smaller in code-point order. Any order of merging keeps the smallest non-null value
    observed (ADR-0169)."""
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def merge(a: Observation, b: Observation) -> Observation:
    """One observation of the reply ``a`` and ``b`` both observed (SPEC, "Merged, not
    summed"; ADR-0169): each counter at its largest value (a reply's counts only grow
    while it streams), the earliest ``timestamp``, ``is_sidechain`` if either says so,
    and for ``model``, ``agent_id`` and ``stop_reason`` the smallest non-null value in
    code-point order: the SPEC's "first non-null in file order" wherever the lines agree,
    which the SPEC says a reply's lines do, and an order-independent choice where they
    do not. Associative, commutative and idempotent. Raises ``ReleveError`` when the two
    keys differ."""
    if a.key != b.key:
        raise ReleveError(f"merge takes observations of one reply: {a.key} and {b.key}")
    ua, ub = a.usage, b.usage
    return Observation(
        key=a.key,
        usage=Usage(
            input_tokens=max(ua.input_tokens, ub.input_tokens),
            output_tokens=max(ua.output_tokens, ub.output_tokens),
            cache_read_input_tokens=max(ua.cache_read_input_tokens,
                                        ub.cache_read_input_tokens),
            cache_creation_input_tokens=max(ua.cache_creation_input_tokens,
                                            ub.cache_creation_input_tokens)),
        timestamp=min(a.timestamp, b.timestamp),
        model=_chosen(a.model, b.model),
        agent_id=_chosen(a.agent_id, b.agent_id),
        stop_reason=_chosen(a.stop_reason, b.stop_reason),
        is_sidechain=a.is_sidechain or b.is_sidechain)


def merge_replies(observations: Iterable[Observation]) -> dict[ReplyKey, Observation]:
    """The replies ``observations`` make, by key: each key's observations merged
    (``merge``), whatever their order or repetition. One pass, one entry a key."""
    replies: dict[ReplyKey, Observation] = {}
    for observation in observations:
        kept = replies.get(observation.key)
        replies[observation.key] = observation if kept is None else merge(kept, observation)
    return replies


def cost(reply: Observation) -> int:
    """The contract's cost rule applied to one reply, tokens: input + cache_creation +
    output + round(cache_read / 10), halves up, in exact integer arithmetic (SPEC, "A
    session": ``claude.cout`` is it summed over merged replies; the pilotage's rule,
    ``formulas.cout_pilotage``)."""
    return cout_pilotage(reply.usage)


def as_payload(observation: Observation) -> dict[str, Any]:
    """``observation`` as JSON-ready data, the shape a stored relevé event may hold:
    ``{"session_id", "key_kind", "key", "usage": {the four counters}, "timestamp",
    "model", "agent_id", "stop_reason", "is_sidechain"}`` (None as ``null``)."""
    usage = observation.usage
    return {
        "session_id": observation.key.session_id,
        "key_kind": observation.key.kind,
        "key": observation.key.value,
        "usage": {name: getattr(usage, name) for name in COUNTERS},
        "timestamp": observation.timestamp,
        "model": observation.model,
        "agent_id": observation.agent_id,
        "stop_reason": observation.stop_reason,
        "is_sidechain": observation.is_sidechain,
    }


def observation_id(observation: Observation) -> UUID:
    """The stable id of ``observation``: uuid5, in ``RELEVE_NAMESPACE``, of
    ``<PAYLOAD_VERSION>/`` and its payload's canonical JSON text (``events.canonical``:
    sorted keys, no spaces). Derived from the key and everything observed (counters,
    timestamp, model, agent, stop reason, sidechain flag), so the same observation read
    again has the same id (a doublon) and any other observation of the reply, a larger
    later one included, has another (ADR-0169). It is the relevé's stream id in the
    store; the plugin's events' streams are in another namespace (``events.stream_id``;
    ADR-0172), so neither can take the other's place."""
    text = canonical(as_payload(observation))
    return uuid5(RELEVE_NAMESPACE, f"{PAYLOAD_VERSION}/{text}")


def _optional_text(payload: Mapping[str, Any], name: str) -> str | None:
    """The storable, non-empty text ``payload[name]``, or None for null. Raises
    ``ReleveError``."""
    if payload.get(name) is None:
        return None
    return _text(payload, name)


def _text(payload: Mapping[str, Any], name: str) -> str:
    """The storable, non-empty text ``payload[name]``. Raises ``ReleveError``."""
    value = payload.get(name)
    if not isinstance(value, str) or not value:
        raise ReleveError(f"{name}: must be a non-empty string")
    fault = text_fault(value)
    if fault is not None:
        raise ReleveError(f"{name}: {fault}")
    return value


def from_payload(payload: Mapping[str, Any]) -> Observation:
    """The observation ``as_payload`` wrote (a stored relevé read back). Checks every
    field: texts storable and non-empty, ``key_kind`` one of ``KEY_KINDS``, each counter
    an integer from 0 to 2^53 - 1 (not a boolean), ``is_sidechain`` a boolean, and
    ``timestamp`` in ``as_payload``'s UTC form. Raises ``ReleveError`` naming the field."""
    if not isinstance(payload, Mapping):
        raise ReleveError("a relevé payload must be a JSON object")
    kind = payload.get("key_kind")
    if kind not in KEY_KINDS:
        raise ReleveError(f"key_kind: must be one of {', '.join(KEY_KINDS)}")
    usage = payload.get("usage")
    if not isinstance(usage, Mapping):
        raise ReleveError("usage: must be an object")
    counts = {}
    for name in COUNTERS:
        value = usage.get(name)
        if type(value) is not int or not 0 <= value <= MAX_SAFE_INTEGER:
            raise ReleveError(f"usage.{name}: must be an integer from 0 to 2^53 - 1")
        counts[name] = value
    timestamp = _text(payload, "timestamp")
    if utc_millis(timestamp) != timestamp:
        raise ReleveError("timestamp: must be ISO 8601 UTC with milliseconds, "
                          "as 2026-10-30T09:12:04.512Z")
    sidechain = payload.get("is_sidechain")
    if not isinstance(sidechain, bool):
        raise ReleveError("is_sidechain: must be a boolean")
    return Observation(
        key=ReplyKey(_text(payload, "session_id"), kind, _text(payload, "key")),
        usage=Usage(**counts), timestamp=timestamp, model=_optional_text(payload, "model"),
        agent_id=_optional_text(payload, "agent_id"),
        stop_reason=_optional_text(payload, "stop_reason"), is_sidechain=sidechain)


def utc_millis(text: str) -> str | None:
    """The instant ``text`` (ISO 8601 with an offset: ``Z`` or ``+hh:mm``) as
    ``instants.iso_utc`` writes it: UTC, milliseconds, ``Z``, 24 characters, so that text
    order is time order. None when ``text`` is not such an instant (no offset, no time,
    out of range). Digits past the millisecond are dropped."""
    try:
        moment = parse_instant(text)
        if moment.utcoffset() is None:
            return None
        return iso_utc(moment)
    except (ValueError, OverflowError):
        return None
