"""A relevé as a stored event (ADR-0172): its payload and its reading back, its stream in a
namespace no plugin id reaches, the POST's refusal of its type, and the mapper's reading
of its topic beside the plugin's events and the conflicts."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid4

import pytest
from eventsourcing.utils import get_topic
from hypothesis import given
from hypothesis import strategies as st

from miam_economies.api.store.mapper import EconomiesMapper, payload_text
from miam_economies.api.store.transcoder import OrjsonTranscoder
from miam_economies.domain.acceptance import accept_batch
from miam_economies.domain.events import (
    TOPICS,
    Conflit,
    ConflitRecu,
    Ecarte,
    Usage,
    canonical,
    from_payload,
    stream_hex,
    stream_id,
)
from miam_economies.domain.releves import (
    RELEVE_NAMESPACE,
    Observation,
    ReleveError,
    ReplyKey,
    as_payload,
    observation_id,
)
from miam_economies.domain.releves_events import (
    RELEVE_TOPIC,
    RELEVE_TYPE,
    ReleveRecu,
    releve_of,
    releve_payload,
    releve_stream_hex,
)
from miam_economies.domain.validation import SchemaError, validate_event
from tests.conftest import EXAMPLE_BATCH

MOMENT = datetime(2026, 12, 4, 9, 0, tzinfo=UTC)
REPLY = Observation(ReplyKey("9c4e7f12", "message_id", "msg_01"), Usage(3, 220, 9000, 1500),
                    "2026-11-20T09:00:02.274Z", "claude-haiku-4-5", "a3f9b21", "tool_use",
                    True)


def test_the_payload_says_what_it_is_and_reads_back() -> None:
    payload = releve_payload(REPLY)
    assert list(payload)[:2] == ["type", "schema"]
    assert (payload["type"], payload["schema"]) == ("releve", 1)
    assert {k: v for k, v in payload.items() if k not in ("type", "schema")} == \
        as_payload(REPLY)
    assert releve_of(json.loads(payload_text(payload))) == REPLY
    assert releve_of({**payload, "recu_le": "2026-12-04T09:00:00.000Z"}) == REPLY


@pytest.mark.parametrize(("change", "champ"), [
    ({"type": "pilotage"}, "type"), ({"type": None}, "type"), ({"schema": 2}, "schema"),
    ({"schema": True}, "schema"), ({"schema": "1"}, "schema"),
    ({"usage": {**as_payload(REPLY)["usage"], "output_tokens": -1}}, "usage.output_tokens"),
    ({"timestamp": "2026-11-20T09:00:02"}, "timestamp"), ({"key": ""}, "key"),
])
def test_a_payload_that_is_no_releve_is_refused_naming_the_field(
        change: dict[str, Any], champ: str) -> None:
    with pytest.raises(ReleveError, match=champ.replace(".", r"\.")):
        releve_of({**releve_payload(REPLY), **change})


def test_the_stream_is_the_observations_id_in_a_namespace_of_its_own() -> None:
    assert releve_stream_hex(REPLY) == observation_id(REPLY).hex
    assert RELEVE_NAMESPACE not in (NAMESPACE_URL, UUID(int=0))
    # ADR-0169 named a relevé's stream as a plugin event's id would be named: the plugin
    # could have sent that id and taken the relevé's place. No longer (ADR-0172).
    old_name = f"releve/1/{canonical(as_payload(REPLY))}"
    assert stream_id(old_name) != observation_id(REPLY)
    assert stream_hex(old_name) != releve_stream_hex(REPLY)


@given(st.text(max_size=80))
def test_no_plugin_id_names_a_releves_stream(event_id: str) -> None:
    # Two uuid5 names under two namespaces hash two different texts (the namespace's 16
    # bytes come first): only a SHA-1 collision could make them meet.
    assert RELEVE_NAMESPACE.bytes != NAMESPACE_URL.bytes
    assert stream_id(event_id) != observation_id(REPLY)


def test_the_post_refuses_a_releve_whole() -> None:
    releve = {**releve_payload(REPLY), "id": "claude-code:r", "date": REPLY.timestamp,
              "client": "claude-code"}
    faults = validate_event(0, releve)
    assert [f.champ for f in faults] == ["type"]
    with pytest.raises(SchemaError) as refused:
        accept_batch({"evenements": [*EXAMPLE_BATCH["evenements"], releve]})
    assert {(f.index, f.champ) for f in refused.value.faults} == {(2, "type")}
    assert RELEVE_TYPE == "releve"


def test_the_mapper_reads_a_releve_beside_the_plugins_events_and_a_conflict() -> None:
    mapper = EconomiesMapper(OrjsonTranscoder())
    event = EXAMPLE_BATCH["evenements"][0]
    stamp = "2026-12-04T09:00:00.000Z"
    stored = [mapper.received(uuid4(), TOPICS[event["type"]], payload_text(event), stamp,
                              MOMENT),
              mapper.received(observation_id(REPLY), RELEVE_TOPIC,
                              payload_text(releve_payload(REPLY)), stamp, MOMENT),
              mapper.received(uuid4(), get_topic(ConflitRecu), payload_text(event), stamp,
                              MOMENT, "claude-code"),
              mapper.received(uuid4(), RELEVE_TOPIC,
                              payload_text({**releve_payload(REPLY), "schema": 9}), stamp,
                              MOMENT)]
    rows = [(i, s.topic, s.state) for i, s in enumerate(stored, start=1)]
    values = mapper.values(rows)
    assert values[:3] == [from_payload(event), REPLY, Conflit("claude-code")]
    assert isinstance(values[3], Ecarte) and values[3].position == 4
    assert "schema" in values[3].raison
    # The library's path reads the same relevé: a ReleveRecu whose value is REPLY.
    domain_event = mapper.to_domain_event(stored[1])
    assert isinstance(domain_event, ReleveRecu)
    assert domain_event.value() == REPLY
    assert RELEVE_TOPIC == "miam_economies.domain.releves_events:ReleveRecu"
