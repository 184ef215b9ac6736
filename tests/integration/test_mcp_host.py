"""Issue 20, "Safe to embed", and issue 33, "Fail closed, second pass": MIAM's two real
shapes on the MCP Python SDK, under a real uvicorn, guarded by MIAM's token through the
SDK's ``RequireAuthMiddleware``, through our ``BearerAuth`` and through MIAM's own guard;
the contract's example goes in, net 2900 comes out over HTTP and through an MCP tool (the
SDK's own client); and the shapes that would leave the routes public, unreachable or
closed to MIAM's own token do not start, saying why, having stored nothing."""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.types import ASGIApp

from miam_economies import BearerAuth, economies_routes
from miam_economies.api.http.host_check import check_host
from tests.conftest import EXAMPLE_BATCH
from tests.integration.mcp_hosts import (
    MIAM_REFUSAL,
    SDK_GUARD,
    TOKEN,
    MiamVerifier,
    host_app_mounting_the_sdk,
    miam_guard,
    sdk_app_with_our_routes,
    sdk_labels,
)
from tests.integration.uvicorn_thread import refused_start, serving

AUTH = {"Authorization": f"Bearer {TOKEN}"}
SDK_REFUSAL = {"error": "invalid_token", "error_description": "Authentication required"}
OUR_REFUSAL = {"ok": False, "erreur": "missing or invalid bearer token: send the header "
                                      "'Authorization: Bearer <token>'"}

SHAPES: dict[str, tuple[Callable[[Path], Starlette], dict[str, Any]]] = {
    # Shape 1, the SDK's AuthenticationMiddleware app-wide: its refusal on our routes.
    "sdk-app/RequireAuthMiddleware": (lambda d: sdk_app_with_our_routes(
        d, SDK_GUARD, token=TOKEN), SDK_REFUSAL),
    "sdk-app/BearerAuth": (lambda d: sdk_app_with_our_routes(d, TOKEN), OUR_REFUSAL),
    # Shape 2, MIAM's own app: the SDK's labels app-wide and its refusal per route; or
    # our BearerAuth app-wide, so that "host" holds; or MIAM's own guard, whose token the
    # check is not told (served, and the one line says what was not proven).
    "host-app/RequireAuthMiddleware": (lambda d: host_app_mounting_the_sdk(
        d, SDK_GUARD, middleware=sdk_labels(), token=TOKEN), SDK_REFUSAL),
    "host-app/host=BearerAuth": (lambda d: host_app_mounting_the_sdk(
        d, "host", middleware=[Middleware(BearerAuth, token=TOKEN, public_paths=())]),
        OUR_REFUSAL),
    "host-app/host=MIAM's guard, no token=": (lambda d: host_app_mounting_the_sdk(
        d, "host", middleware=miam_guard("compares the token")), MIAM_REFUSAL),
}
UNPROVEN = {"host-app/host=BearerAuth", "host-app/host=MIAM's guard, no token="}
"""The shapes whose check is told no token: ``auth="host"`` without ``token=``."""

REFUSED: dict[str, tuple[Callable[[Path], Starlette], str]] = {
    # MIAM's own guard, lax (embedding review, turn 4, §2 3h): each lets one of the
    # check's requests through.
    "presence-only guard": (lambda d: host_app_mounting_the_sdk(
        d, "host", middleware=miam_guard("presence only"), token=TOKEN),
        "with an empty bearer ('Authorization: Bearer') reached our routes"),
    "scheme-only guard": (lambda d: host_app_mounting_the_sdk(
        d, "host", middleware=miam_guard("scheme only"), token=TOKEN),
        "with an empty bearer ('Authorization: Bearer ') reached our routes"),
    "any-token guard": (lambda d: host_app_mounting_the_sdk(
        d, "host", middleware=miam_guard("any non-empty token")),
        "with a wrong token ('Authorization: Bearer miam-economies-probe-...') reached"),
    # The SDK's refusal per route with nothing to label requests (§6): dead, told the
    # token or not.
    "unlabelled RequireAuthMiddleware": (lambda d: host_app_mounting_the_sdk(
        d, SDK_GUARD), "are guarded by the MCP SDK's RequireAuthMiddleware"),
    "unlabelled RequireAuthMiddleware, token=": (lambda d: host_app_mounting_the_sdk(
        d, SDK_GUARD, token=TOKEN), "add Middleware(AuthenticationMiddleware"),
    # MIAM's token does not get through: the routes' token is not the host guard's, or
    # token= is not the one the guard takes.
    "routes' token not the guard's": (lambda d: host_app_mounting_the_sdk(
        d, "another-token", middleware=miam_guard("compares the token")),
        "with MIAM's token, POST /economies (401), GET /economies/bilan (401)"),
    "token= not the guard's": (lambda d: host_app_mounting_the_sdk(
        d, "host", middleware=miam_guard("compares the token"), token="another-token"),
        "with MIAM's token, POST /economies (401)"),
    # Under a prefix (§2 p1, p2): the plugin posts at the root.
    "under Mount('/miam') in the SDK's app": (lambda d: sdk_app_with_our_routes(
        d, TOKEN, under="/miam"), 'our routes are under Mount("/miam") (/miam/economies'),
    "under Mount('/api') before Mount('/')": (lambda d: host_app_mounting_the_sdk(
        d, TOKEN, under="/api"), 'our routes are under Mount("/api")'),
}


async def _call_bilan_tool(url: str) -> Any:
    async with (httpx2.AsyncClient(headers=AUTH, timeout=30) as http,
                streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
                ClientSession(read, write) as session):
        await session.initialize()
        result = await session.call_tool("bilan", {})
    assert not result.is_error, result.content
    return result.structured_content


