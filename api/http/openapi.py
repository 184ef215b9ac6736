"""The OpenAPI 3.0 document of the HTTP interface, served at ``GET /openapi.json``.

Written by hand from the contract (SPEC, "Wire contract" and "Interfaces"), so that it
says what the service promises rather than what a framework infers; a schemathesis run in
the suite checks the server against it (no 500, every answer in its schema).
"""

from __future__ import annotations

from typing import Any

from miam_economies.domain.validation import MAX_BATCH, MAX_SAFE_INTEGER, MAX_STRING

_COUNTER = {"type": "integer", "minimum": 0, "maximum": MAX_SAFE_INTEGER}
_SIGNED = {"type": "integer", "minimum": -MAX_SAFE_INTEGER, "maximum": MAX_SAFE_INTEGER}
_STRING = {"type": "string", "maxLength": MAX_STRING}
_ID = {"type": "string", "minLength": 1, "maxLength": MAX_STRING}
_DATE = {"type": "string", "format": "date-time",
         "pattern": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$",
         "example": "2026-10-30T09:12:04.512Z"}
_COMMON = {
    "schema": {"type": "integer", "enum": [1]},
    "id": _ID, "date": _DATE, "client": _ID, "session_id": _STRING,
}
_REQUIRED_COMMON = ["schema", "type", "id", "date", "client", "session_id"]


def _event(kind: str, fields: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": [*_REQUIRED_COMMON, *fields],
        "properties": {**_COMMON, "type": {"type": "string", "enum": [kind]}, **fields},
    }


_FIGURES = {
    "type": "object",
    "required": ["delegations", "evites", "pilotage", "corrections", "net", "taux_reprise"],
    "properties": {
        "delegations": {"type": "integer"}, "evites": {"type": "integer"},
        "pilotage": {"type": "integer"}, "corrections": {"type": "integer"},
        "net": {"type": "integer"}, "taux_reprise": {"type": "number", "nullable": True},
        "anomalies": {"type": "object", "additionalProperties": {"type": "integer"}},
        "conflits": {"type": "integer"},
    },
}
_ERROR = {"type": "object", "required": ["ok", "erreur"],
          "properties": {"ok": {"type": "boolean", "enum": [False]},
                         "erreur": {"type": "string"}}}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _error(description: str) -> dict[str, Any]:
    return _json({"$ref": "#/components/schemas/Erreur"}, description)


