"""Metrics (Prometheus text format, ``prometheus_client``) and one log line per request.

``RequestObserver`` times every request it wraps, counts the refused ones by status, and
logs one JSON line: time, method, path, route, status, duration and, for an ingested
batch, ``recus``/``doublons``/``conflits``. It never logs a header (so never the token), a
query string or a body (ADR-0023). It wraps each of our routes, so a host app that mounts them
gets the same lines and metrics for them; the standalone app also wraps itself whole, so
refusals made before routing (401, 404, 431) are observed too, once.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from miam_economies.api.services import Services
from miam_economies.api.store import Appended, iso_utc

log = logging.getLogger("miam_economies.requests")
"""One JSON line per request, at INFO (``miam-economies serve`` prints them on stderr)."""

METRICS_STATE = "economies_metrics"
"""Key of the ``Metrics`` in the lifespan state (``request.state.economies_metrics``)."""

_OBSERVED = "miam_economies.observed"  # scope key: an outer observer already times this
_ROUTE = "miam_economies.route"  # scope key: the route template that served the request
OUTCOME = "miam_economies.outcome"
"""Scope key where ``POST /economies`` leaves its ``Appended`` for the log line."""

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""Seconds: a 500-event batch takes tens of milliseconds, an ``attendre`` read up to 5 s."""


class _ProjectionCollector(Collector):
    """Gauges read at scrape time: the store's head, the projection's position, their
    difference (lag, events), and whether the runner's last page failed."""

    def __init__(self, services: Services):
        self.services = services

    def collect(self) -> Iterator[GaugeMetricFamily]:
        """One sample per gauge; raises ``PersistenceError`` if the store cannot be read
        (the scrape then answers 503)."""
        head = self.services.store.head()
        position = self.services.projection.position()
        for name, doc, value in (
            ("miam_economies_store_head", "Last notification id of the event store.", head),
            ("miam_economies_projection_position",
             "Last notification id folded into the active projection.", position),
            ("miam_economies_projection_lag_events",
             "Events stored but not yet folded into the projection.", max(0, head - position)),
            ("miam_economies_projection_failing",
             "1 while the projection runner's last page failed.",
             int(self.services.runner.last_error is not None)),
        ):
            yield GaugeMetricFamily(name, doc, value=value)


class Metrics:
    """The service's metrics, in a registry of their own (two apps in one process, as in
    the tests, never share counters).

    Counters: ``miam_economies_events_received_total`` (events of batches answered 200:
    recus + doublons), ``miam_economies_events_stored_total`` (recus),
    ``miam_economies_doublons_total``, ``miam_economies_conflits_total``,
    ``miam_economies_requests_refused_total{status}`` (answers >= 400); histogram
    ``miam_economies_request_duration_seconds{route,method,status}``; gauges from
    ``_ProjectionCollector`` (store head, projection position, lag, failing).
    """

    def __init__(self, services: Services):
        self.registry = CollectorRegistry()
        registry = self.registry
        self.received = Counter("miam_economies_events_received",
                                "Events of batches answered 200 (recus + doublons).",
                                registry=registry)
        self.stored = Counter("miam_economies_events_stored",
                              "Events newly stored (the answers' recus).", registry=registry)
        self.doublons = Counter("miam_economies_doublons",
                                "Events already stored, or repeated in their batch.",
                                registry=registry)
        self.conflits = Counter("miam_economies_conflits",
                                "Doublons whose content differs from the version kept.",
                                registry=registry)
        self.refused = Counter("miam_economies_requests_refused",
                               "Requests answered with a status >= 400, by status.",
                               ["status"], registry=registry)
        self.latency = Histogram("miam_economies_request_duration_seconds",
                                 "Time from request to the end of the answer, seconds.",
                                 ["route", "method", "status"], buckets=LATENCY_BUCKETS,
                                 registry=registry)
        registry.register(_ProjectionCollector(services))

    def appended(self, outcome: Appended) -> None:
        """Count one batch answered 200."""
        self.received.inc(outcome.recus + outcome.doublons)
        self.stored.inc(outcome.recus)
        self.doublons.inc(outcome.doublons)
        self.conflits.inc(outcome.conflits)

    def request(self, route: str, method: str, status: int, seconds: float) -> None:
        """Count one answered request."""
        self.latency.labels(route, method, str(status)).observe(seconds)
        if status >= 400:
            self.refused.labels(str(status)).inc()

    def exposition(self) -> bytes:
        """The Prometheus text exposition of every metric. Raises ``PersistenceError``
        when the store's head cannot be read."""
        return generate_latest(self.registry)


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
        if scope["type"] != "http":
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
