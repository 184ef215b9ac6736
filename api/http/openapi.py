"""The OpenAPI 3.0 document of the HTTP interface, served at ``GET /openapi.json``.

Written by hand from the contract (SPEC, "Wire contract" and "Interfaces"), so that it
says what the service promises rather than what a framework infers, except for the event
schemas of ``POST /economies`` and the batch's limits: those are generated from
``domain.schema``, the declaration the validator walks (ADR-0046), so the document says
exactly what a 422 enforces. A schemathesis run in the suite checks the server against it:
no 500, every answer in its schema, schema-valid batches stored, the others refused.
"""

from __future__ import annotations

from typing import Any

from miam_economies.api.http.openapi_classement import classement_path, classement_schema
from miam_economies.api.http.openapi_session import (
    RAPPROCHEMENT_SUMMARY,
    session_path,
    session_schema,
)
from miam_economies.api.http.representation import FORMATS
from miam_economies.domain.bilan import FIGURES
from miam_economies.domain.schema import (
    COMMON,
    EVENTS,
    INSTANT_PATTERN,
    MAX_BATCH,
    MAX_NON_ASCII,
    MAX_SAFE_INTEGER,
    MAX_STRING,
    TYPE,
    Boolean,
    Exactly,
    Field,
    Instant,
    Integer,
    Kind,
    OneOf,
    Record,
    Text,
    TextList,
)

TEXT_PATTERN = ("^[\\u0001-\\u007f]*(?:[^\\u0000-\\u007f][\\u0001-\\u007f]*)"
                f"{{0,{MAX_NON_ASCII}}}$")
"""The storable text rule as a pattern (``domain.storable_text``, ADR-0135): ASCII
without U+0000, with at most ``MAX_NON_ASCII`` other characters among it."""

EVENT_SCHEMAS = {kind: kind.capitalize() for kind in EVENTS}
"""The name under ``components/schemas`` of each event type's schema."""


def kind_schema(kind: Kind) -> dict[str, Any]:
    """The OpenAPI 3.0 schema of one declared field kind (``domain.schema``), with the
    bounds the validator checks. ``pattern`` is ECMA-262 and anchored: OpenAPI searches."""
    match kind:
        case Integer(minimum=minimum):
            return {"type": "integer", "minimum": minimum, "maximum": MAX_SAFE_INTEGER}
        case Exactly(value=value):
            return {"type": "integer", "enum": [value]}
        case Text(non_empty=non_empty, nullable=nullable):
            schema: dict[str, Any] = {
                "type": "string", "maxLength": MAX_STRING, "pattern": TEXT_PATTERN,
                "description": f"at most {MAX_STRING} characters, at most {MAX_NON_ASCII} "
                               "of them beyond ASCII (counted in code points), without "
                               "U+0000 (the pattern states these exactly) and without a "
                               "lone surrogate escape such as \\ud800 (also refused with "
                               "a 422; no pattern can tell it from a character)"}
            if non_empty:
                schema["minLength"] = 1
            if nullable:
                schema["nullable"] = True
            return schema
        case Boolean():
            return {"type": "boolean"}
        case OneOf(values=values):
            return {"type": "string", "enum": list(values)}
        case Instant():
            return {"type": "string", "pattern": f"^{INSTANT_PATTERN}$",
                    "description": "ISO 8601 with an offset, as toISOString() writes it: "
                                   "a real day of years 0002 to 9998 (the pattern is exact)",
                    "example": "2026-10-30T09:12:04.512Z"}
        case TextList():
            return {"type": "array", "minItems": 1, "items": kind_schema(Text())}
        case Record(fields=fields):
            return _record(fields)
    raise TypeError(f"no OpenAPI schema for {kind!r}")  # declared in domain, unknown here


def _record(fields: tuple[Field, ...]) -> dict[str, Any]:
    return {"type": "object", "required": [f.name for f in fields],
            "properties": {f.name: kind_schema(f.kind) for f in fields}}


