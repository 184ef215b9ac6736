"""Hostile and malformed input: each gets its status, stores nothing, and the server serves.

Issue 5's list, beyond what tests/integration/test_http.py already covers (empty, not
UTF-8, BOM, NaN/Infinity, repeated keys, deep nesting, 5,000-digit integers, 413 with and
without Content-Length, auth variants).
"""

from __future__ import annotations

import copy
import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import EXAMPLE_BATCH, TOKEN, LiveServer

DELEGATION, PILOTAGE = EXAMPLE_BATCH["evenements"]


def with_field(event: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(event)
    *parents, last = path.split(".")
    target = changed
    for key in parents:
        target = target[key]
    target[last] = value
    return changed


CONFUSIONS = [True, 3.0, "3", None, [], {}, -1, 2**53]
FIELDS = {
    "delegation": ["schema", "id", "date", "client", "session_id", "demande_id",
                   "par_subagent", "retour", "tokens_entree", "tokens_sortie",
                   "estimation", "estimation.lus", "estimation.ecrits",
                   "estimation.consigne", "estimation.rendus", "estimation.evites",
                   "estimation.methode"],
    "pilotage": ["agent_id", "turn_id", "demande_ids", "modele", "usage",
                 "usage.input_tokens", "usage.output_tokens", "usage.cache_read_input_tokens",
                 "usage.cache_creation_input_tokens", "cout"],
}


def cases() -> list[Any]:
    out = []
    for kind, fields in FIELDS.items():
        event = DELEGATION if kind == "delegation" else PILOTAGE
        for path in fields:
            for value in CONFUSIONS:
                if path == "estimation.evites" and value == -1:
                    continue  # evites may be negative
                if path == "par_subagent" and value is True:
                    continue  # the example's own value
                if path in ("id", "client", "session_id", "demande_id", "agent_id",
                            "turn_id", "modele", "estimation.methode") and value == "3":
                    continue  # a string where a string is due
                out.append(pytest.param(with_field(event, path, value),
                                        id=f"{kind}-{path}-{value!r}"))
    return out


@pytest.fixture(scope="module")
def refusing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """One server for the many refusals: its store must stay empty throughout."""
    live = LiveServer(tmp_path_factory.mktemp("hostile") / "data")
    live.start()
    yield live
    live.stop()
    live.client.close()


@pytest.mark.parametrize("event", cases())
def test_every_type_confusion_is_a_422_that_stores_nothing(
        refusing: LiveServer, event: dict[str, Any]) -> None:
    response = refusing.post({"evenements": [event]})
    assert response.status_code == 422, response.text
    assert refusing.client.get("/economies/bilan").json()["provenance"]["tete"] == 0


@pytest.mark.parametrize("body", [
    b'"evenements"', b"[]", b"{}", b'{"evenements": "x"}', b'{"evenements": {}}',
    b'{"evenements": [1, "x", null]}',
])
def test_bodies_of_the_wrong_shape_are_422(refusing: LiveServer, body: bytes) -> None:
    assert refusing.client.post("/economies", content=body).status_code == 422
    assert refusing.client.get("/economies/bilan").json()["provenance"]["tete"] == 0


@pytest.mark.parametrize("date", ["2026-10-30T09:12:04.512", "20250301120000Z",
                                  "2025-W09-6", "2026-10-30", "2026-10-30T09:12Z"])
def test_dates_without_offset_or_in_other_forms_are_422(refusing: LiveServer,
                                                        date: str) -> None:
    response = refusing.post({"evenements": [{**DELEGATION, "date": date}]})
    assert response.status_code == 422
    assert response.json()["erreurs"][0]["champ"] == "date"


def test_a_ten_thousand_character_id_is_refused(refusing: LiveServer) -> None:
    response = refusing.post({"evenements": [{**DELEGATION, "id": "x" * 10_000}]})
    assert response.status_code == 422
    assert "512" in response.json()["erreurs"][0]["message"]


def test_control_characters_and_emoji_are_stored_as_received(server: LiveServer) -> None:
    odd = {**DELEGATION, "id": "claude-code:dem-\u0001\u00e9\U0001f600",
           "demande_id": "dem-\u0001\u00e9\U0001f600", "note": "tab\there\nnul\u0000"}
    assert server.post({"evenements": [odd]}).json()["recus"] == 1
    from urllib.parse import quote

    found = server.client.get(f"/economies/demandes/{quote(odd['demande_id'])}",
                              params={"attendre": "1"})
    assert found.status_code == 200 and found.json()["evites"] == 4900


def raw_request(server: LiveServer, head: bytes, body: bytes, shut: bool = True) -> bytes:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(head + body)
        if shut:
            sock.shutdown(socket.SHUT_WR)
        try:
            return sock.recv(4096)
        except TimeoutError:
            return b""


def test_a_content_length_that_lies_stores_nothing_and_breaks_nothing(
        server: LiveServer) -> None:
    body = json.dumps(EXAMPLE_BATCH).encode()
    auth = f"Authorization: Bearer {TOKEN}\r\n".encode()
    longer = (b"POST /economies HTTP/1.1\r\nHost: x\r\n" + auth
              + f"Content-Length: {len(body) + 100}\r\n\r\n".encode())
    answer = raw_request(server, longer, body)  # then the client stops sending
    assert not answer.startswith(b"HTTP/1.1 5")
    shorter = (b"POST /economies HTTP/1.1\r\nHost: x\r\n" + auth
               + f"Content-Length: {len(body) - 10}\r\n\r\n".encode())
    answer = raw_request(server, shorter, body)
    assert answer.startswith(b"HTTP/1.1 400")  # the first len - 10 bytes are not JSON
    assert server.bilan()["provenance"]["tete"] == 0
    assert server.post(EXAMPLE_BATCH).json()["recus"] == 2  # still serving


def test_a_client_that_sends_half_a_body_does_not_hold_the_store(server: LiveServer) -> None:
    body = json.dumps(EXAMPLE_BATCH).encode()
    head = (b"POST /economies HTTP/1.1\r\nHost: x\r\n"
            + f"Authorization: Bearer {TOKEN}\r\nContent-Length: {len(body)}\r\n\r\n".encode())
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as stalled:
        stalled.sendall(head + body[: len(body) // 2])  # and then nothing, connection open
        other = copy.deepcopy(EXAMPLE_BATCH)
        for e in other["evenements"]:
            e["id"] += "-autre"
        assert server.post(other).json()["recus"] == 2  # others are served meanwhile
    assert server.bilan()["provenance"]["tete"] == 2
