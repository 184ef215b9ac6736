"""The classement's part of the OpenAPI document (SPEC, "Ranking presets: the
classement"; ADR-0081): its answer's schema and its route, with the query rules the route
checks (a 400 names the parameter)."""

from __future__ import annotations

from typing import Any

from miam_economies.api.service.answers import PERIMETRE
from miam_economies.domain.classement import CRITERES, NOT_GROUPS, NOT_TASKS


def classement_schema() -> dict[str, Any]:
    """``components/schemas/Classement``: the groups in order, each with its figures,
    intervals (a bound null where the data cannot give it yet), ``suffisant`` and
    ``rang``; the verdict of every pair of ranked groups."""
    bound = {"type": "number", "nullable": True}
    interval = {"type": "array", "items": bound, "minItems": 2, "maxItems": 2,
                "nullable": True}
    groupe = {
        "type": "object",
        "required": ["cle", "demandes", "sessions", "evites", "pilotage", "corrections",
                     "net", "net_par_demande", "taux_reprise", "intervalle_net_par_demande",
                     "intervalle_taux_reprise", "suffisant", "rang", "derive"],
        "properties": {
            "cle": {"type": "string"}, "demandes": {"type": "integer", "minimum": 1},
            "sessions": {"type": "integer", "minimum": 1, "nullable": True,
                         "description": "Claude Code sessions of its demandes: the unit of "
                                        "its variances; null for (inconnu), whose sessions "
                                        "are not kept (ADR-0166)"},
            **{name: {"type": "integer"}
               for name in ("evites", "pilotage", "corrections", "net")},
            "net_par_demande": {"type": "number"},
            "taux_reprise": {"type": "number", "nullable": True},
            "intervalle_net_par_demande": interval,
            "intervalle_taux_reprise": interval,
            "suffisant": {"type": "boolean"},
            "rang": {"type": "integer", "minimum": 1, "nullable": True},
            "derive": {
                "type": "object", "nullable": True,
                "description": "The group's recent period (its last quarter of demandes) "
                               "told apart from the rest of its history (ADR-0167)",
                "required": ["depuis", "avant", "apres", "intervalle"],
                "properties": {"depuis": {"type": "string", "format": "date"},
                               "avant": {"type": "number"}, "apres": {"type": "number"},
                               "intervalle": {**interval, "nullable": False}}},
            # Under a weighted formula: USD as exact (or micro-dollar) text (ADR-0130).
            "en_usd": {"type": "object", "properties": {
                **{name: {"type": "string"} for name in
                   ("evites", "pilotage", "corrections", "net", "net_par_demande")},
                "intervalle_net_par_demande": {
                    "type": "array", "nullable": True, "minItems": 2, "maxItems": 2,
                    "items": {"type": "string", "nullable": True}}}}}}
    comparaison = {
        "type": "object",
        "required": ["a", "b", "difference", "intervalle", "verdict", "raison"],
        "properties": {
            "a": {"type": "string"}, "b": {"type": "string"},
            "difference": bound, "intervalle": interval,
            "verdict": {"type": "string", "enum": ["a_devant", "b_devant", "indiscernable"]},
            "raison": {"type": "string", "nullable": True},
            "taches": {"type": "integer", "minimum": 0},
            "a_completer": {
                "type": "object", "nullable": True,
                "description": "About how many more demandes each group needs for a "
                               "difference of the size observed to be told (ADR-0167)",
                "required": ["a", "b"],
                "properties": {"a": {"type": "integer", "minimum": 0},
                               "b": {"type": "integer", "minimum": 0}}}}}
    return {
        "type": "object",
        "required": ["par", "formule", "position", "min", "critere", "perimetre",
                     "groupes", "comparaisons"],
        "properties": {
            "par": {"type": "string"}, "formule": {"type": "string"},
            "position": {"type": "integer", "minimum": 0},
            "min": {"type": "integer", "minimum": 1},
            "critere": {"type": "string", "enum": sorted(CRITERES.values())},
            # What the figures count (ADR-0165): the bilan's taux may differ.
            "perimetre": {"type": "string", "enum": [PERIMETRE]},
            "apparier": {"type": "string"},
            "depuis": {"type": "string", "format": "date"},
            "jusqu_au": {"type": "string", "format": "date"},
            "champ_vu": {"type": "boolean", "enum": [False],
                         "description": "par or apparier names a journal field while no "
                                        "journal line with a field was read (ADR-0164)"},
            "groupes": {"type": "array", "items": groupe},
            "comparaisons": {"type": "array", "items": comparaison},
            "attente_expiree": {"type": "boolean"},
            "comparaisons_limite": {"type": "integer", "minimum": 1},
            "prix": {"type": "object", "description": "The price table of a weighted "
                     "formula (ADR-0130)"},
        },
    }


def classement_path(auth_errors: dict[str, Any]) -> dict[str, Any]:
    """The ``GET /economies/classement`` operation; ``auth_errors`` its 401 and 503."""
    def answer(schema: dict[str, Any], description: str) -> dict[str, Any]:
        return {"description": description,
                "content": {"application/json": {"schema": schema}}}

    field = {"type": "string", "minLength": 1, "not": {"enum": [*NOT_GROUPS, "journal."]}}
    task = {"type": "string", "minLength": 1, "not": {"enum": [*NOT_TASKS, "journal."]}}
    return {
        "summary": "The groups of a journal field (or client) ranked by taux_reprise (or "
                   "net per demande), with 95 % intervals and the verdict of every pair "
                   "(99 %, adjusted for the number of pairs)",
        "parameters": [
            {"name": "par", "in": "query", "required": True, "schema": field},
            {"name": "selon", "in": "query",
             "schema": {"type": "string", "enum": sorted(CRITERES)}},
            {"name": "min", "in": "query",
             "schema": {"type": "integer", "minimum": 1, "maximum": 10**18 - 1}},
            {"name": "apparier", "in": "query", "schema": task,
             "description": "The journal field of a task (test_id...): each pair is "
                            "compared on the tasks both ran; it must differ from par"},
            *({"name": name, "in": "query",
               "schema": {"type": "string", "format": "date",
                          "pattern": r"^\d{4}-\d{2}-\d{2}$"},
               "description": "The window: demandes whose delegation's day is on or "
                              f"{side} this day (inclusive)"}
              for name, side in (("depuis", "after"), ("jusqu_au", "before"))),
            {"name": "attendre", "in": "query",
             "schema": {"type": "string", "enum": ["1", "true"]}},
        ],
        "responses": {
            "200": answer({"$ref": "#/components/schemas/Classement"}, "Classement"),
            "400": answer({"$ref": "#/components/schemas/Erreur"},
                          "par is jour, modele or demande; selon is not taux or net; min "
                          "is not an integer >= 1; apparier names par; par or apparier is "
                          "no field of MIAM's journal; depuis or jusqu_au is not a day "
                          "YYYY-MM-DD, or depuis is after jusqu_au; a query parameter "
                          "this route does not read, or given twice (ADR-0164)"),
            **auth_errors},
    }
