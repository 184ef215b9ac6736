"""The stored format of received events, in one place: ``EconomiesMapper``.

A received event is stored as the library's mapper stores a ``DomainEvent``
(``domain.events.EvenementRecu`` and its subclasses): the topic of its class, and the
transcoded state ``{"timestamp", "payload", "recu_le"}`` (plus ``"client"`` for a
``ConflitRecu``), compressed and encrypted when the application is configured so. The
library's ``to_stored_event``/``to_domain_event`` read and write exactly that; this mapper
adds ``received``, which writes the same bytes without building a domain event object
first: on a 500-event batch that object costs about 2 µs an event, a seventh of the
append (ADR-0043); and ``values``, which reads stored states back straight to the typed
values a projection folds, without a domain event object per event (ADR-0062).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any
from uuid import UUID

import orjson
from eventsourcing.persistence import Mapper, MapperDeserialisationError, StoredEvent
from eventsourcing.utils import resolve_topic

from miam_economies.api.store.transcoder import DATETIME, OrjsonTranscoder
from miam_economies.domain.events import (
    Conflit,
    ConflitRecu,
    Ecarte,
    EvenementRecu,
    Stored,
    decode_payload,
    from_payload,
)
from miam_economies.domain.releves import ReleveError
from miam_economies.domain.releves_events import ReleveRecu, releve_of
from miam_economies.domain.storable_text import stored_fault, text_fault
from miam_economies.domain.strict_json import dumps_text

_RECEIVED, _CONFLICT, _RELEVE = 0, 1, 2
"""What a topic's stored events are to ``EconomiesMapper.values``."""


def payload_text(payload: Any) -> str:
    """The event as received, as compact JSON text with non-ASCII unescaped: what a stored
    event's ``payload`` holds (ADR-0002). ``strict_json.dumps_text``: orjson, or stdlib
    json for an integer past 64 bits or a lone surrogate (an unknown field may hold
    either; the surrogate is kept as its escape, ADR-0135)."""
    return dumps_text(payload)


