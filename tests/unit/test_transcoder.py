"""``OrjsonTranscoder`` writes and reads the library's default stored format (ADR-0011).

Stores written before the orjson transcoder, or by the library's own ``JSONTranscoder``,
must read the same, and the other way round: each test encodes with one and decodes with
the other.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from eventsourcing.persistence import (
    DatetimeAsISO,
    JSONTranscoder,
    TranscodingNotRegisteredError,
)
from hypothesis import given
from hypothesis import strategies as st

from miam_economies.api.store.transcoder import OrjsonTranscoder


def library_transcoder() -> JSONTranscoder:
    """The transcoder ``Application`` builds by default, for datetimes."""
    transcoder = JSONTranscoder()
    transcoder.register(DatetimeAsISO())
    return transcoder


def state(moment: datetime, payload: str, recu_le: str) -> dict[str, Any]:
    """A stored received event's state, as the mapper gives it to the transcoder."""
    return {"timestamp": moment, "payload": payload, "recu_le": recu_le}


MOMENTS = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1),
                       timezones=st.sampled_from([UTC, timezone(timedelta(hours=2))]))
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200)


@given(moment=MOMENTS, payload=TEXT, recu_le=TEXT)
def test_the_bytes_are_the_libraries_own(moment: datetime, payload: str, recu_le: str) -> None:
    document = state(moment, payload, recu_le)
    assert OrjsonTranscoder().encode(document) == library_transcoder().encode(document)


@given(moment=MOMENTS, payload=TEXT, recu_le=TEXT)
def test_each_reads_what_the_other_wrote(moment: datetime, payload: str, recu_le: str) -> None:
    document = state(moment, payload, recu_le)
    ours, theirs = OrjsonTranscoder(), library_transcoder()
    assert ours.decode(theirs.encode(document)) == document
    assert theirs.decode(ours.encode(document)) == document


def test_a_client_payload_shaped_like_a_marker_stays_text() -> None:
    # The event as received is JSON text: its keys never meet the decoder's markers.
    payload = '{"_type_":"datetime_iso","_data_":"not a date"}'
    document = state(datetime(2026, 10, 30, tzinfo=UTC), payload, "2026-10-30T00:00:00.000Z")
    assert OrjsonTranscoder().decode(OrjsonTranscoder().encode(document)) == document


def test_nested_datetimes_revive_at_any_depth() -> None:
    moment = datetime(2026, 10, 30, 9, 12, 4, 512000, tzinfo=UTC)
    document = {"a": [{"b": moment}, 1, "x"], "c": {"d": [moment]}}
    ours = OrjsonTranscoder()
    assert ours.decode(library_transcoder().encode(document)) == document


def test_types_it_does_not_know_are_refused_both_ways() -> None:
    with pytest.raises(TranscodingNotRegisteredError):
        OrjsonTranscoder().encode({"x": {1, 2}})
    with pytest.raises(TranscodingNotRegisteredError):
        OrjsonTranscoder().decode(b'{"x":{"_type_":"uuid_hex","_data_":"00"}}')
