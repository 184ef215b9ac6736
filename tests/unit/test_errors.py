"""One exception root (ADR-0123): every exception class of ours derives from
``MiamEconomiesError`` and keeps the standard base it had, so a caller that caught
``ValueError`` or ``ZoneInfoNotFoundError`` still does."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from zoneinfo import ZoneInfoNotFoundError

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.testclient import TestClient

import miam_economies
from miam_economies.api.http.body import MalformedBody
from miam_economies.api.http.errors import EXCEPTION_HANDLERS
from miam_economies.domain.breakdowns import BoundsError
from miam_economies.domain.classement import ClassementError
from miam_economies.domain.errors import MiamEconomiesError


def _ours() -> list[type[BaseException]]:
    found = []
    for module in pkgutil.walk_packages(miam_economies.__path__, "miam_economies."):
        loaded = importlib.import_module(module.name)
        found += [cls for _, cls in inspect.getmembers(loaded, inspect.isclass)
                  if issubclass(cls, BaseException) and cls.__module__ == module.name]
    return found


def test_every_exception_class_of_ours_derives_from_the_root() -> None:
    ours = _ours()
    assert len(ours) >= 15
    assert [cls.__qualname__ for cls in ours
            if not issubclass(cls, MiamEconomiesError)] == []


@pytest.mark.parametrize(("name", "base"), [
    ("domain.classement.ClassementError", ValueError),
    ("domain.strict_json.NotStrictJson", ValueError),
    ("domain.validation.SchemaError", ValueError),
    ("domain.breakdowns.BoundsError", ValueError),
    ("api.service.settings.UnknownZone", ZoneInfoNotFoundError),
    ("api.service.data_directory.DataDirectoryError", OSError),
])
def test_each_keeps_the_standard_base_it_had(name: str, base: type[Exception]) -> None:
    module, _, qualname = name.rpartition(".")
    cls = getattr(importlib.import_module(f"miam_economies.{module}"), qualname)
    assert issubclass(cls, MiamEconomiesError) and issubclass(cls, base)


@pytest.mark.parametrize("refusal", [
    ClassementError("min", "min must be an integer >= 1, not 0"),
    BoundsError("depuis is after jusqu_au"), MalformedBody("Content-Length is not a number")])
def test_a_refused_parameter_raised_by_a_route_is_a_400_naming_it(refusal: Exception) -> None:
    async def route(request: Request) -> Response:
        raise refusal

    app = Starlette(routes=[Route("/r", route)], exception_handlers=EXCEPTION_HANDLERS)
    answer = TestClient(app).get("/r")
    assert (answer.status_code, answer.json()) == (400, {"ok": False, "erreur": str(refusal)})