def event_schema(kind: str) -> dict[str, Any]:
    """The schema of one event type: ``COMMON`` and its own fields, ``type`` pinned."""
    schema = _record(COMMON + EVENTS[kind])
    schema["properties"][TYPE] = kind_schema(OneOf((kind,)))
    return schema


def batch_schema() -> dict[str, Any]:
    """The request body of ``POST /economies``: ``evenements``, 1 to ``MAX_BATCH`` events,
    each one of the event schemas (``type`` tells which)."""
    return {"type": "object", "required": ["evenements"], "properties": {
        "evenements": {"type": "array", "minItems": 1, "maxItems": MAX_BATCH, "items": {
            "oneOf": [{"$ref": f"#/components/schemas/{name}"}
                      for name in EVENT_SCHEMAS.values()]}}}}


_FIGURES = {
    "type": "object",
    "required": list(FIGURES),
    "properties": {
        "delegations": {"type": "integer"}, "evites": {"type": "integer"},
        "pilotage": {"type": "integer"}, "corrections": {"type": "integer"},
        "net": {"type": "integer"}, "taux_reprise": {"type": "number", "nullable": True},
        "anomalies": {"type": "object", "additionalProperties": {"type": "integer"}},
        "conflits": {"type": "integer"},
        "en_usd": {"type": "object", "description": "Under a weighted formula: the figures "
                   "in USD at the reference model's input price, exact decimal text "
                   "(ADR-0130)",
                   "required": ["evites", "pilotage", "corrections", "net"],
                   "properties": {k: {"type": "string", "pattern": r"^-?\d+\.\d{2,}$"}
                                  for k in ("evites", "pilotage", "corrections", "net")}},
    },
}
PRIX = {"type": "object", "description": "The price table of a weighted formula (ADR-0130)",
        "required": ["modele_reference", "usd_par_million", "source", "sha256"],
        "properties": {"modele_reference": {"type": "string"},
                       "usd_par_million": {"type": "string"},
                       "source": {"type": "string"},
                       "sha256": {"type": "string", "nullable": True}}}
_ERROR = {"type": "object", "required": ["ok", "erreur"],
          "properties": {"ok": {"type": "boolean", "enum": [False]},
                         "erreur": {"type": "string"}}}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


WAIT = {"type": "string", "enum": ["1", "true"]}
"""``attendre``: any other value is a 400 (ADR-0164)."""

UNKNOWN = ("a query parameter this route does not read, or given twice (the message names "
           "it and the nearest spelling: ADR-0164)")
"""What every read route refuses."""


def _error(description: str) -> dict[str, Any]:
    return _json({"$ref": "#/components/schemas/Erreur"}, description)


def _with_csv(operation: dict[str, Any]) -> dict[str, Any]:
    """``operation`` (a breakdown route's GET) also answering CSV (ADR-0134): its 200 offers
    ``text/csv``, and it takes ``format`` (``json`` or ``csv``; any other value is a 400)."""
    operation["parameters"] = [*operation.get("parameters", []), {
        "name": "format", "in": "query", "schema": {"type": "string", "enum": list(FORMATS)},
        "description": "csv: one row per group, a header row (RFC 4180); without it, an "
                       "Accept header preferring text/csv to application/json does the same"}]
    operation["responses"]["200"]["content"]["text/csv"] = {"schema": {"type": "string"}}
    operation["responses"]["400"]["description"] += "; format is not json or csv"
    return operation


