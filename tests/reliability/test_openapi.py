"""A schemathesis run against the served OpenAPI document: no 500, every answer in schema.

Bounded in examples (``MIAM_SCHEMATHESIS_EXAMPLES``, 25 per operation in ``make test``).
"""

from __future__ import annotations

import os
import time
from typing import Any

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.conftest import TOKEN, LiveServer

EXAMPLES = int(os.environ.get("MIAM_SCHEMATHESIS_EXAMPLES", "25"))
BUDGET = float(os.environ.get("MIAM_SCHEMATHESIS_SECONDS", "60"))
"""Seconds of generated calls per operation at most: the run is bounded in time too."""
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance]


def test_the_server_keeps_every_promise_of_its_openapi_document(server: LiveServer) -> None:
    schema = schemathesis.openapi.from_url(server.url + "/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    # schemathesis leaves out the document's own path...
    assert {op.label for op in operations} == {
        "POST /economies", "GET /economies/bilan", "GET /economies/demandes/{demande_id}",
        "GET /economies/rapport", "GET /healthz", "GET /metrics"}
    assert "/openapi.json" in schema.raw_schema["paths"]  # ...which it describes too
    calls: list[int] = []
    for operation in operations:
        _explore(operation, server.url, calls)
    assert len(calls) >= len(operations) * min(EXAMPLES, 5)
    assert server.client.get("/healthz").status_code == 200  # still serving


def _explore(operation: Any, url: str, calls: list[int]) -> None:
    """Call ``operation`` with up to EXAMPLES generated cases; every check must hold."""

    stop_at = time.monotonic() + BUDGET

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        if time.monotonic() > stop_at:
            return  # time budget spent: the remaining examples pass without a call
        case = data.draw(operation.as_strategy())
        response = case.call(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"})
        calls.append(response.status_code)
        case.validate_response(response, checks=CHECKS)

    run()
