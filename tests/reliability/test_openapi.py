"""A schemathesis run against the served OpenAPI document: no 500, every answer in schema,
and on ``POST /economies``, whose body schema is generated from ``domain.schema``
(ADR-0046), every schema-valid batch stored and every other body refused
(``positive_data_acceptance``, ``negative_data_rejection``).

``POST /economies`` gets schemathesis's coverage phase (every bound of the document, one
step inside and one outside: a few hundred fixed cases, about 2 s) and random cases of
both generation modes; the other routes get random valid cases. Random cases are bounded in
number (``MIAM_SCHEMATHESIS_EXAMPLES``: 25 per operation and mode in ``make test``) and
every phase in time (``MIAM_SCHEMATHESIS_SECONDS`` each).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)

from miam_economies.api.service.settings import DEFAULT_MAX_BODY
from miam_economies.domain.strict_json import NotStrictJson, loads_strict
from tests.conftest import TOKEN, LiveServer
from tests.oas30 import validator

EXAMPLES = int(os.environ.get("MIAM_SCHEMATHESIS_EXAMPLES", "25"))
BUDGET = float(os.environ.get("MIAM_SCHEMATHESIS_SECONDS", "60"))
"""Seconds of calls per operation and phase at most: the run is bounded in time too."""
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance]
INGEST = "POST /economies"
"""The operation whose body the document states exactly: the data checks run there. The
GET routes' query rules (``par``'s names, ``depuis`` before ``jusqu_au``) are not in the
document, so only ``CHECKS`` run on them."""
DATA_CHECKS = [*CHECKS, positive_data_acceptance, negative_data_rejection]
CONFIG = schemathesis.Config.from_dict({"operations": [{"include-name": INGEST, "checks": {
    "positive_data_acceptance": {"expected-statuses": ["200"]},
    "negative_data_rejection": {"expected-statuses": ["400", "422"]}}}]})
"""Stricter than schemathesis's defaults: a valid batch is stored (200; not a 404, not a
5xx), an invalid body is refused by the strict decoder (400) or the validator (422)."""
AUTH = {"Authorization": f"Bearer {TOKEN}"}
"""Set on every case: a case whose token schemathesis dropped or mangled is refused with 401
before its body is read, which says nothing of the body (auth: tests/integration)."""

Calls = list[tuple[str, GenerationMode, int]]


def test_the_server_keeps_every_promise_of_its_openapi_document(server: LiveServer) -> None:
    schema = schemathesis.openapi.from_url(server.url + "/openapi.json", config=CONFIG)
    operations = [result.ok() for result in schema.get_all_operations()]
    # schemathesis leaves out the document's own path...
    assert {op.label for op in operations} == {
        INGEST, "GET /economies/bilan", "GET /economies/demandes/{demande_id}",
        "GET /economies/sessions/{session_id}", "GET /economies/classement",
        "GET /economies/rapport", "GET /healthz", "GET /metrics"}
    assert "/openapi.json" in schema.raw_schema["paths"]  # ...which it describes too
    calls: Calls = []
    for operation in operations:
        if operation.label == INGEST:
            _cover(schema, operation, server, calls)
            _explore(operation, GenerationMode.NEGATIVE, server, calls)
        _explore(operation, GenerationMode.POSITIVE, server, calls)
    assert len(calls) >= (len(operations) + 1) * min(EXAMPLES, 5)
    ingest = {(mode, status) for label, mode, status in calls if label == INGEST}
    assert {(GenerationMode.POSITIVE, 200), (GenerationMode.NEGATIVE, 422)} <= ingest
    assert server.client.get("/healthz").status_code == 200  # still serving


def _cover(schema: Any, operation: Any, server: LiveServer, calls: Calls) -> None:
    """Schemathesis's coverage phase on ``operation``: cases built from each bound of the
    document (a string of maxLength and of maxLength + 1, minimum and minimum - 1, each
    required field missing, each enum's outsiders, each wrong type...), valid and invalid,
    the boundary values random generation seldom draws."""
    stop_at = time.monotonic() + BUDGET
    for case in schema.iter_coverage_cases(
            operation, generation_modes=list(GenerationMode),
            generation_config=schema.config.generation_for(operation=operation)):
        if time.monotonic() > stop_at:
            break
        if case.meta.phase.data.parameter == "Authorization":
            continue  # a case about the token, not the body: see AUTH
        case.headers = {**(case.headers or {}), **AUTH}
        _call(case, case.meta.generation.mode, server, calls)


def _explore(operation: Any, mode: GenerationMode, server: LiveServer, calls: Calls) -> None:
    """Call ``operation`` with up to EXAMPLES random cases of ``mode``; every check must
    hold."""
    stop_at = time.monotonic() + BUDGET
    strategy = operation.as_strategy(generation_mode=mode, headers=AUTH)

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        if time.monotonic() > stop_at:
            return  # time budget spent: the remaining examples pass without a call
        _call(data.draw(strategy), mode, server, calls)

    run()


def _call(case: Any, mode: GenerationMode, server: LiveServer, calls: Calls) -> None:
    """Send ``case`` and run the checks on the answer (the data checks on INGEST)."""
    response = case.call(base_url=server.url)
    calls.append((case.operation.label, mode, response.status_code))
    checks = CHECKS
    if case.operation.label == INGEST and _judge_ingest(case, response, mode, server):
        checks = DATA_CHECKS
    case.validate_response(response, checks=checks)


def _judge_ingest(case: Any, response: Any, mode: GenerationMode, server: LiveServer) -> bool:
    """Check what the data checks cannot see on ``POST /economies`` (ADR-0046), so they
    are not fooled; False when they do not apply to this answer.

    * The byte limit, which OpenAPI cannot state: a schema-valid batch of long strings can
      pass 1 MiB; its 413 is right, and only then are the data checks skipped.
    * Strict JSON: a 400 is right only for a body the strict decoder refuses (not UTF-8,
      not JSON, NaN...), never for a JSON document the schema judges.
    * A repeated key, which OpenAPI cannot state either: a generated body is a decoded
      value, where a key appears once. Each stored valid batch is sent again with
      ``evenements`` repeated ahead of it (a last-wins decoder would keep the valid one),
      and must be refused.
    * A 422 refuses exactly what the document refuses: the batch itself (a batch-level
      fault) and each event the document finds invalid, no other. A negative case may
      break the document in several places; one refused event would answer 422 even if
      the server let the others, or the batch's size, through.
    """
    sent = response.request.body or b""
    sent = sent.encode() if isinstance(sent, str) else sent
    if response.status_code == 413:
        assert len(sent) > DEFAULT_MAX_BODY, "413 for a body within the limit"
        return False
    if response.status_code == 400:
        try:
            loads_strict(sent)
        except NotStrictJson:
            return True
        raise AssertionError(f"400 for a strict JSON body: {response.text}")
    if mode is GenerationMode.POSITIVE and response.status_code == 200:
        assert sent.startswith(b"{")
        again = server.client.post("/economies", content=b'{"evenements": [], ' + sent[1:],
                                   headers={"Content-Type": "application/json"})
        assert again.status_code == 400, again.text
        assert "repeated key" in json.loads(again.text)["erreur"]
    if response.status_code == 422:
        _refused_where_the_document_refuses(case, loads_strict(sent), response.json())
    return True


def _refused_where_the_document_refuses(case: Any, body: Any, answer: dict[str, Any]) -> None:
    """The 422 ``answer`` to ``body`` has a batch-level fault exactly when the served
    document refuses the batch itself, and faults exactly at the events it refuses."""
    raw = case.operation.schema.raw_schema
    components = raw["components"]["schemas"]
    batch = raw["paths"]["/economies"]["post"]["requestBody"]["content"][
        "application/json"]["schema"]
    listed = answer["erreurs"]
    batch_only = {**batch, "properties": {**batch["properties"], "evenements": {
        **batch["properties"]["evenements"], "items": {}}}}
    document_refuses_the_batch = not validator(batch_only, components).is_valid(body)
    assert any(f["index"] is None for f in listed) == document_refuses_the_batch, listed[:3]
    if not (isinstance(body, dict) and isinstance(body.get("evenements"), list)):
        return
    event = validator(batch["properties"]["evenements"]["items"], components)
    invalid = [i for i, item in enumerate(body["evenements"]) if not event.is_valid(item)]
    refused = sorted({f["index"] for f in listed if f["index"] is not None})
    if answer.get("omis"):  # faults are listed in batch order, the first MAX_FAULTS
        invalid = [i for i in invalid if i <= max(refused, default=-1)]
    assert refused == invalid, f"events refused {refused[:5]}, invalid {invalid[:5]}"