class EconomiesMapper(Mapper[UUID]):
    """The library's ``Mapper`` (transcoder, optional compressor and cipher) with a fast
    path for appends.

    ``received(...)`` gives the ``StoredEvent`` that ``to_stored_event`` gives for the
    ``EvenementRecu`` of the same fields, byte for byte (a test pins it); reading back is
    the library's ``to_domain_event``, which the export, the anomalies and the conflict
    check use. The projection runner and ``compare`` read ``values``: the same values as
    ``to_domain_event(...).value()``, a test pins them.
    """

    _last_stamp: tuple[datetime | None, Any] = (None, None)

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._topic_kinds: dict[str, int] = {}

    def values(self, rows: Iterable[tuple[int, str, bytes]]) -> list[Stored]:
        """The typed value of each stored event of ``rows`` (``(notification_id, topic,
        state)``, as ``EconomiesRecorder.select_states`` reads them), in order: what
        ``to_domain_event(...).value()`` gives, without building the domain event (its
        timestamp and ``recu_le`` are not decoded). Deciphered and decompressed as
        configured.

        A relevé (``ReleveRecu``) gives its ``releves.Observation`` (ADR-0172). A
        payload that is no event the fold can take gives an ``Ecarte`` (its
        notification id, and why: ``storable_text.stored_fault``, or what its decoding
        raised; ADR-0135). Raises ``MapperDeserialisationError`` for a state that is not
        the stored format, ``TopicError`` for an unknown topic, ``TypeError`` for a topic
        that is not a received event's.
        """
        decipher = self.cipher.decrypt if self.cipher else None
        decompress = self.compressor.decompress if self.compressor else None
        loads = orjson.loads
        kinds = self._topic_kinds
        out: list[Stored] = []
        append = out.append
        for notification_id, topic, state in rows:
            try:
                if decipher is not None:
                    state = decipher(state)
                if decompress is not None:
                    state = decompress(state)
                stored = loads(state)
            except Exception as exc:
                raise MapperDeserialisationError(
                    f"stored event {notification_id} ({topic}): {exc}") from exc
            kind = kinds.get(topic)
            if kind is None:
                kind = kinds[topic] = self._kind(topic)
            if kind:  # a conflict or a relevé; a plugin's event (0) goes on below
                append(self._conflict(notification_id, stored) if kind == _CONFLICT
                       else self._releve(notification_id, stored))
                continue
            # The stored format read, its payload may still be no event the fold can
            # take: set aside, never a stop (ADR-0135). A state that does not decode at
            # all (above) says the store or its settings are wrong: that one raises.
            try:
                value = from_payload(decode_payload(stored["payload"]))
                fault = stored_fault(value)
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                fault = f"not an event of schema 1 ({type(exc).__name__}: {exc})"[:300]
            append(value if fault is None else Ecarte(notification_id, fault))
        return out

    @staticmethod
    def _kind(topic: str) -> int:
        """What the stored events of ``topic`` are: ``_RECEIVED`` (the plugin's),
        ``_CONFLICT`` or ``_RELEVE``. Raises ``TopicError``, or ``TypeError`` for a
        topic that is not a received event's."""
        cls = resolve_topic(topic)
        if not (isinstance(cls, type) and issubclass(cls, EvenementRecu)):
            raise TypeError(f"{topic} is not a received event's topic")
        return (_CONFLICT if issubclass(cls, ConflitRecu)
                else _RELEVE if issubclass(cls, ReleveRecu) else _RECEIVED)

    @staticmethod
    def _conflict(notification_id: int, stored: dict[str, Any]) -> Stored:
        # Counted under the kept version's client, which must be keepable.
        client = stored.get("client")
        if not isinstance(client, str):
            return Ecarte(notification_id, "a conflict's client must be a string")
        why = text_fault(client)
        return (Conflit(client) if why is None
                else Ecarte(notification_id, f"a conflict's client {why}"))

    @staticmethod
    def _releve(notification_id: int, stored: dict[str, Any]) -> Stored:
        # A relevé whose payload is none (written by hand into a store) is set aside.
        try:
            return releve_of(decode_payload(stored["payload"]))
        except (ReleveError, ValueError, KeyError, TypeError) as exc:
            return Ecarte(notification_id, f"not a relevé ({exc})"[:300])

    def received(self, stream: UUID, topic: str, payload: str, recu_le: str,
                 timestamp: datetime, client: str | None = None) -> StoredEvent:
        """The stored event of a received event at version 1 of stream ``stream``.

        ``topic``: its class's topic (``domain.events.TOPICS`` or ``CONFLIT_TOPIC``);
        ``payload``: the event as received, as JSON text (``payload_text``); ``recu_le``:
        when it was stored, ISO 8601 UTC (``toISOString()`` form); ``timestamp``: the
        library's event timestamp (aware datetime); ``client``: a conflict's kept client.
        """
        state: dict[str, Any] = {"timestamp": self._timestamp(timestamp),
                                 "payload": payload, "recu_le": recu_le}
        if client is not None:
            state["client"] = client
        stored_state = self.transcoder.encode(state)
        if self.compressor:
            stored_state = self.compressor.compress(stored_state)
        if self.cipher:
            stored_state = self.cipher.encrypt(stored_state)
        return StoredEvent(stream, 1, topic, stored_state)

    def state_encoder(self, timestamp: datetime) -> Callable[[str, str, str | None], bytes]:
        """A function ``(payload, recu_le, client) -> state``: the ``state`` of
        ``received(stream, topic, payload, recu_le, timestamp, client)``, byte for byte,
        for the many events of one batch (a test pins them equal).

        With ``OrjsonTranscoder`` and neither compressor nor cipher (the service's
        configuration), the document's head (its timestamp) is encoded once and each
        state is that head, the payload's JSON string and its tail concatenated: orjson
        writes a dict's keys in order, so these are the transcoder's exact bytes, without
        a dict or a ``StoredEvent`` per event (ADR-0116). Any other configuration goes
        through ``received``.
        """
        if not isinstance(self.transcoder, OrjsonTranscoder) or self.compressor \
                or self.cipher:
            def general(payload: str, recu_le: str, client: str | None = None) -> bytes:
                return self.received(UUID(int=0), "", payload, recu_le, timestamp,
                                     client).state
            return general
        dumps = orjson.dumps
        head = b'{"timestamp":' + dumps(self._timestamp(timestamp)) + b',"payload":'
        tails: dict[tuple[str, str | None], bytes] = {}

        def encode(payload: str, recu_le: str, client: str | None = None) -> bytes:
            tail = tails.get((recu_le, client))
            if tail is None:
                tail = b',"recu_le":' + dumps(recu_le)
                if client is not None:
                    tail += b',"client":' + dumps(client)
                tail = tails[recu_le, client] = tail + b"}"
            return head + dumps(payload) + tail
        return encode

    def _timestamp(self, timestamp: datetime) -> Any:
        """``timestamp`` as the transcoder will write it: for ``OrjsonTranscoder``, its
        datetime marker, built once for the many events of one batch, which share their
        timestamp (``isoformat`` and orjson's fallback call cost a tenth of an append,
        ADR-0061); the datetime itself for any other transcoder."""
        if not isinstance(self.transcoder, OrjsonTranscoder):
            return timestamp
        last, marker = self._last_stamp  # one read: appends may come from two threads
        if last is not timestamp:
            marker = {"_type_": DATETIME, "_data_": timestamp.isoformat()}
            self._last_stamp = (timestamp, marker)
        return marker

    def stored_payload(self, state: bytes) -> str:
        """The event as received (JSON text) of a stored received event's ``state``
        (``StoredEvent.state``), read through the cipher, compressor and transcoder
        without building the domain event: the conflict check of a re-sent batch reads
        only this (ADR-0061). Raises what the cipher or transcoder raise on bad bytes."""
        if self.cipher:
            state = self.cipher.decrypt(state)
        if self.compressor:
            state = self.compressor.decompress(state)
        payload: str = self.transcoder.decode(state)["payload"]
        return payload