@pytest.mark.parametrize("shape", SHAPES)
def test_miams_shape_takes_the_example_behind_its_token_and_its_tool_reads_it(
        tmp_path: Path, shape: str, caplog: pytest.LogCaptureFixture) -> None:
    build, refusal = SHAPES[shape]
    with (caplog.at_level(logging.WARNING, logger="miam_economies.api.http.host_check"),
          serving(build(tmp_path / "data")) as url):
        unproven = [r.getMessage() for r in caplog.records if "not that MIAM's token" in
                    r.getMessage()]
        assert len(unproven) == (shape in UNPROVEN), unproven  # one line, or none
        for method, path in (("POST", "/economies"), ("GET", "/economies/bilan")):
            for wrong in ({}, {"Authorization": "Bearer"}, {"Authorization": "Bearer x"}):
                refused = httpx.request(method, url + path, json=EXAMPLE_BATCH,
                                        headers=wrong)
                assert refused.status_code == 401, (path, wrong)
                assert refused.json() == refusal, (path, wrong)
        assert httpx.post(url + "/mcp", json={}).status_code == 401  # the host's own too
        with httpx.Client(base_url=url, headers=AUTH, timeout=30) as client:
            posted = client.post("/economies", json=copy.deepcopy(EXAMPLE_BATCH))
            assert posted.json() == {"ok": True, "recus": 2, "doublons": 0}
            bilan = client.get("/economies/bilan", params={"attendre": "1"}).json()
        assert bilan["economies"]["claude-code"]["net"] == 2900
        tool = anyio.run(_call_bilan_tool, url)
    assert tool["economies"]["claude-code"]["net"] == 2900


def test_routes_built_without_an_auth_decision_are_refused_at_once(tmp_path: Path) -> None:
    # The old bare append: no auth named, no app built.
    with pytest.raises(TypeError, match=r"explicit auth decision.*auth=MIAM_TOKEN"):
        sdk_app_with_our_routes(tmp_path / "data", None)


def test_the_sdk_app_claimed_as_the_guard_does_not_start(tmp_path: Path) -> None:
    # The SDK's AuthenticationMiddleware only labels requests: "host" is false there.
    data = tmp_path / "data"
    log = refused_start(sdk_app_with_our_routes(data, "host"))
    assert "miam-economies will not start" in log
    assert ("POST /economies, GET /economies/bilan, GET /economies/demandes/sonde, "
            "GET /economies/sessions/sonde, GET /economies/classement, "
            "GET /economies/rapport without credentials reached our routes") in log
    assert "auth=MIAM_TOKEN" in log and "AuthenticationMiddleware refuses nothing" in log
    assert not data.exists()  # nothing opened, nothing stored


@pytest.mark.parametrize("shape", REFUSED)
def test_a_host_that_fails_open_or_shut_does_not_start_saying_why(
        tmp_path: Path, shape: str) -> None:
    build, said = REFUSED[shape]
    data = tmp_path / "data"
    log = refused_start(build(data))
    assert "miam-economies will not start" in log
    assert said in log
    assert "ExceptionGroup" not in log  # ours entered first: the message alone
    assert not data.exists()  # nothing opened, nothing stored


def test_our_routes_after_the_sdks_mount_do_not_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    log = refused_start(host_app_mounting_the_sdk(data, TOKEN, mount_first=True))
    assert 'Mount("/"), listed before our routes, takes POST /economies' in log
    assert 'list economies_routes(...) before Mount("/")' in log
    assert "without credentials" not in log  # the one fault, not a guess at others
    assert "ExceptionGroup" not in log  # the message itself, not a task group's trace
    assert not data.exists()


@pytest.mark.parametrize("build", [
    lambda: Starlette(routes=economies_routes(auth=[*sdk_labels(), *SDK_GUARD])),
    lambda: AuthenticationMiddleware(Starlette(routes=economies_routes(auth=SDK_GUARD)),
                                     backend=BearerAuthBackend(MiamVerifier())),
], ids=["in the routes' own list", "wrapped around the app"])
def test_the_sdks_guard_labelled_elsewhere_is_not_taken_for_dead(
        build: Callable[[], ASGIApp]) -> None:
    anyio.run(check_host, build())  # not refused on a guess
    anyio.run(check_host, build(), TOKEN)  # and MIAM's token gets through


def _store(data: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in sorted(data.glob("economies.sqlite*"))}


def test_no_request_of_the_check_stores_or_logs_anything(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # The example stored, the host stopped: then a refused start whose requests reach our
    # routes (a presence-only guard) and a served start whose requests carry MIAM's token
    # leave the store's bytes as they were, and no request line.
    data = tmp_path / "data"
    with serving(sdk_app_with_our_routes(data, TOKEN)) as url:
        posted = httpx.post(url + "/economies", json=copy.deepcopy(EXAMPLE_BATCH), headers=AUTH)
        assert posted.json() == {"ok": True, "recus": 2, "doublons": 0}
    before = _store(data)
    assert "economies.sqlite" in before
    with caplog.at_level(logging.INFO, logger="miam_economies.requests"):
        refused_start(host_app_mounting_the_sdk(data, "host",
                                                middleware=miam_guard("presence only")))
        with serving(sdk_app_with_our_routes(data, SDK_GUARD, token=TOKEN)):
            pass
    assert _store(data) == before
    assert [r for r in caplog.records if r.name == "miam_economies.requests"] == []
