"""Issue 20, "Fail closed" (SPEC; ADR-0091): the routes take an explicit auth decision, and
``open_economies(settings, app)`` refuses a host app that leaves them unguarded or
unreachable, whatever its arrangement of mounts and middleware; in-process, the check's
own requests (it makes the same ones under uvicorn, ``tests/integration/test_mcp_host``)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import anyio
import httpx
import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.responses import PlainTextResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp

from miam_economies import (
    BearerAuth,
    EmbeddingRefused,
    Settings,
    economies_routes,
    open_economies,
)
from miam_economies.api.http.app import create_app
from miam_economies.api.http.host_check import check_host

TOKEN = "the-hosts-token"
GUARD = [Middleware(BearerAuth, token=TOKEN, public_paths=())]


async def _host_page(request: object) -> PlainTextResponse:
    return PlainTextResponse("the host's own")


def _refusal(app: ASGIApp) -> str:
    with pytest.raises(EmbeddingRefused) as refused:
        anyio.run(check_host, app)
    return str(refused.value)


@pytest.mark.parametrize("auth", [None, 42, b"token", ("host",)])
def test_routes_need_an_auth_decision_of_a_known_kind(auth: object) -> None:
    with pytest.raises(TypeError, match=r'auth=MIAM_TOKEN.*auth="host"'):
        economies_routes(auth=auth)  # type: ignore[arg-type]


def test_auth_none_suggests_an_unset_variable() -> None:
    # auth=os.environ.get("MIAM_TOKEN") with the variable unset is the likeliest None.
    with pytest.raises(TypeError, match=r"auth=None \(a token read from an unset "
                                         r"environment variable\?\); "):
        economies_routes(auth=None)  # type: ignore[arg-type]


@pytest.mark.parametrize("auth", ["", "  ", []])
def test_an_empty_token_or_middleware_list_is_refused(auth: str | list[Middleware]) -> None:
    with pytest.raises(ValueError, match="empty token|guards nothing"):
        economies_routes(auth=auth)


def test_our_token_guards_every_route_ops_included() -> None:
    app = Starlette(routes=economies_routes(auth=TOKEN))
    anyio.run(check_host, app)

    async def status(path: str) -> int:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                     base_url="http://miam.example") as client:
            return (await client.get(path)).status_code

    # Embedded, nothing of ours is public (the standalone app keeps /healthz public).
    for path in ("/healthz", "/metrics", "/openapi.json", "/economies/bilan"):
        assert anyio.run(status, path) == 401, path


def test_one_unguarded_route_among_guarded_ones_is_named_alone() -> None:
    message = _refusal(Starlette(routes=[*economies_routes(auth="host", ops=False)[:1],
                                         *economies_routes(auth=TOKEN)]))
    assert "\n- POST /economies without credentials reached our routes" in message
    assert "GET /economies/bilan" not in message


def test_host_claimed_without_a_refusing_middleware_is_refused() -> None:
    message = _refusal(Starlette(routes=economies_routes(auth="host")))
    assert message.startswith("miam-economies will not start")
    assert "POST /economies, GET /economies/bilan" in message
    assert "auth=MIAM_TOKEN" in message


def test_host_middleware_that_refuses_makes_host_true() -> None:
    anyio.run(check_host, Starlette(routes=economies_routes(auth="host"), middleware=GUARD))


def test_our_routes_inside_a_mount_count_when_it_is_first_to_match() -> None:
    inner = Starlette(routes=[*economies_routes(auth=TOKEN), Route("/mcp", _host_page)])
    anyio.run(check_host, Starlette(routes=[Mount("/", app=inner)]))


@pytest.mark.parametrize("taker, label", [
    (Mount("/", app=Starlette(routes=[Route("/mcp", _host_page)])), 'Mount("/")'),
    (Route("/economies/bilan", _host_page), 'Route("/economies/bilan")'),
])
def test_a_route_listed_before_ours_that_takes_the_request_is_named(
        taker: Route | Mount, label: str) -> None:
    message = _refusal(Starlette(routes=[taker, *economies_routes(auth=TOKEN)]))
    assert f"{label}, listed before our routes, takes" in message
    assert f"list economies_routes(...) before {label}" in message


def test_an_app_without_our_routes_is_refused() -> None:
    message = _refusal(Starlette(routes=[Route("/mcp", _host_page)]))
    assert "no route of the app matches POST /economies" in message


def test_an_answer_that_proves_no_guard_is_refused_too() -> None:
    # A 400 of the host's (its Host allow-list) is neither ours nor a 401/403.
    message = _refusal(Starlette(routes=economies_routes(auth="host"), middleware=[
        Middleware(TrustedHostMiddleware, allowed_hosts=["miam.example"])]))
    assert "without credentials, POST /economies (400), GET /economies/bilan (400)" in message
    assert "neither our route nor a 401/403 refusal" in message
    assert "Host allow-list (TrustedHostMiddleware) without localhost" in message


@pytest.mark.parametrize("routes", [
    lambda: [Mount("/miam", routes=economies_routes(auth=TOKEN))],
    lambda: [Mount("/miam", routes=economies_routes(auth=TOKEN)),
             Mount("/", app=Starlette(routes=[Route("/mcp", _host_page)]))],
], ids=["alone", "before Mount('/')"])
def test_our_routes_under_a_prefix_are_named_so(routes: Callable[[], list[BaseRoute]]) -> None:
    message = _refusal(Starlette(routes=routes()))
    assert 'our routes are under Mount("/miam") (/miam/economies...)' in message
    assert "the plugin posts to /economies at the root of the host" in message
    assert "listed before our routes" not in message  # Mount("/") is not the fault


def test_our_routes_at_the_root_and_under_a_prefix_pass() -> None:
    anyio.run(check_host, Starlette(routes=[Mount("/api", routes=economies_routes(auth=TOKEN)),
                                            *economies_routes(auth=TOKEN)]))


def test_a_host_guard_on_another_token_than_our_routes_is_refused() -> None:
    # MIAM's token as our routes know it never passes the host's own guard.
    message = _refusal(Starlette(routes=economies_routes(auth="another-token"),
                                 middleware=GUARD))
    assert "with MIAM's token, POST /economies (401)" in message


def test_without_a_token_the_check_says_in_one_line_what_it_could_not_prove(
        caplog: pytest.LogCaptureFixture) -> None:
    app = Starlette(routes=economies_routes(auth="host"), middleware=GUARD)
    with caplog.at_level(logging.WARNING, logger="miam_economies.api.http.host_check"):
        anyio.run(check_host, app)
    (line,) = [r.getMessage() for r in caplog.records]
    assert "not that MIAM's token reaches them" in line
    assert "open_economies(settings, app, token=MIAM_TOKEN)" in line
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="miam_economies.api.http.host_check"):
        anyio.run(check_host, app, TOKEN)  # told: proven, nothing to say
        with pytest.raises(EmbeddingRefused, match="with MIAM's token, POST /economies"):
            anyio.run(check_host, app, "not-the-token")
    assert caplog.records == []


def test_a_host_app_wrapped_in_asgi_middleware_is_checked_through_it() -> None:
    inner = Starlette(routes=economies_routes(auth=TOKEN))
    anyio.run(check_host, CORSMiddleware(inner, allow_origins=["http://miam.example"]))


def test_open_economies_needs_the_app_and_checks_it_before_opening(tmp_path: Path) -> None:
    settings = Settings(data=tmp_path / "data")
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'app'"):
        open_economies(settings)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"open_economies\(settings, app\) needs the host app"):
        open_economies(settings, None)  # type: ignore[arg-type]  # an untyped caller
    for blank in ("", " "):
        with pytest.raises(ValueError, match="empty token"):
            open_economies(settings, Starlette(), token=blank)
    bare = Starlette(routes=economies_routes(auth="host"))

    async def enter() -> None:
        async with open_economies(settings, bare):
            pass

    with pytest.raises(EmbeddingRefused):
        anyio.run(enter)
    assert not settings.data.exists()  # refused before the store was opened


def test_the_standalone_app_passes_its_own_check_unseen(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # Its token told to the check: proven, so not even the warning line.
    app = create_app(Settings(data=tmp_path / "data", token=TOKEN))

    async def start_and_stop() -> None:
        async with app.router.lifespan_context(app) as state:
            assert state is not None and "economies" in state

    with caplog.at_level(logging.INFO, logger="miam_economies"):
        anyio.run(start_and_stop)
    assert [r.name for r in caplog.records if r.name.startswith("miam_economies")] == []
