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
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import EXAMPLE_BATCH, EXAMPLE_CORRECTION, TOKEN, LiveServer

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
    "delegation": ["schema", "type", "id", "date", "client", "session_id", "demande_id",
                   "par_subagent", "retour", "tokens_entree", "tokens_sortie",
                   "estimation", "estimation.lus", "estimation.ecrits",
                   "estimation.consigne", "estimation.rendus", "estimation.evites",
                   "estimation.methode"],
    "pilotage": ["agent_id", "turn_id", "demande_ids", "modele", "usage",
                 "usage.input_tokens", "usage.output_tokens", "usage.cache_read_input_tokens",
                 "usage.cache_creation_input_tokens", "cout"],
    "correction": ["demande_id", "outil", "tool_use_id", "tokens_lus", "tokens_ecrits",
                   "cout"],
}


def cases() -> list[Any]:
    out = []
    for kind, fields in FIELDS.items():
        event = {"delegation": DELEGATION, "pilotage": PILOTAGE,
                 "correction": EXAMPLE_CORRECTION}[kind]
        for path in fields:
            for value in CONFUSIONS:
                if path == "estimation.evites" and value == -1:
                    continue  # evites may be negative
                if path == "par_subagent" and value is True:
                    continue  # the example's own value
                if path in ("id", "client", "session_id", "demande_id", "agent_id",
                            "turn_id", "modele", "estimation.methode",
                            "tool_use_id") and value == "3":
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