def openapi_document() -> dict[str, Any]:
    """The document, as a JSON-ready dict (OpenAPI 3.0.3)."""
    bilan = {
        "type": "object",
        "required": ["economies", "total", "formule", "position", "provenance",
                     "conservation"],
        "properties": {
            "economies": {"type": "object", "additionalProperties": _FIGURES},
            "total": _FIGURES,
            "formule": {"type": "string"},
            "position": {"type": "integer", "minimum": 0},
            "par": {"type": "string"},
            "puis": {"type": "string"},
            "champ_vu": {"type": "boolean", "enum": [False],
                         "description": "par or puis names a journal field while no "
                                        "journal line with a field was read: it cannot "
                                        "be known yet (ADR-0164)"},
            # {key: {client: figures}}, or with puis {key: {key of puis: {client: ...}}}.
            "groupes": {"type": "object", "additionalProperties": {
                "type": "object", "additionalProperties": {"anyOf": [
                    _FIGURES, {"type": "object", "additionalProperties": _FIGURES}]}}},
            "provenance": {"type": "object",
                           "required": ["formule", "position", "tete", "evenements",
                                        "fuseau", "genere_le"],
                           "properties": {"prix": PRIX, "journal": {
                               "type": "object",
                               "required": ["lignes", "malformees", "sans_demande",
                                            "valeurs_ecartees"]}}},
            # stockes = comptes + ecartes: the events set aside are in no figure (ADR-0135).
            "conservation": {"type": "object",
                             "required": ["stockes", "comptes", "en_attente", "ecartes"]},
            "rapprochement": RAPPROCHEMENT_SUMMARY,
        },
    }
    demande = {
        "type": "object",
        "required": ["demande_id", "client", "delegation", "pilotage", "corrections",
                     "evites", "net", "taux_reprise"],
        "properties": {"demande_id": {"type": "string"}, "client": {"type": "string"},
                       "delegation": {"type": "object", "nullable": True},
                       "evites": {"type": "integer"}, "net": {"type": "integer"},
                       "taux_reprise": {"type": "number", "nullable": True}},
    }
    day = {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"}
    auth_errors = {"401": _error("Missing or wrong bearer token"),
                   "503": _error("Storage unavailable: retry later")}
    return {
        "openapi": "3.0.3",
        "info": {"title": "miam-economies", "version": "1",
                 "description": "Token savings of MIAM's Claude Code plugin."},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                **{name: event_schema(kind) for kind, name in EVENT_SCHEMAS.items()},
                "Erreur": _ERROR, "Bilan": bilan, "Demande": demande,
                "Classement": classement_schema(), "Session": session_schema(_FIGURES),
            },
        },
        "security": [{"bearer": []}],
        "paths": {
            "/economies": {"post": {
                "summary": f"Ingest a batch of 1 to {MAX_BATCH} events (validate, append, "
                           "acknowledge)",
                "requestBody": {"required": True, "content": {"application/json": {
                    "schema": batch_schema()}}},
                "responses": {
                    "200": _json({"type": "object", "required": ["ok", "recus", "doublons"],
                                  "properties": {"ok": {"type": "boolean", "enum": [True]},
                                                 "recus": {"type": "integer", "minimum": 0},
                                                 "doublons": {"type": "integer",
                                                              "minimum": 0},
                                                 "conflits": {"type": "integer",
                                                              "minimum": 1}}},
                                 "Stored: recus new, doublons already known"),
                    "400": _error("Not strict UTF-8 JSON"),
                    "408": _error("The body did not arrive in time (30 s by default)"),
                    "413": _error("Body over the limit (1 MiB by default)"),
                    "422": _json({"type": "object", "required": ["ok", "erreurs"],
                                  "properties": {"ok": {"type": "boolean", "enum": [False]},
                                                 "omis": {"type": "integer"},
                                                 "erreurs": {"type": "array", "items": {
                                                     "type": "object",
                                                     "required": ["index", "champ", "message"],
                                                     "properties": {
                                                         "index": {"type": "integer",
                                                                   "nullable": True},
                                                         "champ": {"type": "string"},
                                                         "message": {"type": "string"}}}}}},
                                 "The batch breaks the schema: every fault, nothing stored"),
                    **auth_errors,
                },
            }},
            "/economies/bilan": {"get": _with_csv({
                "summary": "The bilan snapshot, optionally broken down",
                "parameters": [
                    {"name": "par", "in": "query", "schema": {"type": "string"},
                     "description": "client, jour, semaine, mois, modele, demande, "
                                    "session (alone) or a journal field"},
                    {"name": "puis", "in": "query", "schema": {"type": "string"},
                     "description": "A second dimension splitting each group of par "
                                    "(ADR-0133)"},
                    {"name": "depuis", "in": "query", "schema": day},
                    {"name": "jusqu_au", "in": "query", "schema": day},
                    {"name": "attendre", "in": "query", "schema": WAIT},
                ],
                "responses": {"200": _json({"$ref": "#/components/schemas/Bilan"}, "Bilan"),
                              "400": _error("Bad day bounds or dimensions; a dimension "
                                            "neither built in nor a field of MIAM's "
                                            "journal; " + UNKNOWN),
                              **auth_errors},
            })},
            "/economies/demandes/{demande_id}": {"get": {
                "summary": "One demande's figures",
                "parameters": [{"name": "demande_id", "in": "path", "required": True,
                                "schema": {"type": "string", "minLength": 1}},
                               {"name": "attendre", "in": "query", "schema": WAIT}],
                "responses": {"200": _json({"$ref": "#/components/schemas/Demande"},
                                           "The demande"),
                              "400": _error(UNKNOWN),
                              "404": _error("Never seen"), **auth_errors},
            }},
            "/economies/sessions/{session_id}": {"get": session_path(auth_errors, UNKNOWN)},
            "/economies/classement": {"get": _with_csv(classement_path(auth_errors))},
            "/openapi.json": {"get": {
                "summary": "This document, without auth", "security": [],
                "responses": {"200": _json({"type": "object", "required": ["openapi"]},
                                           "OpenAPI 3.0 document"),
                              "400": _error(UNKNOWN)},
            }},
            "/economies/rapport": {"get": {
                "summary": "The report: one self-contained HTML page with its charts",
                "parameters": [{"name": "depuis", "in": "query", "schema": day},
                               {"name": "jusqu_au", "in": "query", "schema": day}],
                "responses": {"200": {"description": "The page (no network needed)",
                                      "content": {"text/html": {"schema": {
                                          "type": "string"}}}},
                              "400": _error("Bad day bounds; " + UNKNOWN),
                              "501": _error("Installed without the report extra (pygal, "
                                            "Jinja2): the message names it"),
                              **auth_errors},
            }},
            "/healthz": {"get": {
                "summary": "Health, without auth: the store's head, the projection's "
                           "position and their difference (events)",
                "security": [],
                "responses": {"200": _json({"type": "object",
                                            "required": ["ok", "tete", "position", "retard",
                                                         "ecartes"],
                                            "properties": {
                                                "ok": {"type": "boolean", "enum": [True]},
                                                "tete": {"type": "integer", "minimum": 0},
                                                "position": {"type": "integer",
                                                             "minimum": 0},
                                                "retard": {"type": "integer",
                                                           "minimum": 0},
                                                "ecartes": {"type": "integer",
                                                            "minimum": 0}}}, "Healthy"),
                              "400": _error(UNKNOWN),
                              "503": _error("The projection is failing; or events wait and "
                                            "the fold has not advanced for "
                                            "--fold-stall-after seconds (then with tete, "
                                            "position, retard, ecartes and arrete_depuis, "
                                            "seconds: ADR-0136); or the store cannot be "
                                            "read within the lock timeout")},
            }},
            "/metrics": {"get": {
                "summary": "Metrics in Prometheus text format (bearer token unless the "
                           "server runs with --metrics-public)",
                "responses": {"200": {"description": "Prometheus text exposition 0.0.4",
                                      "content": {"text/plain": {"schema": {
                                          "type": "string"}}}},
                              "400": _error(UNKNOWN), **auth_errors},
            }},
        },
    }
