"""``EconomiesMapper.received`` writes what the library's own mapper writes for the same
received event, byte for byte, a configured compressor included (ADR-0043); its
``values`` reads back what the library's ``to_domain_event`` reads (ADR-0062)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from uuid import uuid4

import pytest
from eventsourcing.compressor import ZlibCompressor
from eventsourcing.persistence import DatetimeAsISO, JSONTranscoder, Mapper
from eventsourcing.utils import get_topic
from hypothesis import given
from hypothesis import strategies as st

from miam_economies.api.store.mapper import EconomiesMapper, payload_text
from miam_economies.api.store.transcoder import OrjsonTranscoder
from miam_economies.domain.events import (
    LEGACY_MODULE,
    STORED_CLASSES,
    TOPICS,
    Conflit,
    ConflitRecu,
    from_payload,
    stream_hex,
    stream_id,
)
from tests.corpus import generate

MOMENTS = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1),
                       timezones=st.sampled_from([UTC, timezone(timedelta(hours=2))]))
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200)
KINDS = st.sampled_from(sorted(STORED_CLASSES))
SHARED = EconomiesMapper(OrjsonTranscoder())


def library_mapper(**options: object) -> Mapper:  # type: ignore[type-arg]
    """The mapper ``Application`` builds by default (stdlib JSON, datetimes)."""
    transcoder = JSONTranscoder()
    transcoder.register(DatetimeAsISO())
    return Mapper(transcoder=transcoder, **options)  # type: ignore[arg-type]


@given(kind=KINDS, moment=MOMENTS, payload=TEXT, recu_le=TEXT)
def test_a_received_event_is_stored_as_the_library_stores_its_domain_event(
        kind: str, moment: datetime, payload: str, recu_le: str) -> None:
    stream = uuid4()
    event = STORED_CLASSES[kind](originator_id=stream, originator_version=1,
                                 timestamp=moment, payload=payload, recu_le=recu_le)
    expected = library_mapper().to_stored_event(event)
    # One mapper for every example: its timestamp of the last batch must never leak.
    ours = SHARED.received(stream, get_topic(type(event)), payload, recu_le, moment)
    assert ours == expected
    assert SHARED.received(stream, get_topic(type(event)), payload, recu_le, moment) == ours


@given(moment=MOMENTS, payload=TEXT, client=TEXT)
def test_a_conflict_keeps_its_client_in_the_library_format(
        moment: datetime, payload: str, client: str) -> None:
    stream = uuid4()
    event = ConflitRecu(originator_id=stream, originator_version=1, timestamp=moment,
                        payload=payload, recu_le="2026-10-30T09:12:04.512Z", client=client)
    ours = EconomiesMapper(OrjsonTranscoder()).received(
        stream, get_topic(ConflitRecu), payload, "2026-10-30T09:12:04.512Z", moment, client)
    assert ours == library_mapper().to_stored_event(event)


def test_a_compressor_applies_to_appends_and_reads() -> None:
    ours = EconomiesMapper(OrjsonTranscoder(), compressor=ZlibCompressor())
    moment = datetime(2026, 10, 30, 9, 12, 4, 512000, tzinfo=UTC)
    text = payload_text({"type": "correction", "client": "claude-code", "cout": 490})
    stored = ours.received(uuid4(), get_topic(STORED_CLASSES["correction"]), text,
                           "2026-10-30T09:12:04.512Z", moment)
    assert text.encode() not in stored.state  # compressed, not plain JSON
    assert stored == library_mapper(compressor=ZlibCompressor()).to_stored_event(
        ours.to_domain_event(stored))
    event = ours.to_domain_event(stored)
    assert (event.payload, event.recu_le, event.timestamp) == (  # type: ignore[attr-defined]
        text, "2026-10-30T09:12:04.512Z", moment)


def test_payload_text_is_compact_and_keeps_non_ascii_and_huge_integers() -> None:
    assert payload_text({"a": "é", "b": [1, 2]}) == '{"a":"é","b":[1,2]}'
    assert payload_text({"n": 10**30}) == '{"n":' + str(10**30) + "}"


@given(seed=st.integers(0, 2**32), compressed=st.booleans())
def test_values_are_what_the_library_path_gives(seed: int, compressed: bool) -> None:
    # mapper.values reads stored states straight to typed values (ADR-0062): the values
    # of to_domain_event(...).value(), a conflict and a compressed store included.
    options = {"compressor": ZlibCompressor()} if compressed else {}
    ours = EconomiesMapper(OrjsonTranscoder(), **options)  # type: ignore[arg-type]
    moment = datetime(2026, 10, 30, 9, 12, 4, 512000, tzinfo=UTC)
    events = generate(12, seed=seed)
    stored = [ours.received(uuid4(), TOPICS[e["type"]], payload_text(e),
                            "2026-10-30T09:12:04.512Z", moment) for e in events]
    stored.append(ours.received(uuid4(), get_topic(ConflitRecu), payload_text(events[0]),
                                "2026-10-30T09:12:04.512Z", moment, "claude-code-ci"))
    rows = [(i, s.topic, s.state) for i, s in enumerate(stored, start=1)]
    expected = [ours.to_domain_event(s).value() for s in stored]  # type: ignore[attr-defined]
    assert ours.values(rows) == expected
    assert expected[-1] == Conflit("claude-code-ci")
    assert [v.payload for v in ours.values(rows)[:-1]] == events  # type: ignore[union-attr]


def test_values_reads_the_topics_of_stores_written_before_the_package_was_renamed() -> None:
    ours = EconomiesMapper(OrjsonTranscoder())
    moment = datetime(2026, 10, 30, 9, 12, 4, 512000, tzinfo=UTC)
    event = generate(1, seed=1)[0]
    state = ours.received(uuid4(), TOPICS[event["type"]], payload_text(event), "x",
                          moment).state
    old_topic = f"{LEGACY_MODULE}:{STORED_CLASSES[event['type']].__qualname__}"
    [value] = ours.values([(1, old_topic, state)])
    assert value == from_payload(event)
    with pytest.raises(TypeError):
        ours.values([(1, get_topic(Conflit), state)])


@given(kind=KINDS, moment=MOMENTS, payload=TEXT, recu_le=TEXT,
       client=st.none() | TEXT)
def test_the_batch_encoder_writes_the_received_events_state_byte_for_byte(
        kind: str, moment: datetime, payload: str, recu_le: str, client: str | None) -> None:
    # The append's lean path (ADR-0116) concatenates the transcoder's bytes: the same
    # state as received(), hence as the library's mapper (test above), for any text.
    topic = get_topic(STORED_CLASSES[kind] if client is None else ConflitRecu)
    for mapper in (SHARED, EconomiesMapper(OrjsonTranscoder(), compressor=ZlibCompressor())):
        encode = mapper.state_encoder(moment)
        expected = mapper.received(uuid4(), topic, payload, recu_le, moment, client).state
        assert encode(payload, recu_le, client) == expected
        assert encode(payload, recu_le, client) == expected  # its cached tail too


@given(event_id=st.text(max_size=300))
def test_a_stream_id_as_hex_is_uuid5s(event_id: str) -> None:
    assert stream_hex(event_id) == stream_id(event_id).hex
