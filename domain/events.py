"""The contract's three schema-1 events, as immutable values and as stored domain events.

Two shapes of the same fact:

* ``Delegation``, ``Pilotage`` and ``Correction`` are the typed values the domain reasons
  about (formulas, figures). They are built by ``domain.validation`` from a payload that
  has passed every check, or by ``from_payload`` from a payload read back from the store.
* ``DelegationRecue``, ``PilotageRecu`` and ``CorrectionRecue`` are the domain events
  appended to the event store, one stream per received event (ADR-0002). They hold the
  event as received, as a JSON string, so unknown fields survive byte for byte and no
  client key can collide with the transcoder's ``_type_``/``_data_`` markers
  (NOTES-eventsourcing, "Transcoding").

Names are the contract's (``000_*.txt``, "Modèle de données"): they are the wire format and
the ubiquitous language.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar
from uuid import NAMESPACE_URL, UUID, uuid5

import orjson
from eventsourcing.domain import DomainEvent
from eventsourcing.utils import get_topic, register_topic

if TYPE_CHECKING:
    from miam_economies.domain.releves import Observation

SCHEMA = 1
"""The only schema version this service accepts (contract, "Modèle de données")."""

TYPES = ("delegation", "pilotage", "correction")
RETOURS = ("complet", "apercu")
OUTILS = ("Read", "Edit", "Write", "NotebookEdit", "Bash")


@dataclass(frozen=True)
class Estimation:
    """The plugin's estimate for one delegation, all in Claude tokens.

    ``evites`` may be negative (a long consigne, a short answer read back in full): the
    contract says never to bound it ("Calcul des estimations").
    """

    lus: int
    ecrits: int
    consigne: int
    rendus: int
    evites: int
    methode: str


@dataclass(frozen=True)
class Usage:
    """The four usage counters of one subagent turn, in tokens, as the Claude API names them.

    Kept apart, never summed at ingestion: a cache read is not an input token (seed 004,
    "Cache reads and cache writes are always separate fields").
    """

    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int


@dataclass(frozen=True)
class Evenement:
    """Fields common to the three event types (contract, "Modèle de données").

    ``date`` is the ISO 8601 string as the plugin wrote it (validated to carry an offset);
    ``payload`` is the whole event as received, unknown fields included, and takes no part
    in equality.
    """

    id: str
    date: str
    client: str
    session_id: str
    payload: Mapping[str, Any] = field(compare=False, repr=False)


@dataclass(frozen=True)
class Delegation(Evenement):
    """One successful delegation to MIAM's local model (type ``delegation``).

    ``tokens_entree``/``tokens_sortie``: tokens read/written by the local model.
    ``agent_id`` is None when the main agent delegated.
    """

    demande_id: str
    agent_id: str | None
    par_subagent: bool
    retour: Literal["complet", "apercu"]
    tokens_entree: int
    tokens_sortie: int
    estimation: Estimation
    type: Literal["delegation"] = "delegation"


@dataclass(frozen=True)
class Pilotage(Evenement):
    """The end of one delegating subagent turn (type ``pilotage``).

    ``cout`` (tokens) is to be deducted from the evites of ``demande_ids`` (at least one).
    """

    agent_id: str
    turn_id: str
    demande_ids: tuple[str, ...]
    modele: str
    usage: Usage
    cout: int
    type: Literal["pilotage"] = "pilotage"


@dataclass(frozen=True)
class Correction(Evenement):
    """The main agent reworking the output of a delegation (type ``correction``).

    ``cout`` = tokens_lus + tokens_ecrits (tokens), deducted from ``demande_id``'s evites.
    """

    demande_id: str
    outil: Literal["Read", "Edit", "Write", "NotebookEdit", "Bash"]
    tool_use_id: str
    tokens_lus: int
    tokens_ecrits: int
    cout: int
    type: Literal["correction"] = "correction"


Received: TypeAlias = Delegation | Pilotage | Correction


@dataclass(frozen=True, slots=True)
class Conflit:
    """A stored differing re-sent version (a ``ConflitRecu``) as a value: it counts under
    ``conflits`` of ``client``, the client of the version kept, and in no other figure
    (SPEC, "Wire contract")."""

    client: str


@dataclass(frozen=True, slots=True)
class Ecarte:
    """A stored event the fold sets aside, folded into no figure (ADR-0135): ``position``,
    its notification id; ``raison``, why (our words, never the event's values). An event
    an earlier release stored that the POST now refuses (``domain.storable_text``), or
    whose payload is not an event of schema 1; every backend sets it aside alike, and
    the bilan's conservation counts it (``ecartes``)."""

    position: int
    raison: str


Stored: TypeAlias = "Received | Conflit | Ecarte | Observation"
"""What one stored event is to a projection: a received event's typed value, a
``Conflit``, an ``Ecarte``, or a relevé's ``releves.Observation`` (ADR-0172)."""


def from_payload(payload: Mapping[str, Any]) -> Received:
    """Build the typed value of a payload that already passed ``domain.validation``.

    Use it on events read back from the store; it does not check anything again.
    Raises ``KeyError``/``TypeError`` only if the payload never was valid (a bug).
    """
    # This runs for every event a projection folds: each value is handed its attributes
    # at once (``_built``), which a test holds to what the constructors build.
    p = payload
    kind = p["type"]
    if kind == "delegation":
        e = p["estimation"]
        return _built(Delegation, {
            "id": p["id"], "date": p["date"], "client": p["client"],
            "session_id": p["session_id"], "payload": p, "demande_id": p["demande_id"],
            "agent_id": p["agent_id"], "par_subagent": p["par_subagent"],
            "retour": p["retour"], "tokens_entree": p["tokens_entree"],
            "tokens_sortie": p["tokens_sortie"],
            "estimation": _built(Estimation, {
                "lus": e["lus"], "ecrits": e["ecrits"], "consigne": e["consigne"],
                "rendus": e["rendus"], "evites": e["evites"], "methode": e["methode"]}),
            "type": "delegation"})
    if kind == "pilotage":
        u = p["usage"]
        return _built(Pilotage, {
            "id": p["id"], "date": p["date"], "client": p["client"],
            "session_id": p["session_id"], "payload": p, "agent_id": p["agent_id"],
            "turn_id": p["turn_id"], "demande_ids": tuple(p["demande_ids"]),
            "modele": p["modele"],
            "usage": _built(Usage, {
                "input_tokens": u["input_tokens"], "output_tokens": u["output_tokens"],
                "cache_read_input_tokens": u["cache_read_input_tokens"],
                "cache_creation_input_tokens": u["cache_creation_input_tokens"]}),
            "cout": p["cout"], "type": "pilotage"})
    if kind == "correction":
        return _built(Correction, {
            "id": p["id"], "date": p["date"], "client": p["client"],
            "session_id": p["session_id"], "payload": p, "demande_id": p["demande_id"],
            "outil": p["outil"], "tool_use_id": p["tool_use_id"],
            "tokens_lus": p["tokens_lus"], "tokens_ecrits": p["tokens_ecrits"],
            "cout": p["cout"], "type": "correction"})
    raise TypeError(f"unknown event type {kind!r}")


_T = TypeVar("_T")
_new = object.__new__
_set = object.__setattr__


def _built(cls: type[_T], attributes: dict[str, Any]) -> _T:
    """An instance of the frozen dataclass ``cls`` whose attributes are ``attributes``
    (every field, by name, in declaration order), without running its ``__init__``,
    which sets each field through ``object.__setattr__``: a 12-field value costs 2.5 µs
    that way and 0.9 µs this way (ADR-0062). For this module's value classes only: no
    ``__post_init__``, no ``__slots__``."""
    value = _new(cls)
    _set(value, "__dict__", attributes)
    return value


def decode_payload(text: str) -> dict[str, Any]:
    """A stored event's ``payload`` (the event as received, JSON text) decoded: orjson, or
    stdlib json for what orjson cannot hold (an unknown field with an integer of hundreds
    of digits, valid JSON the store accepted), so one odd event never stops a reader."""
    try:
        return orjson.loads(text)  # type: ignore[no-any-return]
    except orjson.JSONDecodeError:
        return json.loads(text)  # type: ignore[no-any-return]


# --- Stored domain events ---------------------------------------------------------------


def stream_id(event_id: str) -> UUID:
    """The event store stream (originator id) of a received event: uuid5 of its stable id.

    Deterministic, so the store's (originator_id, version 1) uniqueness is the arbiter of
    duplicates across requests, processes and restarts (ADR-0002).
    """
    return uuid5(NAMESPACE_URL, f"/economies/{event_id}")


_STREAM_PREFIX = NAMESPACE_URL.bytes + b"/economies/"


def stream_hex(event_id: str) -> str:
    """``stream_id(event_id).hex``, without the two ``UUID`` objects ``uuid5`` builds: the
    same SHA-1 of the namespace and the name, its version and variant bits set as RFC 4122
    §4.3 says. The append keys a batch by it: a fifth of the uuid5 time (ADR-0116)."""
    digest = bytearray(hashlib.sha1(_STREAM_PREFIX + event_id.encode()).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # RFC 4122 variant
    return digest.hex()


class EvenementRecu(DomainEvent):
    """A received event, appended at version 1 of its own stream (ADR-0002).

    ``payload``: the event as received, as compact JSON text (unknown fields kept).
    ``recu_le``: when this service stored it, ISO 8601 UTC in JavaScript's
    ``toISOString()`` form (contract, "Stockage").
    """

    payload: str
    recu_le: str

    def received_payload(self) -> dict[str, Any]:
        """The event as received, decoded from ``payload`` (``decode_payload``)."""
        return decode_payload(self.payload)

    def evenement(self) -> Received:
        """The typed value of this stored event."""
        return from_payload(self.received_payload())

    def value(self) -> Stored:
        """What this stored event is to a projection: its typed value (``evenement``);
        a ``ConflitRecu`` overrides it."""
        return self.evenement()


class DelegationRecue(EvenementRecu):
    """A stored ``delegation`` event."""


class PilotageRecu(EvenementRecu):
    """A stored ``pilotage`` event."""


class CorrectionRecue(EvenementRecu):
    """A stored ``correction`` event."""


class ConflitRecu(EvenementRecu):
    """A re-sent id whose content differs from the stored version: the differing payload,
    kept as evidence in a stream of its own (``conflict_stream_id``). It never replaces the
    first version; it only counts under ``conflits`` of ``client``, the client of the
    version kept (SPEC, "Wire contract")."""

    client: str

    def value(self) -> Stored:
        """A ``Conflit`` of the kept version's client: no received event's figures."""
        return Conflit(self.client)


def canonical(payload: Mapping[str, Any]) -> str:
    """The payload as canonical JSON text (sorted keys, no spaces): equal content, equal
    text, whatever the key order or spacing the plugin used."""
    return json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def conflict_stream_id(event_id: str, canonical_payload: str) -> UUID:
    """The stream of one differing version of ``event_id``: uuid5 of the id and of the
    version's ``canonical`` text, so the same differing version re-sent is recorded once."""
    return uuid5(NAMESPACE_URL, f"/economies/conflit/{event_id}/{canonical_payload}")


STORED_CLASSES: Mapping[str, type[EvenementRecu]] = {
    "delegation": DelegationRecue,
    "pilotage": PilotageRecu,
    "correction": CorrectionRecue,
}
"""The stored domain event class of each contract ``type``."""

TOPICS: Mapping[str, str] = {kind: get_topic(cls) for kind, cls in STORED_CLASSES.items()}
"""The stored event topic of each contract ``type``, as the library's mapper names it."""

CONFLIT_TOPIC = get_topic(ConflitRecu)
"""The stored event topic of a ``ConflitRecu``."""

LEGACY_MODULE = "domain.events"
"""Where these classes lived before the package was named ``miam_economies`` (ADR-0041):
stores written then name them ``domain.events:DelegationRecue``..., topics the library
resolves through the registrations below, so those stores read unchanged."""

_LEGACY_CLASSES: tuple[type[EvenementRecu], ...] = (*STORED_CLASSES.values(), ConflitRecu)
for _stored_class in _LEGACY_CLASSES:
    register_topic(f"{LEGACY_MODULE}:{_stored_class.__qualname__}", _stored_class)