def openapi_document() -> dict[str, Any]:
    """The document, as a JSON-ready dict (OpenAPI 3.0.3)."""
    delegation = _event("delegation", {
        "demande_id": _STRING,
        "agent_id": {**_STRING, "nullable": True},
        "par_subagent": {"type": "boolean"},
        "retour": {"type": "string", "enum": ["complet", "apercu"]},
        "tokens_entree": _COUNTER, "tokens_sortie": _COUNTER,
        "estimation": {"type": "object",
                       "required": ["lus", "ecrits", "consigne", "rendus", "evites",
                                    "methode"],
                       "properties": {"lus": _COUNTER, "ecrits": _COUNTER,
                                      "consigne": _COUNTER, "rendus": _COUNTER,
                                      "evites": _SIGNED, "methode": _STRING}},
    })
    pilotage = _event("pilotage", {
        "agent_id": _STRING, "turn_id": _STRING,
        "demande_ids": {"type": "array", "minItems": 1, "items": _STRING},
        "modele": _STRING,
        "usage": {"type": "object",
                  "required": ["input_tokens", "output_tokens", "cache_read_input_tokens",
                               "cache_creation_input_tokens"],
                  "properties": {k: _COUNTER for k in (
                      "input_tokens", "output_tokens", "cache_read_input_tokens",
                      "cache_creation_input_tokens")}},
        "cout": _COUNTER,
    })
    correction = _event("correction", {
        "demande_id": _STRING,
        "outil": {"type": "string", "enum": ["Read", "Edit", "Write", "NotebookEdit", "Bash"]},
        "tool_use_id": _STRING,
        "tokens_lus": _COUNTER, "tokens_ecrits": _COUNTER, "cout": _COUNTER,
    })
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
            "groupes": {"type": "object", "additionalProperties": {
                "type": "object", "additionalProperties": _FIGURES}},
            "provenance": {"type": "object",
                           "required": ["formule", "position", "tete", "evenements",
                                        "fuseau", "genere_le"]},
            "conservation": {"type": "object",
                             "required": ["stockes", "comptes", "en_attente"]},
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
                "Delegation": delegation, "Pilotage": pilotage, "Correction": correction,
                "Erreur": _ERROR, "Bilan": bilan, "Demande": demande,
            },
        },
        "security": [{"bearer": []}],
        "paths": {
            "/economies": {"post": {
                "summary": "Ingest a batch of 1 to 500 events (validate, append, acknowledge)",
                "requestBody": {"required": True, "content": {"application/json": {
                    "schema": {"type": "object", "required": ["evenements"], "properties": {
                        "evenements": {"type": "array", "minItems": 1,
                                       "maxItems": MAX_BATCH, "items": {"oneOf": [
                                           {"$ref": "#/components/schemas/Delegation"},
                                           {"$ref": "#/components/schemas/Pilotage"},
                                           {"$ref": "#/components/schemas/Correction"}]}}}}}}},
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
            "/economies/bilan": {"get": {
                "summary": "The bilan snapshot, optionally broken down",
                "parameters": [
                    {"name": "par", "in": "query", "schema": {"type": "string"}},
                    {"name": "depuis", "in": "query", "schema": day},
                    {"name": "jusqu_au", "in": "query", "schema": day},
                    {"name": "attendre", "in": "query",
                     "schema": {"type": "string", "enum": ["1"]}},
                ],
                "responses": {"200": _json({"$ref": "#/components/schemas/Bilan"}, "Bilan"),
                              "400": _error("Bad day bounds"), **auth_errors},
            }},
            "/economies/demandes/{demande_id}": {"get": {
                "summary": "One demande's figures",
                "parameters": [{"name": "demande_id", "in": "path", "required": True,
                                "schema": {"type": "string", "minLength": 1}},
                               {"name": "attendre", "in": "query",
                                "schema": {"type": "string", "enum": ["1"]}}],
                "responses": {"200": _json({"$ref": "#/components/schemas/Demande"},
                                           "The demande"),
                              "404": _error("Never seen"), **auth_errors},
            }},
            "/openapi.json": {"get": {
                "summary": "This document, without auth", "security": [],
                "responses": {"200": _json({"type": "object", "required": ["openapi"]},
                                           "OpenAPI 3.0 document")},
            }},
            "/economies/rapport": {"get": {
                "summary": "The report: one self-contained HTML page with its charts",
                "parameters": [{"name": "depuis", "in": "query", "schema": day},
                               {"name": "jusqu_au", "in": "query", "schema": day}],
                "responses": {"200": {"description": "The page (no network needed)",
                                      "content": {"text/html": {"schema": {
                                          "type": "string"}}}},
                              "400": _error("Bad day bounds"),
                              "501": _error("Installed without the report extra (pygal, "
                                            "Jinja2): the message names it"),
                              **auth_errors},
            }},
            "/healthz": {"get": {
                "summary": "Health, without auth: the store's head, the projection's "
                           "position and their difference (events)",
                "security": [],
                "responses": {"200": _json({"type": "object",
                                            "required": ["ok", "tete", "position", "retard"],
                                            "properties": {
                                                "ok": {"type": "boolean", "enum": [True]},
                                                "tete": {"type": "integer", "minimum": 0},
                                                "position": {"type": "integer",
                                                             "minimum": 0},
                                                "retard": {"type": "integer",
                                                           "minimum": 0}}}, "Healthy"),
                              "503": _error("The projection is failing, or the store "
                                            "cannot be read")},
            }},
            "/metrics": {"get": {
                "summary": "Metrics in Prometheus text format (bearer token unless the "
                           "server runs with --metrics-public)",
                "responses": {"200": {"description": "Prometheus text exposition 0.0.4",
                                      "content": {"text/plain": {"schema": {
                                          "type": "string"}}}},
                              **auth_errors},
            }},
        },
    }
