"""The composition root: the event store, the bilan view, its projection and runner.

Nothing is built at import. ``open_services`` builds everything from one ``Settings`` and
closes it again; the HTTP app, the CLI and MIAM's own process all go through it.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from eventsourcing.persistence import IntegrityError, PersistenceError
from eventsourcing.postgres import PostgresDatastore

from miam_economies.api.backends import Database
from miam_economies.api.settings import Settings, machine_fuseau
from miam_economies.api.store import EventStore, iso_utc
from miam_economies.domain.bilan import check_bounds
from miam_economies.domain.formulas import FORMULES, V1
from miam_economies.projections.bilan import BilanProjection, projection_name
from miam_economies.projections.journal import JournalFollower
from miam_economies.projections.postgres_view import PostgresBilanView
from miam_economies.projections.runner import CatchUpRunner
from miam_economies.projections.sql_view import SqlBilanView
from miam_economies.projections.sqlite_view import SQLiteBilanView, ViewDatastore
from miam_economies.projections.view import ProjectionMismatch, ProjectionSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Services:
    """The live objects of one process: ``store`` (appends) and ``runner`` (keeps the
    active projection up to date, journal included; ``projection`` reads it)."""

    settings: Settings
    store: EventStore
    runner: CatchUpRunner

    @property
    def projection(self) -> BilanProjection:
        """The projection that serves now: a replay's switch, made by another process, is
        taken at the next read (ADR-0009)."""
        if self.runner.follow_active:
            self.runner.follow_switch()
        return self.runner.projection

    def bilan(self, par: str | None = None, depuis: str | None = None,
              jusqu_au: str | None = None) -> dict[str, Any]:
        """The bilan as MIAM reads it (SPEC, "Interfaces", ``GET /economies/bilan``).

        Figures come from the projection's view, never from the events: the cost is that
        of the answer, not of the history. With ``par`` (``client``, ``jour``, ``modele``,
        ``demande`` or a journal field) it adds ``par`` and ``groupes``; ``depuis`` and
        ``jusqu_au`` (``YYYY-MM-DD``, inclusive) bound the days of ``par=jour``.
        ``provenance`` says which formula, zone and position the figures stand for, and
        the store's head when read. Raises ``PersistenceError`` if a database cannot be
        read, and ``ValueError`` for unsound day bounds (``domain.bilan.check_bounds``).
        """
        check_bounds(par, depuis, jusqu_au)
        snapshot = self.projection.snapshot(par, depuis, jusqu_au)
        head = self.store.head()
        bilan = snapshot.as_dict(head, self.store.count_up_to(snapshot.position, head),
                                 iso_utc(datetime.now(UTC)))
        if self.runner.journal is not None:
            bilan["provenance"]["journal"] = self.runner.journal.state()
        return bilan

    def demande(self, demande_id: str) -> dict[str, Any] | None:
        """One demande's figures (SPEC, ``GET /economies/demandes/{id}``), or None for an
        id never seen. Should two clients share the id, the first by name is given and
        ``autres_clients`` lists the others."""
        projection = self.projection
        entries = projection.view.demande(projection.tracking_name, demande_id)
        if not entries:
            return None
        first = entries[0]
        if len(entries) > 1:
            first["autres_clients"] = [e["client"] for e in entries[1:]]
        return first


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
(``CatchUpRunner``; ADR-0011): the bilan lags a burst of POSTs by about this much."""

REPLAY_PAGE = 20_000
"""Notifications folded per view transaction while a projection is built or replayed:
20,000 folded 2x faster than 500 at 300,000 events (``make bench``; ADR-0011)."""


def build_projection(store: EventStore, view: SqlBilanView, name: str,
                     progress: Callable[[int, int], None] | None = None,
                     page_size: int = REPLAY_PAGE) -> BilanProjection:
    """Fold the store into projection ``name`` (settings already recorded) until it has
    reached the store's head, from its own position (so an interrupted build resumes), and
    join the journal; return it. It is not made active here. ``progress(done, total)`` is
    called after each page of ``page_size`` events. Raises the view's or store's
    ``PersistenceError``.
    """
    settings = view.settings_of(name)
    assert settings is not None, f"no settings recorded for {name}"
    if (view.max_tracking_id(name) or 0) > store.head():
        view.reset(name)  # built on another store: start again
    projection = BilanProjection(view, ZoneInfo(settings.fuseau), FORMULES[settings.formule])
    # Larger pages than the live runner's: nobody waits for a commit, and a page's events
    # meet in memory before they meet the view's B-trees (ADR-0011).
    runner = CatchUpRunner(store.recorder, store.mapper, projection,
                           journal=JournalFollower(view, Path(settings.journal)),
                           page_size=page_size)
    while True:
        while projection.position() < store.head():
            try:
                runner.fold_page()
            except IntegrityError:
                continue  # another runner folded this page
            if progress is not None:
                progress(projection.position(), store.head())
        while runner.journal is not None and runner.journal.follow():
            pass
        if projection.position() >= store.head():
            return projection  # appends after this are the live runner's to fold


