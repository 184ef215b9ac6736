"""The composition root: the event store, the bilan view, its projection and runner.

Nothing is built at import. ``open_services`` builds everything from one ``Settings`` and
closes it again; the HTTP app, the CLI and (later) MIAM's own process all go through it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from eventsourcing.sqlite import SQLiteDatastore

from api.settings import Settings
from api.store import EventStore, iso_utc, sqlite_env
from domain.formulas import V1
from projections.bilan import BilanProjection, SQLiteBilanView
from projections.runner import CatchUpRunner

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Services:
    """The live objects of one process: ``store`` (appends), ``projection`` (reads the
    view) and ``runner`` (keeps the view up to date)."""

    settings: Settings
    store: EventStore
    projection: BilanProjection
    runner: CatchUpRunner

    def bilan(self) -> dict[str, Any]:
        """The bilan as MIAM reads it (SPEC, "Interfaces", ``GET /economies/bilan``).

        The per-client figures come from the projection's snapshot, never from the
        events; ``provenance`` says which formula and position they stand for, and the
        store's head at the time of reading. Raises ``PersistenceError`` if a database
        cannot be read.
        """
        return self.projection.snapshot().as_dict(self.store.head(), iso_utc(datetime.now(UTC)))


@contextmanager
def open_services(settings: Settings, *, run_projections: bool = True) -> Iterator[Services]:
    """Open the store and the view under ``settings.data``; close them on exit.

    With ``run_projections`` the runner follows the log in a background thread, woken by
    every append of this process (ADR-0004); without, callers run ``runner.catch_up()``.
    Raises ``OSError`` when the data directory cannot be created, and the library's
    ``PersistenceError`` when a database cannot be opened.
    """
    settings.data.mkdir(parents=True, exist_ok=True)
    store = EventStore(env=sqlite_env(settings.store_path, settings.lock_timeout))
    datastore = SQLiteDatastore(str(settings.projections_path),
                                lock_timeout=settings.lock_timeout)
    view = SQLiteBilanView(datastore)
    view.create_table()
    projection = BilanProjection(view, V1)
    if projection.position() > store.head():
        # The view outlived its store (the store file was replaced or deleted): its
        # figures describe events that are not there. It is derived data: rebuild it.
        log.warning("projection %s is past the store's head: rebuilding it",
                    projection.tracking_name)
        view.reset(projection.tracking_name)
    runner = CatchUpRunner(store.recorder, store.mapper, projection,
                           poll_interval=settings.poll_interval)
    store.on_append(runner.wake)
    try:
        if run_projections:
            runner.start()
        yield Services(settings, store, projection, runner)
    finally:
        runner.stop()
        datastore.close()
        store.close()
