"""The composition root: the only place that builds the objects holding a resource
(the event store, the bilan view and their connections, the projection runner and its
thread), from one ``Settings``, and closes them again (ADR-0042).

Nothing is built at import. The HTTP app, the CLI, the use cases and MIAM's own process
all open what they need here: ``open_services`` for a process that serves or folds,
``open_store`` and ``open_view`` for a use case that needs one of them alone.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import replace
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from eventsourcing.persistence import PersistenceError

from miam_economies.api.extras import require
from miam_economies.api.service.data_directory import writable
from miam_economies.api.service.formules import formula_for
from miam_economies.api.service.pacing import PACING_FILE, IngestFirst, SharedPacing
from miam_economies.api.service.services import Services
from miam_economies.api.service.serving import follower, open_active
from miam_economies.api.service.settings import Settings
from miam_economies.api.service.switching import ActiveProjection
from miam_economies.api.store.application import EventStore
from miam_economies.api.store.backends import Database
from miam_economies.projections.projection import BilanProjection
from miam_economies.projections.runner import CatchUpRunner
from miam_economies.projections.sql_view import SqlBilanView
from miam_economies.projections.sqlite_view import SQLiteBilanView, ViewDatastore

log = logging.getLogger(__name__)


def _create_private(path: Path) -> None:
    """Create ``path`` empty with mode 0600, or make an existing one (and its -wal and -shm
    files) 0600: SQLite gives those files the database file's mode, so the events stay
    readable by their owner only (ADR-0010). Raises ``OSError``."""
    with suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    for each in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        with suppress(FileNotFoundError):
            if each.stat().st_mode & 0o077:
                each.chmod(0o600)


MAX_DEFER = 1.0
"""Seconds the live runner may put off its next page while batches are being ingested
(``IngestFirst.max_defer``; ADR-0011): the bilan lags a burst of POSTs by about this
much."""

OPEN_ATTEMPTS = 5
"""Times the store or the view is opened again when creating its tables failed: on
PostgreSQL, processes starting at once (workers, ``project``) race on the catalog."""


def _opened(open_: Callable[[], Any], database: Database) -> Any:
    """``open_()``, tried again on PostgreSQL after a ``PersistenceError`` (a lost race on
    ``CREATE ... IF NOT EXISTS``/``CREATE OR REPLACE FUNCTION``); raises the last one."""
    for attempt in range(OPEN_ATTEMPTS):
        try:
            return open_()
        except PersistenceError:
            if not database.is_postgres or attempt == OPEN_ATTEMPTS - 1:
                raise
            time.sleep(0.1 * (attempt + 1))
    raise AssertionError("unreachable")


def _require_driver(database: Database) -> None:
    """Raise ``MissingExtra`` naming the ``postgres`` extra for a PostgreSQL database
    when its driver is not installed (ADR-0044)."""
    if database.is_postgres:
        require("postgres", "psycopg", "a PostgreSQL database")


def open_store(database: Database, lock_timeout: int = 5, *,
               read_only: bool = False) -> EventStore:
    """The event store of ``database``, its tables created unless ``read_only`` (then
    nothing is written: ``compare``, ``anomalies``, ``export``). ``lock_timeout``:
    seconds. Raises the library's ``PersistenceError``, ``MissingExtra`` for a
    PostgreSQL database without the ``postgres`` extra, and ``DatabaseNotUtf8`` for a
    PostgreSQL database of another encoding unless ``read_only`` (ADR-0153)."""
    _require_driver(database)
    if database.is_postgres and not read_only:
        store: EventStore = _opened(lambda: _postgres_store(database, lock_timeout), database)
        return store
    env = database.store_env(lock_timeout, create_table=not read_only)
    return _opened(lambda: EventStore(env=env), database)  # type: ignore[no-any-return]


def _postgres_store(database: Database, lock_timeout: int) -> EventStore:
    # Its encoding checked before any table is created (ADR-0153). A read-only store is
    # not: its events are bytes and ASCII topics, and export reads what an older release
    # stored in a database of another encoding, to import it into a UTF8 one.
    from eventsourcing.postgres import PostgresApplicationRecorder

    from miam_economies.api.store.postgres_connections import check_utf8

    store = EventStore(env=database.store_env(lock_timeout, create_table=False))
    try:
        recorder = store.recorder
        assert isinstance(recorder, PostgresApplicationRecorder)
        check_utf8(recorder.datastore)
        recorder.create_table()
    except BaseException:
        store.close()
        raise
    return store


def open_view(database: Database, lock_timeout: int = 5, *,
              create: bool = True) -> tuple[SqlBilanView, Any]:
    """The bilan view of ``database`` with its tables created, and its datastore (to
    close): ``SQLiteBilanView`` in ``projections.sqlite`` beside an SQLite store, or
    ``PostgresBilanView`` in the PostgreSQL database (ADR-0031). ``lock_timeout``:
    seconds; ``create``: create the tables if missing (False only reads: an SQLite file is
    still created if missing, so check ``projections_path`` first). Raises
    ``PersistenceError``, ``ProjectionMismatch`` (tables of a newer release)."""
    datastore: Any
    view: SqlBilanView
    _require_driver(database)
    if database.is_postgres:
        # Imported here: psycopg is loaded only for a PostgreSQL URL (ADR-0043).
        from eventsourcing.postgres import PostgresDatastore

        from miam_economies.api.store.postgres_connections import bounded_pool, check_utf8
        from miam_economies.projections.postgres_view import PostgresBilanView

        datastore = PostgresDatastore(database.dbname, database.host, database.port,
                                      database.user, database.password, pool_size=2,
                                      max_overflow=2, connect_timeout=lock_timeout,
                                      lock_timeout=lock_timeout)
        bounded_pool(datastore)  # the store's connections' rules (ADR-0152)
        try:
            check_utf8(datastore)  # DatabaseNotUtf8 (ADR-0153)
        except BaseException:
            datastore.close()
            raise
        view = PostgresBilanView(datastore)
    else:
        datastore = ViewDatastore(str(database.projections_path), lock_timeout=lock_timeout)
        view = SQLiteBilanView(datastore)
    if create:
        try:
            _opened(view.create_table, database)
        except BaseException:
            datastore.close()
            raise
    return view, datastore


@contextmanager
def open_services(settings: Settings, *,
                  run_projections: bool | None = None) -> Iterator[Services]:
    """Open the store and the view of ``settings.database`` (SQLite files under
    ``settings.data`` by default, or PostgreSQL); close them on exit.

    With ``run_projections`` the runner follows the log (and MIAM's journal) in a
    background thread, woken by every append of this process (ADR-0004); without, callers
    run ``runner.catch_up()``. None (the default) runs it on SQLite unless
    ``settings.fold_in_thread`` is False: on PostgreSQL the projection is
    ``miam-economies project``'s, a process of its own (ADR-0031), and ``serve`` on SQLite
    starts one too (ADR-0115). On SQLite, ingestion first holds across the processes of
    one data directory (``api.service.pacing``).
    Raises ``ValueError`` for a malformed database URL, ``DataDirectoryError`` (an
    ``OSError``) naming the directory and the file when the data directory or an SQLite
    file in it cannot be created or written, ``ZoneInfoNotFoundError`` for an unknown
    ``fuseau``, ``ProjectionMismatch`` when the view was built with another explicit zone or journal
    (ADR-0008), ``DatabaseNotUtf8`` for a PostgreSQL database of another encoding
    (ADR-0153), and the library's ``PersistenceError`` when a database cannot be opened.
    """
    if settings.fuseau is not None:
        ZoneInfo(settings.fuseau)  # an unknown zone fails before anything is created
    database = settings.database
    if run_projections is None:
        run_projections = not database.is_postgres and settings.fold_in_thread
    with writable(settings.data):  # each step names what it could not write (issue 33)
        settings.data.mkdir(parents=True, exist_ok=True)
        if database.path is not None:
            database.path.parent.mkdir(parents=True, exist_ok=True)
            for path in (database.path, database.projections_path):
                _create_private(path)
    with writable(settings.data, database.path):
        store = open_store(database, settings.lock_timeout)
    pacing = None
    try:
        projections = None if database.path is None else database.projections_path
        with writable(settings.data, projections):
            view, datastore = open_view(database, settings.lock_timeout)
        if database.path is not None:
            with writable(settings.data, database.path.with_name(PACING_FILE)):
                pacing = SharedPacing(database.path.with_name(PACING_FILE))
    except BaseException:
        store.close()
        raise
    try:
        recorded = open_active(view, store, settings)
        journal = follower(view, recorded, settings.data)
        settings = replace(settings, fuseau=recorded.fuseau, journal=journal.path)
        serving = ActiveProjection(BilanProjection(view, ZoneInfo(recorded.fuseau),
                                                   formula_for(view, recorded.formule)))
        ingest_first = IngestFirst(pacing, max_defer=MAX_DEFER)
        runner = CatchUpRunner(store, serving.now, journal=journal,
                               poll_interval=settings.poll_interval, pacing=ingest_first)
        store.on_append(runner.wake)
        if run_projections:
            if pacing is not None:
                pacing.reset()  # this process serves: what a killed one left is stale
            runner.start()
        try:
            yield Services(settings, store, serving, journal, runner, ingest_first)
        finally:
            runner.stop()
    finally:
        datastore.close()
        store.close()
        if pacing is not None:
            pacing.close()