def _open_active(view: SqlBilanView, store: EventStore,
                 settings: Settings) -> ProjectionSettings:
    """Open the projection that serves (creating it the first time) and return its
    settings; see ADR-0008 and ADR-0009.

    The first opening records the asked zone and journal (else the machine's zone and
    ``DIR/delegations.jsonl``), under formula ``v1``. Later openings follow the recorded
    settings when theirs are unset. An explicit journal other than the recorded one, or an
    explicit zone other than a recorded explicit one, raises ``ProjectionMismatch`` (a
    zone changes by ``replay``). An explicit zone other than a recorded default is taken:
    the projection in that zone is built first, then made active (never served
    half-built).
    """
    journal = str(settings.journal_path.resolve())
    active = view.active()
    current = view.settings_of(active) if active is not None else None
    if active is None or current is None:
        fuseau = settings.fuseau or machine_fuseau()
        current = ProjectionSettings(fuseau, journal, settings.fuseau is not None,
                                     settings.journal is not None, V1.name)
        active = projection_name(V1.name, fuseau)
        current = view.record_settings(active, current)
        view.activate(active, expected=None)
    if settings.journal is not None and journal != current.journal:
        raise ProjectionMismatch(
            f"the bilan is joined with journal {current.journal}, not {journal}: pass that "
            "one (or leave it unset), or delete projections.sqlite while the server is "
            "stopped to rebuild it with the new journal")
    if settings.fuseau is not None and settings.fuseau != current.fuseau:
        if current.fuseau_explicite:
            raise ProjectionMismatch(
                f"the bilan's days are cut in {current.fuseau}, not {settings.fuseau}: pass "
                f"--fuseau {current.fuseau} (or leave it unset), or move the bilan to "
                f"{settings.fuseau} with `miam-economies replay --formule "
                f"{current.formule} --fuseau {settings.fuseau}`")
        log.warning("the bilan moves to zone %s (%s was a default): building it first",
                    settings.fuseau, current.fuseau)
        target = projection_name(current.formule, settings.fuseau)
        view.record_settings(target, replace(current, fuseau=settings.fuseau,
                                             fuseau_explicite=True))
        build_projection(store, view, target)
        view.activate(target, expected=active)
        active = view.active() or target
        current = view.settings_of(active) or current
    if (view.max_tracking_id(active) or 0) > store.head():
        # The view outlived its store (the store file was replaced or deleted): its
        # figures describe events that are not there. It is derived data: rebuild it.
        log.warning("projection %s is past the store's head: rebuilding it", active)
        view.reset(active)
    return current


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


def open_view(database: Database, lock_timeout: int = 5) -> tuple[SqlBilanView, Any]:
    """The bilan view of ``database`` with its tables created, and its datastore (to
    close): ``SQLiteBilanView`` in ``projections.sqlite`` beside an SQLite store, or
    ``PostgresBilanView`` in the PostgreSQL database (ADR-0031). ``lock_timeout``:
    seconds. Raises ``PersistenceError``, ``ProjectionMismatch`` (tables of a newer
    release)."""
    datastore: Any
    view: SqlBilanView
    if database.is_postgres:
        datastore = PostgresDatastore(database.dbname, database.host, database.port,
                                      database.user, database.password, pool_size=2,
                                      max_overflow=2, connect_timeout=10,
                                      lock_timeout=lock_timeout)
        view = PostgresBilanView(datastore)
    else:
        datastore = ViewDatastore(str(database.projections_path), lock_timeout=lock_timeout)
        view = SQLiteBilanView(datastore)
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
    run ``runner.catch_up()``. None (the default) runs it on SQLite only: on PostgreSQL
    the projection is ``miam-economies project``'s, a process of its own (ADR-0031).
    Raises ``ValueError`` for a malformed database URL, ``OSError`` when the data
    directory cannot be created, ``ZoneInfoNotFoundError`` for an unknown ``fuseau``,
    ``ProjectionMismatch`` when the view was built with another explicit zone or journal
    (ADR-0008), and the library's ``PersistenceError`` when a database cannot be opened.
    """
    if settings.fuseau is not None:
        ZoneInfo(settings.fuseau)  # an unknown zone fails before anything is created
    database = settings.database
    if run_projections is None:
        run_projections = not database.is_postgres
    settings.data.mkdir(parents=True, exist_ok=True)
    if database.path is not None:
        database.path.parent.mkdir(parents=True, exist_ok=True)
        for path in (database.path, database.projections_path):
            _create_private(path)
    store = _opened(lambda: EventStore(env=database.store_env(settings.lock_timeout)),
                    database)
    try:
        view, datastore = open_view(database, settings.lock_timeout)
    except BaseException:
        store.close()
        raise
    try:
        recorded = _open_active(view, store, settings)
        settings = replace(settings, fuseau=recorded.fuseau, journal=Path(recorded.journal))
        projection = BilanProjection(view, ZoneInfo(recorded.fuseau),
                                     FORMULES[recorded.formule])
        runner = CatchUpRunner(store.recorder, store.mapper, projection,
                               journal=JournalFollower(view, Path(recorded.journal)),
                               follow_active=True, poll_interval=settings.poll_interval,
                               max_defer=MAX_DEFER)
        store.on_append(runner.wake)
        if run_projections:
            runner.start()
        try:
            yield Services(settings, store, runner)
        finally:
            runner.stop()
    finally:
        datastore.close()
        store.close()
