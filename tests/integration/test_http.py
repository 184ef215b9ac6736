"""POST /economies and GET /economies/bilan against a real uvicorn on loopback."""

from __future__ import annotations

import copy
import json
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import EXAMPLE_BATCH, TOKEN, LiveServer

EXPECTED_CLAUDE_CODE = {"delegations": 1, "evites": 4900, "pilotage": 2000, "corrections": 0,
                        "net": 2900, "taux_reprise": 0.0, "anomalies": {}, "conflits": 0}
LIMIT = 1_048_576


def padded_batch(size: int) -> bytes:
    """The example batch, padded with an unknown top-level key to exactly ``size`` bytes."""
    base = json.dumps({**EXAMPLE_BATCH, "pad": ""}).encode()
    body = json.dumps({**EXAMPLE_BATCH, "pad": "x" * (size - len(base))}).encode()
    assert len(body) == size
    return body


def test_the_cli_bilan_without_a_store_is_empty_and_creates_nothing(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("miam-economies")
    missing = tmp_path / "nowhere"
    done = subprocess.run([str(script), "bilan", "--data", str(missing), "--json"],
                          check=True, capture_output=True, text=True)
    assert json.loads(done.stdout)["economies"] == {}
    assert "no event store" in done.stderr
    assert not missing.exists()


def test_several_workers_on_sqlite_are_refused_before_anything_is_created(
        tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("miam-economies")
    done = subprocess.run([str(script), "serve", "--data", str(tmp_path / "data"),
                           "--workers", "2"], capture_output=True, text=True, timeout=60,
                          env={"PATH": ""})  # no token: it would make the token file
    assert done.returncode == 2
    assert "several workers need PostgreSQL" in done.stderr
    assert not (tmp_path / "data").exists()


def test_a_locked_store_is_a_503_that_stores_nothing_then_the_retry_succeeds(
        tmp_path: Path) -> None:
    live = LiveServer(tmp_path / "data", env={"MIAM_ECONOMIES_LOCK_TIMEOUT": "1"})
    live.start()
    try:
        # Another writer holds the store's write lock past the server's lock timeout.
        blocker = sqlite3.connect(live.data / "economies.sqlite", isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")
        refused = live.post(EXAMPLE_BATCH)
        assert refused.status_code == 503
        assert refused.headers["retry-after"] == "1"
        assert "economies.sqlite" not in refused.text  # no internals in the answer
        blocker.execute("ROLLBACK")
        blocker.close()
        assert live.bilan()["provenance"]["tete"] == 0
        assert live.post(EXAMPLE_BATCH).json() == {"ok": True, "recus": 2, "doublons": 0}
    finally:
        live.stop()
        live.client.close()


def test_without_a_token_setting_the_server_creates_a_private_token_file(
        tmp_path: Path) -> None:
    live = LiveServer(tmp_path / "data", token=None)
    live.start()
    try:
        token_file = live.data / "token"
        assert token_file.stat().st_mode & 0o777 == 0o600
        token = token_file.read_text().strip()
        assert len(token) >= 32
        assert live.post(EXAMPLE_BATCH).status_code == 200
        live.restart()  # the same token is read back, not replaced
        assert token_file.read_text().strip() == token
        assert live.post(EXAMPLE_BATCH).json()["doublons"] == 2
    finally:
        live.stop()
        live.client.close()
    log = b"".join(p.read_bytes() for p in tmp_path.glob("server-*.log"))
    assert str(token_file).encode() in log
    assert token.encode() not in log


class HttpContract:
    """The HTTP contract against a live server, whatever the backend (one subclass each)."""

    def test_contract_example_gives_the_contracts_bilan(self, server: LiveServer) -> None:
        response = server.post(EXAMPLE_BATCH)
        assert response.status_code == 200
        assert response.json() == {"ok": True, "recus": 2, "doublons": 0}
        bilan = server.bilan()
        assert bilan["economies"] == {"claude-code": EXPECTED_CLAUDE_CODE}
        assert bilan["total"] == EXPECTED_CLAUDE_CODE
        assert bilan["formule"] == "v1"
        assert bilan["position"] == 2
        assert bilan["provenance"]["evenements"] == 2

    def test_resent_batch_counts_only_doublons(self, server: LiveServer) -> None:
        server.post(EXAMPLE_BATCH)
        response = server.post(EXAMPLE_BATCH)
        assert response.status_code == 200
        assert response.json() == {"ok": True, "recus": 0, "doublons": 2}
        assert server.bilan()["economies"]["claude-code"] == EXPECTED_CLAUDE_CODE

    def test_an_id_repeated_inside_one_batch_is_a_doublon(self, server: LiveServer) -> None:
        first = EXAMPLE_BATCH["evenements"][0]
        response = server.post({"evenements": [first, first, first]})
        assert response.json() == {"ok": True, "recus": 1, "doublons": 2}
        assert server.bilan()["economies"]["claude-code"]["delegations"] == 1

    def test_a_resent_id_with_other_content_keeps_the_first_version(
            self, server: LiveServer) -> None:
        server.post(EXAMPLE_BATCH)
        changed = copy.deepcopy(EXAMPLE_BATCH)
        changed["evenements"][1]["cout"] = 999_999
        answer = {"ok": True, "recus": 0, "doublons": 2, "conflits": 1}
        assert server.post(changed).json() == answer
        assert server.post(changed).json() == answer  # counted again in the answer...
        figures = server.bilan()["economies"]["claude-code"]
        assert figures["pilotage"] == 2000
        assert figures["conflits"] == 1  # ...but the differing version is recorded once

    def test_empty_store_gives_an_empty_section_and_zero_totals(self, server: LiveServer) -> None:
        bilan = server.bilan()
        assert bilan["economies"] == {}
        assert bilan["total"] == {"delegations": 0, "evites": 0, "pilotage": 0, "corrections": 0,
                                  "net": 0, "taux_reprise": None, "anomalies": {}, "conflits": 0}
        assert bilan["position"] == 0

    @pytest.mark.parametrize("authorization", [
        None, "Basic dGVzdDp0ZXN0", "Bearer", "Bearer wrong-token", f"Token {TOKEN}",
    ])
    def test_missing_or_wrong_token_is_401_with_a_bearer_challenge(
            self, server: LiveServer, authorization: str | None) -> None:
        headers = {} if authorization is None else {"Authorization": authorization}
        for method, path in (("POST", "/economies"), ("GET", "/economies/bilan")):
            response = httpx.request(method, server.url + path, headers=headers,
                                     json=EXAMPLE_BATCH if method == "POST" else None)
            assert response.status_code == 401
            assert response.headers["www-authenticate"] == "Bearer"
            # It says what to send and where the token lives, never the token's path.
            erreur = response.json()["erreur"]
            assert "'Authorization: Bearer <token>'" in erreur
            assert "MIAM_ECONOMIES_TOKEN" in erreur and "data directory" in erreur
            assert str(server.data) not in erreur
        assert server.bilan()["provenance"]["tete"] == 0

    def test_the_token_is_checked_before_the_body_is_read(self, server: LiveServer) -> None:
        # Headers announce a megabyte that never comes: the 401 must not wait for it.
        request = (b"POST /economies HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   b"Authorization: Bearer wrong\r\nContent-Length: 1000000\r\n\r\n")
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
            sock.sendall(request)
            status_line = sock.recv(4096).split(b"\r\n", 1)[0]
        assert status_line == b"HTTP/1.1 401 Unauthorized"

    def test_a_non_ascii_token_is_a_401_not_a_500(self, server: LiveServer) -> None:
        # httpx refuses non-ASCII header values, so send the raw bytes ourselves.
        body = json.dumps(EXAMPLE_BATCH).encode()
        request = (b"POST /economies HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   b"Authorization: Bearer t\xc3\xa9st\xff\r\nContent-Type: application/json\r\n"
                   b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n"
                   + body)
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            sock.sendall(request)
            status_line = sock.recv(4096).split(b"\r\n", 1)[0]
        assert status_line == b"HTTP/1.1 401 Unauthorized"

    def test_bearer_scheme_is_case_insensitive(self, server: LiveServer) -> None:
        response = httpx.post(server.url + "/economies", json=EXAMPLE_BATCH,
                              headers={"Authorization": f"bearer {TOKEN}"})
        assert response.status_code == 200

    def test_healthz_needs_no_token(self, server: LiveServer) -> None:
        assert httpx.get(server.url + "/healthz").json() == {
            "ok": True, "tete": 0, "position": 0, "retard": 0, "ecartes": 0}

    def test_invalid_event_is_422_listing_index_and_field_and_stores_nothing(
            self, server: LiveServer) -> None:
        batch = copy.deepcopy(EXAMPLE_BATCH)
        batch["evenements"][1]["usage"]["input_tokens"] = 3.0
        del batch["evenements"][0]["demande_id"]
        response = server.post(batch)
        assert response.status_code == 422
        body = response.json()
        assert body["ok"] is False
        assert {(e["index"], e["champ"]) for e in body["erreurs"]} == {
            (0, "demande_id"), (1, "usage.input_tokens")}
        assert server.bilan()["provenance"]["tete"] == 0

    @pytest.mark.parametrize("count", [0, 501])
    def test_empty_or_oversized_batch_is_a_batch_level_422(
            self, server: LiveServer, count: int) -> None:
        event = EXAMPLE_BATCH["evenements"][0]
        events = [{**event, "id": f"claude-code:dem-{i}"} for i in range(count)]
        response = server.post({"evenements": events})
        assert response.status_code == 422
        first = response.json()["erreurs"][0]
        assert {"index": None, "champ": "evenements"}.items() <= first.items()
        assert server.bilan()["provenance"]["tete"] == 0

    @pytest.mark.parametrize("body", [
        b"", b"not json", b'{"evenements": [', b"\xff\xfe{}",
        b"\xef\xbb\xbf" + b'{"evenements":[]}',
        b'{"evenements": [NaN]}', b'{"evenements": [Infinity]}',
        b'{"evenements": [], "evenements": []}', b"[" * 100_000, b"1" * 5_000,
        b'{"evenements": [], "x": 1e400}', b'{"evenements": [], "x": "\\ud800", "x": 1}',
    ])
    def test_a_body_that_is_not_strict_json_is_a_400(self, server: LiveServer, body: bytes) -> None:
        response = server.client.post("/economies", content=body,
                                      headers={"Content-Type": "application/json"})
        assert response.status_code == 400
        assert response.json()["ok"] is False

    @pytest.mark.parametrize("body", [
        b'{"evenements": [], "x": ["\\ud800"]}', b'{"evenements": [], "\\udfff": 1}'])
    def test_a_lone_surrogate_is_json_the_schema_judges(self, server: LiveServer,
                                                        body: bytes) -> None:
        # JSON.stringify writes them (ADR-0135): not a 400 for the whole body; here the
        # empty batch is what the schema refuses.
        response = server.client.post("/economies", content=body,
                                      headers={"Content-Type": "application/json"})
        assert response.status_code == 422
        assert response.json()["erreurs"][0]["champ"] == "evenements"

    def test_a_repeated_key_inside_an_event_is_refused(self, server: LiveServer) -> None:
        text = json.dumps(EXAMPLE_BATCH).replace('"cout": 2000', '"cout": 2000, "cout": 1')
        response = server.client.post("/economies", content=text.encode())
        assert response.status_code == 400
        assert server.bilan()["provenance"]["tete"] == 0

    def test_a_body_of_exactly_the_limit_is_accepted(self, server: LiveServer) -> None:
        response = server.client.post("/economies", content=padded_batch(LIMIT))
        assert response.status_code == 200
        assert response.json()["recus"] == 2

    def test_one_byte_over_the_limit_is_413_with_content_length(self, server: LiveServer) -> None:
        response = server.client.post("/economies", content=padded_batch(LIMIT + 1))
        assert response.status_code == 413
        assert server.bilan()["provenance"]["tete"] == 0

    def test_one_byte_over_the_limit_is_413_when_chunked(self, server: LiveServer) -> None:
        body = padded_batch(LIMIT + 1)

        def chunks() -> Iterator[bytes]:
            for i in range(0, len(body), 64 * 1024):
                yield body[i:i + 64 * 1024]

        response = server.client.post("/economies", content=chunks())
        assert "content-length" not in response.request.headers
        assert response.status_code == 413
        assert server.bilan()["provenance"]["tete"] == 0

    def test_a_restart_keeps_every_event_the_dedup_and_the_bilan(self, server: LiveServer) -> None:
        server.post(EXAMPLE_BATCH)
        before = server.bilan()
        server.restart()
        assert server.post(EXAMPLE_BATCH).json() == {"ok": True, "recus": 0, "doublons": 2}
        after = server.bilan()
        assert after["economies"] == before["economies"]
        assert after["position"] == before["position"] == 2

    def test_a_kill_and_restart_keeps_acknowledged_events(self, server: LiveServer) -> None:
        server.post(EXAMPLE_BATCH)
        server.restart(kill=True)
        assert server.bilan()["economies"]["claude-code"] == EXPECTED_CLAUDE_CODE

    def test_the_cli_bilan_reads_the_same_figures(self, server: LiveServer) -> None:
        server.post(EXAMPLE_BATCH)
        out = server.cli("bilan", "--json").stdout
        printed: dict[str, Any] = json.loads(out)
        assert printed["economies"] == {"claude-code": EXPECTED_CLAUDE_CODE}
        table = server.cli("bilan", env={"COLUMNS": "120", "PATH": ""}).stdout
        assert "claude-code" in table and "2,900" in table
        assert "provenance: formule v1, position 2 of tete 2, 2 events" in table

    def test_unknown_routes_and_methods_answer_json(self, server: LiveServer) -> None:
        missing = server.client.get("/economies/nothing")
        assert missing.status_code == 404
        assert missing.json()["ok"] is False
        wrong_method = server.client.get("/economies")
        assert wrong_method.status_code == 405
        assert wrong_method.json()["ok"] is False
        assert "POST" in wrong_method.headers["allow"]

    def test_the_readmes_correction_example_gives_the_readmes_figures(
            self, server: LiveServer) -> None:
        correction = json.loads((Path(__file__).parents[2] / "examples" / "correction.json")
                                .read_text(encoding="utf-8"))
        server.post(EXAMPLE_BATCH)
        assert server.post(correction).json() == {"ok": True, "recus": 1, "doublons": 0}
        figures = server.bilan()["economies"]["claude-code"]
        assert (figures["corrections"], figures["net"], figures["taux_reprise"]) == (490, 2410, 0.1)


class TestHttpSQLite(HttpContract):
    """The HTTP contract on the SQLite default (projection in the server process)."""

    backend = "sqlite"


class TestHttpPostgres(HttpContract):
    """The HTTP contract on PostgreSQL (``serve`` appends, ``project`` folds)."""

    backend = "postgresql"
