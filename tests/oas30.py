"""OpenAPI 3.0 schemas read as schemathesis reads them, to judge values in tests: JSON
Schema draft 4 (``3.0`` is not an integer there) plus ``nullable``, ECMA-262 patterns,
checked by ``jsonschema_rs``, schemathesis's own validator (ADR-0046)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema_rs


def draft4(schema: Any, components: Mapping[str, Any]) -> Any:
    """``schema`` as plain draft 4: ``nullable`` becomes a ``null`` type and each
    ``#/components/schemas/...`` reference is replaced by the schema from ``components``."""
    if isinstance(schema, list):
        return [draft4(item, components) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        return draft4(components[schema["$ref"].rsplit("/", 1)[1]], components)
    plain = {key: draft4(value, components) for key, value in schema.items()
             if key != "nullable"}
    if schema.get("nullable"):
        plain["type"] = [schema["type"], "null"]
    return plain


def validator(schema: Any, components: Mapping[str, Any]) -> Any:
    """A ``jsonschema_rs`` validator of ``schema`` (``is_valid``, ``iter_errors``)."""
    return jsonschema_rs.Draft4Validator(draft4(schema, components))
