"""Issue 20, "Safe to embed": MIAM's two real shapes on the MCP Python SDK, under a real
uvicorn, guarded by MIAM's token through the SDK's ``RequireAuthMiddleware`` and through
our ``BearerAuth``; the contract's example goes in, net 2900 comes out over HTTP and
through an MCP tool (the SDK's own client); and the shapes that would leave the routes
public or unreachable do not start, saying why, having stored nothing."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from starlette.applications import Starlette
from starlette.middleware import Middleware

from miam_economies import BearerAuth
from tests.conftest import EXAMPLE_BATCH
from tests.integration.mcp_hosts import (
    SDK_GUARD,
    TOKEN,
    host_app_mounting_the_sdk,
    sdk_app_with_our_routes,
    sdk_labels,
)
from tests.integration.uvicorn_thread import refused_start, serving

AUTH = {"Authorization": f"Bearer {TOKEN}"}
SDK_REFUSAL = {"error": "invalid_token", "error_description": "Authentication required"}
OUR_REFUSAL = {"ok": False, "erreur": "missing or invalid bearer token"}

SHAPES: dict[str, tuple[Callable[[Path], Starlette], dict[str, Any]]] = {
    # Shape 1, the SDK's AuthenticationMiddleware app-wide: its refusal on our routes.
    "sdk-app/RequireAuthMiddleware": (lambda d: sdk_app_with_our_routes(d, SDK_GUARD),
                                      SDK_REFUSAL),
    "sdk-app/BearerAuth": (lambda d: sdk_app_with_our_routes(d, TOKEN), OUR_REFUSAL),
    # Shape 2, MIAM's own app: the SDK's labels app-wide and its refusal per route; or
    # our BearerAuth app-wide, so that "host" holds.
    "host-app/RequireAuthMiddleware": (lambda d: host_app_mounting_the_sdk(
        d, SDK_GUARD, middleware=sdk_labels()), SDK_REFUSAL),
    "host-app/host=BearerAuth": (lambda d: host_app_mounting_the_sdk(
        d, "host", middleware=[Middleware(BearerAuth, token=TOKEN, public_paths=())]),
        OUR_REFUSAL),
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
        tmp_path: Path, shape: str) -> None:
    build, refusal = SHAPES[shape]
    with serving(build(tmp_path / "data")) as url:
        for method, path in (("POST", "/economies"), ("GET", "/economies/bilan")):
            refused = httpx.request(method, url + path, json=EXAMPLE_BATCH)
            assert refused.status_code == 401, path
            assert refused.json() == refusal, path
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
            "GET /economies/classement, GET /economies/rapport without credentials "
            "reached our routes") in log
    assert "auth=MIAM_TOKEN" in log and "AuthenticationMiddleware refuses nothing" in log
    assert not data.exists()  # nothing opened, nothing stored


def test_our_routes_after_the_sdks_mount_do_not_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    log = refused_start(host_app_mounting_the_sdk(data, TOKEN, mount_first=True))
    assert 'Mount("/"), listed before our routes, takes POST /economies' in log
    assert 'list economies_routes(...) before Mount("/")' in log
    assert "without credentials" not in log  # the one fault, not a guess at others
    assert "ExceptionGroup" not in log  # the message itself, not a task group's trace
    assert not data.exists()
