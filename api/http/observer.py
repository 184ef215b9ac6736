"""One log line and the metrics of every request a route (or the standalone app) serves.

``RequestObserver`` times every request it wraps, counts the refused ones by status, and
logs one JSON line: time, method, path, route, status, duration and, for an ingested
batch, ``recus``/``doublons``/``conflits``. It never logs a header (so never the token), a
query string or a body (ADR-0023). It wraps each of our routes, so a host app that mounts
them gets the same lines and metrics for them; the standalone app also wraps itself whole,
so refusals made before routing (401, 404, 431) are observed too, once.
"""

from __future__ import annotations

import json
import logging
import time
from datetime import UTC, datetime
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from miam_economies.api.http.host_probe import PROBE
from miam_economies.api.http.metrics import METRICS_STATE
from miam_economies.api.store.application import Appended
from miam_economies.domain.instants import iso_utc

log = logging.getLogger("miam_economies.requests")
"""One JSON line per request, at INFO (``miam-economies serve`` prints them on stderr)."""

_OBSERVED = "miam_economies.observed"  # scope key: an outer observer already times this
_ROUTE = "miam_economies.route"  # scope key: the route template that served the request
OUTCOME = "miam_economies.outcome"
"""Scope key where ``POST /economies`` leaves its ``Appended`` for the log line."""


class RequestObserver:
    """Pure ASGI wrapper: times the request, logs its line, feeds ``Metrics``.

    ``route``: the template of the route it wraps (None for the whole app). When an outer
    observer already watches the request it only records the template. The metrics are
    looked up in the lifespan state (``METRICS_STATE``): without them the line is still
    logged.
    """

    def __init__(self, app: ASGIApp, route: str | None = None):
        self.app = app
        self.route = route

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry."""
        # The host check's own requests (ADR-0091) are no traffic: no line, no metric.
        if scope["type"] != "http" or PROBE in scope:
            await self.app(scope, receive, send)
            return
        if self.route is not None:
            scope[_ROUTE] = self.route
        if scope.get(_OBSERVED):
            await self.app(scope, receive, send)
            return
        scope[_OBSERVED] = True
        started = time.perf_counter()
        status = 500  # unless an answer starts: an exception escaping is a 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            _record(scope, status, time.perf_counter() - started)


def _record(scope: Scope, status: int, seconds: float) -> None:
    route = scope.get(_ROUTE) or "(none)"
    metrics = (scope.get("state") or {}).get(METRICS_STATE)
    outcome = scope.get(OUTCOME)
    if metrics is not None:
        metrics.request(route, scope["method"], status, seconds)
        if isinstance(outcome, Appended):
            metrics.appended(outcome)
    line: dict[str, Any] = {"time": iso_utc(datetime.now(UTC)), "method": scope["method"],
                            "path": scope["path"], "route": route, "status": status,
                            "duration_s": round(seconds, 6)}
    if isinstance(outcome, Appended):
        line.update(recus=outcome.recus, doublons=outcome.doublons,
                    conflits=outcome.conflits)
    log.info(json.dumps(line, ensure_ascii=False))


def configure_request_log() -> None:
    """Print the request lines on standard error, one JSON object a line (the
    ``serve`` command; a host app configures logging its own way)."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
