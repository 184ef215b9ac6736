"""The ``GET /economies/sessions/{session_id}`` part of the OpenAPI document
(``api.http.openapi``): the session's schema and its operation (SPEC, "Claude Code's own
record: relevés, sessions, and the share saved"; ADR-0176, ADR-0177)."""

from __future__ import annotations

from typing import Any

from miam_economies.domain.rapprochement import VERDICTS

_TOKENS = {"type": "integer"}
_USAGE = {"type": "object",
          "required": ["input_tokens", "output_tokens", "cache_read_input_tokens",
                       "cache_creation_input_tokens"],
          "properties": {name: {"type": "integer", "minimum": 0} for name in (
              "input_tokens", "output_tokens", "cache_read_input_tokens",
              "cache_creation_input_tokens")}}
_REPLIES: dict[str, Any] = {"type": "object",
                              "required": ["reponses", "incompletes", "usage", "cout"],
                              "properties": {
                                  "reponses": {"type": "integer", "minimum": 0},
                                  "incompletes": {"type": "integer", "minimum": 0},
                                  "usage": _USAGE, "cout": _TOKENS}}
_SHARE = {"type": "number", "nullable": True}

RAPPROCHEMENT_SUMMARY = {
    "type": "object", "nullable": True,
    "required": ["sessions", "agents", *VERDICTS, "ecart", "depense_claude",
                 "part_economisee"],
    "properties": {**{name: {"type": "integer", "minimum": 0}
                      for name in ("sessions", "agents", *VERDICTS)},
                   "ecart": _TOKENS, "depense_claude": _TOKENS,
                   "part_economisee": _SHARE},
}
"""The bilan's ``rapprochement``: null until a relevé is folded (SPEC, "In the bilan")."""


def session_schema(figures: dict[str, Any]) -> dict[str, Any]:
    """The session's document (``session_answers.session_answer``); ``figures``: the
    schema of the bilan's figures, which ``economies`` has."""
    entry = {"type": "object",
             "required": ["agent_id", "plugin", "releve", "ecart", "verdict"],
             "properties": {
                 "agent_id": {"type": "string"},
                 "plugin": {"type": "object", "required": ["tours", "usage", "cout"],
                            "properties": {"tours": {"type": "integer", "minimum": 0},
                                           "usage": _USAGE, "cout": _TOKENS}},
                 "releve": {**_REPLIES, "nullable": True},
                 "ecart": {"type": "integer", "nullable": True},
                 "verdict": {"type": "string", "enum": list(VERDICTS)}}}
    claude = {**_REPLIES, "nullable": True,
              "required": [*_REPLIES["required"], "par_agent"],
              "properties": {**_REPLIES["properties"],
                             "par_agent": {"type": "object",
                                           "additionalProperties": _REPLIES},
                             "en_usd": {"type": "object", "required": ["cout"],
                                        "properties": {"cout": {"type": "string"}}}}}
    return {"type": "object",
            "required": ["session_id", "economies", "claude", "part_economisee",
                         "rapprochement"],
            "properties": {
                "session_id": {"type": "string"},
                "economies": figures,
                "claude": claude, "part_economisee": _SHARE,
                "rapprochement": {"type": "array", "items": entry}}}


def session_path(auth_errors: dict[str, Any], unknown: str) -> dict[str, Any]:
    """The operation; ``auth_errors`` its 401 and 503, ``unknown`` the words of the 400
    every read route gives for a query parameter it does not read."""
    def answer(schema: dict[str, Any], description: str,
               media: str = "application/json") -> dict[str, Any]:
        return {"description": description, "content": {media: {"schema": schema}}}

    error = {"$ref": "#/components/schemas/Erreur"}
    return {
        "summary": "One Claude Code session: the plugin's figures, Claude Code's own "
                   "replies, the share saved and the rapprochement of each subagent",
        "parameters": [
            {"name": "session_id", "in": "path", "required": True,
             "schema": {"type": "string", "minLength": 1}},
            {"name": "format", "in": "query",
             "schema": {"type": "string", "enum": ["json", "ligne"]},
             "description": "ligne: one line of text for Claude Code's status line"},
            {"name": "attendre", "in": "query",
             "schema": {"type": "string", "enum": ["1", "true"]}}],
        "responses": {
            "200": {"description": "The session (JSON), or one line (format=ligne)",
                    "content": {"application/json": {"schema": {
                        "$ref": "#/components/schemas/Session"}},
                        "text/plain": {"schema": {"type": "string"}}}},
            "400": answer(error, "format is not json or ligne; " + unknown),
            "404": answer(error, "Neither the plugin nor a relevé has seen the session"),
            **auth_errors},
    }
