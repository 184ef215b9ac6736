"""A faster transcoder for the event store: orjson, in the library's own stored format.

``eventsourcing``'s default ``JSONTranscoder`` runs stdlib ``json`` with a Python hook on
every decoded object; encoding and decoding a stored event cost about 3x what orjson does
(NOTES-eventsourcing, "Transcoding"). ``OrjsonTranscoder`` writes byte for byte the
documents the default one writes for our events (a ``datetime`` as
``{"_type_": "datetime_iso", "_data_": isoformat}``, compact separators, UTF-8 unescaped),
so stores written by either read with either (ADR-0011).

Our stored events are flat: a timestamp and strings (the event as received is JSON *text*,
so no client key can collide with ``_type_``/``_data_``). Only ``datetime`` is transcoded;
any other non-JSON type raises.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson
from eventsourcing.persistence import Transcoder, TranscodingNotRegisteredError

DATETIME = "datetime_iso"
"""The library's name for ``DatetimeAsISO``: the marker written for a ``datetime``."""


def _encode_other(obj: Any) -> Any:
    if isinstance(obj, datetime):
        return {"_type_": DATETIME, "_data_": obj.isoformat()}
    raise TranscodingNotRegisteredError(f"{type(obj).__name__} is not transcoded here")


def _revive(value: Any) -> Any:
    # The inverse of _encode_other: a {"_type_", "_data_"} pair becomes its datetime again.
    if isinstance(value, dict):
        if len(value) == 2 and "_type_" in value and "_data_" in value:
            if value["_type_"] != DATETIME:
                raise TranscodingNotRegisteredError(
                    f"stored type {value['_type_']!r} is not transcoded here")
            return datetime.fromisoformat(value["_data_"])
        # In place, and only into containers: strings and numbers, nearly every value of a
        # stored event, cost one type test each (this runs on every folded event).
        for key, item in value.items():
            if isinstance(item, dict | list):
                value[key] = _revive(item)
        return value
    if isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, dict | list):
                value[index] = _revive(item)
    return value


class OrjsonTranscoder(Transcoder):
    """``eventsourcing`` ``Transcoder`` on orjson, reading and writing the default
    ``JSONTranscoder``'s format for ``datetime`` values (ADR-0011).

    ``encode(obj) -> bytes`` raises ``TranscodingNotRegisteredError`` (a ``TypeError``)
    for a type other than JSON's and ``datetime``, and for an integer past 64 bits (callers
    keep such values inside JSON text); ``decode(bytes)`` raises
    ``orjson.JSONDecodeError`` for bytes that are not JSON.
    """

    def encode(self, obj: Any) -> bytes:
        """``obj`` as compact UTF-8 JSON; datetimes as the library's marker objects."""
        try:
            return orjson.dumps(obj, default=_encode_other,
                                option=orjson.OPT_PASSTHROUGH_DATETIME)
        except orjson.JSONEncodeError as exc:  # orjson wraps what _encode_other raised
            raise TranscodingNotRegisteredError(str(exc)) from None

    def decode(self, data: bytes) -> Any:
        """The object ``encode`` (or the library's ``JSONTranscoder``) wrote as ``data``."""
        return _revive(orjson.loads(data))
