"""A relevé as a stored event: an observation of a reply, kept in the event store beside
the plugin's events and in no way one of them (pure; ADR-0172).

The store keeps every event as the library's mapper keeps an ``events.EvenementRecu``:
its class's topic and ``{"timestamp", "payload", "recu_le"}``. A relevé is a
``ReleveRecu``, a topic of its own, whose ``payload`` is ``releve_payload``'s JSON text:
``{"type": "releve", "schema": 1, ...releves.as_payload}``. Its stream is
``releves.observation_id`` (version 1), in a namespace no plugin event's stream can
reach. ``type`` tells an exported relevé line from a plugin event's line: ``import``
stores such a line as a relevé; the POST refuses it whole, ``releve`` being none of the
contract's types (``events.TYPES``), so the plugin can never send a relevé.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eventsourcing.utils import get_topic

from miam_economies.domain.events import TYPES, EvenementRecu, Stored
from miam_economies.domain.releves import (
    PAYLOAD_VERSION,
    Observation,
    ReleveError,
    as_payload,
    from_payload,
    observation_id,
)

RELEVE_TYPE = "releve"
"""The ``type`` of a relevé's payload and of its exported line; not one of the
contract's ``events.TYPES``, which the POST and ``import``'s plugin path accept."""

assert RELEVE_TYPE not in TYPES

class ReleveRecu(EvenementRecu):
    """A stored relevé (ADR-0172): ``payload`` is ``releve_payload``'s JSON text,
    ``recu_le`` when this service stored it (or when the store it was exported from
    did), ISO 8601 UTC."""

    def value(self) -> Stored:
        """The ``releves.Observation`` this relevé holds (``releve_of``); raises
        ``ReleveError`` for a payload that is none."""
        return releve_of(self.received_payload())


RELEVE_TOPIC = get_topic(ReleveRecu)
"""The stored event topic of a relevé."""


def releve_payload(observation: Observation) -> dict[str, Any]:
    """What a relevé's stored ``payload`` holds, as JSON-ready data: ``{"type":
    "releve", "schema": 1}`` then ``releves.as_payload(observation)``'s keys (the key,
    the four counters in tokens, the earliest timestamp, model, agent, stop reason,
    sidechain flag)."""
    return {"type": RELEVE_TYPE, "schema": PAYLOAD_VERSION, **as_payload(observation)}


def releve_of(payload: Mapping[str, Any]) -> Observation:
    """The observation a relevé's payload (``releve_payload``, or an exported line
    without its ``recu_le``) holds. Raises ``ReleveError`` naming the field: ``type``
    not ``releve``, ``schema`` not 1, or any field ``releves.from_payload`` refuses.
    Other keys are ignored."""
    if not isinstance(payload, Mapping):
        raise ReleveError("a relevé must be a JSON object")
    if payload.get("type") != RELEVE_TYPE:
        raise ReleveError(f"type: must be {RELEVE_TYPE!r}")
    schema = payload.get("schema")
    if type(schema) is not int or schema != PAYLOAD_VERSION:
        raise ReleveError(f"schema: must be {PAYLOAD_VERSION}")
    return from_payload(payload)


def releve_stream_hex(observation: Observation) -> str:
    """The relevé's stream id in the store, as hex text (the append's keys):
    ``releves.observation_id(observation).hex``."""
    return observation_id(observation).hex
