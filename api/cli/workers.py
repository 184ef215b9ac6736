"""``serve --workers N``: what each uvicorn worker process runs (ADR-0031).

uvicorn spawns each worker as a fresh interpreter and hands it the app as an import string,
so the resolved ``Settings`` travel through the worker's environment
(``MIAM_ECONOMIES_WORKER_SETTINGS``, JSON; the bearer token with them, as
``MIAM_ECONOMIES_TOKEN`` would carry it) and the app is built again there by ``app()``. The
protocol with the connection guards (``api.cli.connections``: httptools when importable,
else h11; ADR-0010, 0112) is named the same way: ``WorkerHttp`` reads its header timeout
from ``MIAM_ECONOMIES_HEADER_TIMEOUT``.

Workers never run the projection: on PostgreSQL it is ``miam-economies project``'s.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from starlette.applications import Starlette

from miam_economies.api.cli.connections import guarded_protocol
from miam_economies.api.http.app import create_app
from miam_economies.api.http.observer import configure_request_log
from miam_economies.api.service.settings import Settings

SETTINGS_VAR = "MIAM_ECONOMIES_WORKER_SETTINGS"
"""Environment variable holding a worker's ``Settings`` as JSON."""

HEADER_TIMEOUT_VAR = "MIAM_ECONOMIES_HEADER_TIMEOUT"
"""Environment variable holding the header timeout, seconds (also the CLI's)."""

WORKER_APP = "miam_economies.api.cli.workers:app"
"""The app factory uvicorn imports in each worker."""

WORKER_HTTP = "miam_economies.api.cli.workers:WorkerHttp"
"""The protocol class uvicorn imports in each worker."""

_PATHS = ("data", "journal")

WorkerHttp = guarded_protocol(float(os.environ.get(HEADER_TIMEOUT_VAR) or 10.0))
"""``api.cli.connections.guarded_protocol`` (httptools when importable, else h11) with the
header timeout of this process's environment, seconds."""


def worker_environment(settings: Settings, header_timeout: float) -> dict[str, str]:
    """The environment variables that give a worker ``settings`` and ``header_timeout``
    (seconds). The data directory is made absolute: a worker may start elsewhere."""
    values: dict[str, Any] = asdict(settings)
    for name in _PATHS:
        if values[name] is not None:
            values[name] = str(Path(values[name]).resolve())
    return {SETTINGS_VAR: json.dumps(values), HEADER_TIMEOUT_VAR: str(header_timeout)}


def settings_from_environment() -> Settings:
    """The ``Settings`` ``worker_environment`` wrote; raises ``KeyError`` outside a
    worker, ``ValueError`` for unreadable settings."""
    values = json.loads(os.environ[SETTINGS_VAR])
    known = {f.name for f in fields(Settings)}
    if set(values) != known:
        raise ValueError(f"worker settings hold {sorted(values)}, expected {sorted(known)}")
    for name in _PATHS:
        if values[name] is not None:
            values[name] = Path(values[name])
    return Settings(**values)


def app() -> Starlette:
    """The app of one worker (uvicorn's ``factory=True``): the standalone app of
    ``api.http.app.create_app`` with the settings of the environment, and the request log."""
    configure_request_log()
    return create_app(settings_from_environment())
