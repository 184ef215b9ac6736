"""The service's metrics in Prometheus text format (``prometheus_client``), in a registry
of their own, and the gauges read from the store and the projection at scrape time
(ADR-0023).

Under ``serve --workers N`` each worker counts in files of ``PROMETHEUS_MULTIPROC_DIR``
(prometheus_client's multiprocess mode; ``serve`` makes the directory, ADR-0154) and a
scrape sums every worker's counters, whichever worker answers it; the gauges are read
from the store once, by the worker that answers. Without that variable (one process,
MIAM embedded, the tests' apps) the counters are the app's own.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from miam_economies.api.service.services import Services
from miam_economies.api.store.application import Appended

METRICS_STATE = "economies_metrics"
"""Key of the ``Metrics`` in the lifespan state (``request.state.economies_metrics``)."""

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""Seconds: a 500-event batch takes tens of milliseconds, an ``attendre`` read up to 5 s."""


class _ProjectionCollector(Collector):
    """Gauges read at scrape time (``Services.fold_health``): the store's head, the
    projection's position, their difference (lag, events), whether the runner's last page
    failed, the events set aside, and whether the fold has stopped."""

    def __init__(self, services: Services):
        self.services = services

    def collect(self) -> Iterator[GaugeMetricFamily]:
        """One sample per gauge; raises ``PersistenceError`` if the store cannot be read
        (the scrape then answers 503)."""
        health = self.services.fold_health()
        for name, doc, value in (
            ("miam_economies_store_head", "Last notification id of the event store.",
             health.tete),
            ("miam_economies_projection_position",
             "Last notification id folded into the active projection.", health.position),
            ("miam_economies_projection_lag_events",
             "Events stored but not yet folded into the projection.", health.retard),
            ("miam_economies_projection_failing",
             "1 while the projection runner's last page failed.",
             int(self.services.folding_failed)),
            ("miam_economies_projection_set_aside_events",
             "Stored events the projection set aside, in no figure (ADR-0135).",
             health.ecartes),
            ("miam_economies_projection_stalled",
             "1 while events wait and the fold has not advanced for the bound "
             "(Settings.fold_stall_after, ADR-0136).",
             int(health.arrete_depuis is not None)),
        ):
            yield GaugeMetricFamily(name, doc, value=value)


MULTIPROC_DIR = "PROMETHEUS_MULTIPROC_DIR"
"""prometheus_client's variable: the directory where the processes of one server count
(read by prometheus_client when it is imported, so set before a worker starts)."""

PREFIX = "miam_economies_"


class _Workers(Collector):
    """Our counters and histogram summed over every process counting in ``path``; the
    names of other code that counts there too (a host's own) are left out."""

    def __init__(self, path: str):
        self._all = MultiProcessCollector(None, path)  # type: ignore[no-untyped-call]

    def collect(self) -> Iterator[Metric]:
        """The families of ``miam_economies_`` metrics, each summed over the processes."""
        families = self._all.collect()  # type: ignore[no-untyped-call]
        return (family for family in families if family.name.startswith(PREFIX))


class Metrics:
    """The service's metrics, in a registry of their own (two apps in one process, as in
    the tests, never share counters), or, when ``PROMETHEUS_MULTIPROC_DIR`` is set, summed
    over the processes counting there (``serve --workers N``; ADR-0154).

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
        self._gauges = _ProjectionCollector(services)
        registry.register(self._gauges)
        self._shared = os.environ.get(MULTIPROC_DIR)  # as prometheus_client read it

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
        """The Prometheus text exposition of every metric: the counters of every worker
        when they count in ``PROMETHEUS_MULTIPROC_DIR``, the gauges read once. Raises
        ``PersistenceError`` when the store's head cannot be read."""
        if self._shared is None:
            return generate_latest(self.registry)
        scrape = CollectorRegistry()
        scrape.register(_Workers(self._shared))
        scrape.register(self._gauges)
        return generate_latest(scrape)