def test_every_item_of_demande_ids_is_checked(refusing: LiveServer) -> None:
    for bad in (3, None, "", "x" * 600):
        if bad == "":
            continue  # an empty demande_id is a string: accepted by the contract
        event = {**PILOTAGE, "demande_ids": ["dem-ok", bad]}
        response = refusing.post({"evenements": [event]})
        assert response.status_code == 422
        assert response.json()["erreurs"][0]["champ"] == "demande_ids[1]"


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
    """Send raw bytes; return the start of the answer (b"" if the server closed first)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        try:
            sock.sendall(head + body)
            if shut:
                sock.shutdown(socket.SHUT_WR)
            return sock.recv(4096)
        except (ConnectionResetError, BrokenPipeError):
            return b""


def test_a_content_length_that_lies_stores_nothing_and_breaks_nothing(
        tmp_path: Path) -> None:
    live = LiveServer(tmp_path / "data", env={"MIAM_ECONOMIES_BODY_TIMEOUT": "1"})
    live.start()
    try:
        body = json.dumps(EXAMPLE_BATCH).encode()
        auth = f"Authorization: Bearer {TOKEN}\r\n".encode()
        longer = (b"POST /economies HTTP/1.1\r\nHost: x\r\n" + auth
                  + f"Content-Length: {len(body) + 100}\r\n\r\n".encode())
        # The promised bytes never come: after --body-timeout the server answers 408.
        assert raw_request(live, longer, body, shut=False).startswith(b"HTTP/1.1 408")
        shorter = (b"POST /economies HTTP/1.1\r\nHost: x\r\n" + auth
                   + f"Content-Length: {len(body) - 10}\r\n\r\n".encode())
        # The first len - 10 bytes are not JSON.
        assert raw_request(live, shorter, body, shut=False).startswith(b"HTTP/1.1 400")
        huge = (b"POST /economies HTTP/1.1\r\nHost: x\r\n" + auth
                + b"Content-Length: " + b"0" * 5_000 + b"5\r\n\r\n")
        # h11 refuses such a header itself (400); past it, the app would answer 413.
        assert raw_request(live, huge, b"x" * 5)[:12] in (b"HTTP/1.1 400", b"HTTP/1.1 413")
        assert live.bilan()["provenance"]["tete"] == 0
        assert live.post(EXAMPLE_BATCH).json()["recus"] == 2  # still serving
    finally:
        live.stop()
        live.client.close()


def read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


@pytest.mark.parametrize("extra", [b"", b"garbage past the Content-Length"])
def test_a_client_that_half_closes_after_its_request_gets_the_answer(
        server: LiveServer, extra: bytes) -> None:
    # Issue 13.4: the request arrives whole (with or without bytes past its
    # Content-Length), then the client shuts its side: the answer, then the close.
    auth = f"Authorization: Bearer {TOKEN}\r\n".encode()
    for body, status in ((json.dumps(EXAMPLE_BATCH).encode(), b"200"),
                         (b'{"evenements": []}', b"422")):
        head = (b"POST /economies HTTP/1.1\r\nHost: x\r\n" + auth
                + f"Content-Length: {len(body)}\r\n\r\n".encode())
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            sock.sendall(head + body + extra)
            sock.shutdown(socket.SHUT_WR)
            answer = read_all(sock)  # everything until the server closed
        assert answer.startswith(b"HTTP/1.1 " + status), answer[:200]
        head_end = answer.index(b"\r\n\r\n") + 4
        length = int(answer[:head_end].lower().split(b"content-length: ")[1].split(b"\r\n")[0])
        reply, rest = answer[head_end:head_end + length], answer[head_end + length:]
        assert len(reply) == length and json.loads(reply)["ok"] is (status == b"200")
        # The bytes past the request are never read as a request once the server has seen
        # the client's end; when that end arrives only after the answer (a race with the
        # network), they are what they look like, a next request, refused with a 400 and
        # the close (RFC 9112 §9.3): never anything else.
        assert rest == b"" or (extra and rest.startswith(b"HTTP/1.1 400")
                               and b"connection: close" in rest.lower()), rest[:200]
    assert server.bilan()["economies"]["claude-code"]["net"] == 2900


@pytest.mark.parametrize("piece", [200_000, 1_000])  # in one read, or trickled
def test_headers_past_64_kib_never_reach_the_app(server: LiveServer, piece: int) -> None:
    head = (b"GET /economies/bilan HTTP/1.1\r\nHost: x\r\n"
            + f"Authorization: Bearer {TOKEN}\r\n".encode()
            + b"X-Padding: " + b"a" * 100_000 + b"\r\n\r\n")
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        try:
            for i in range(0, len(head), piece):
                sock.sendall(head[i:i + piece])
            answer = sock.recv(4096)
        except (ConnectionResetError, BrokenPipeError):
            answer = b""
    # The same request with small headers is a 200: here 431 (HeaderCap) or 400 (h11).
    assert answer[:12] in (b"HTTP/1.1 431", b"HTTP/1.1 400"), answer[:80]
    assert server.client.get("/economies/bilan").status_code == 200


def test_silent_connections_are_closed_and_cannot_lock_clients_out(tmp_path: Path) -> None:
    live = LiveServer(tmp_path / "data", env={"MIAM_ECONOMIES_HEADER_TIMEOUT": "1"})
    live.start()
    try:
        silent = [socket.create_connection(("127.0.0.1", live.port), timeout=10)
                  for _ in range(64)]  # the connection limit, all idle or half-sent
        for sock in silent[:32]:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # never finished
        closed = [sock.recv(1) == b"" for sock in silent]  # the server hangs up on each
        assert all(closed)
        assert httpx.get(live.url + "/healthz").status_code == 200
        for sock in silent:
            sock.close()
    finally:
        live.stop()
        live.client.close()


def test_a_client_that_sends_half_a_body_is_cut_off_and_holds_nothing(
        tmp_path: Path) -> None:
    live = LiveServer(tmp_path / "data", env={"MIAM_ECONOMIES_BODY_TIMEOUT": "1"})
    live.start()
    try:
        body = json.dumps(EXAMPLE_BATCH).encode()
        head = (b"POST /economies HTTP/1.1\r\nHost: x\r\n"
                + f"Authorization: Bearer {TOKEN}\r\n".encode()
                + f"Content-Length: {len(body)}\r\n\r\n".encode())
        with socket.create_connection(("127.0.0.1", live.port), timeout=10) as stalled:
            stalled.sendall(head + body[: len(body) // 2])  # then nothing
            other = copy.deepcopy(EXAMPLE_BATCH)
            for e in other["evenements"]:
                e["id"] += "-autre"
            assert live.post(other).json()["recus"] == 2  # others are served meanwhile
            assert stalled.recv(4096).startswith(b"HTTP/1.1 408")  # and it is cut off
        assert live.bilan()["provenance"]["tete"] == 2
    finally:
        live.stop()
        live.client.close()
