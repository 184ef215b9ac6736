"""An empty bearer token is refused when the middleware or the standalone app is built,
never at request time: ``Authorization: Bearer `` would match it (issue 12)."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from miam_economies.api.http.app import create_app
from miam_economies.api.http.auth import BearerAuth
from miam_economies.api.service.settings import Settings


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    await PlainTextResponse("ok")(scope, receive, send)


@pytest.mark.parametrize("token", ["", " ", "\t"])
def test_bearer_auth_refuses_to_start_with_an_empty_token(token: str) -> None:
    with pytest.raises(ValueError, match="non-empty token"):
        BearerAuth(app, token=token)


@pytest.mark.parametrize("token", [None, ""])
def test_the_standalone_app_refuses_to_start_without_a_token(
        tmp_path: Path, token: str | None) -> None:
    with pytest.raises(ValueError, match="needs a bearer token"):
        create_app(Settings(data=tmp_path, token=token))
