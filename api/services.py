"""The composition root: the event store, the bilan view, its projection and runner.

Nothing is built at import. ``open_services`` builds everything from one ``Settings`` and
closes it again; the HTTP app, the CLI and MIAM's own process all go through it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from eventsourcing.sqlite import SQLiteDatastore

from api.settings import Settings, machine_fuseau
from api.store import EventStore, iso_utc, sqlite_env
from domain.bilan import check_day
from domain.formulas import V1
from projections.bilan import BilanProjection
from projections.journal import JournalFollower
from projections.runner import CatchUpRunner
from projections.sqlite_view import SQLiteBilanView
from projections.view import ProjectionMismatch, ProjectionSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Services:
    """The live objects of one process: ``store`` (appends), ``projection`` (reads the
    view) and ``runner`` (keeps the view up to date, journal included)."""

    settings: Settings
    store: EventStore
    projection: BilanProjection
    runner: CatchUpRunner

    def bilan(self, par: str | None = None, depuis: str | None = None,
              jusqu_au: str | None = None) -> dict[str, Any]:
        """The bilan as MIAM reads it (SPEC, "Interfaces", ``GET /economies/bilan``).

        Figures come from the projection's view, never from the events: the cost is that
        of the answer, not of the history. With ``par`` (``client``, ``jour``, ``modele``,
        ``demande`` or a journal field) it adds ``par`` and ``groupes``; ``depuis`` and
        ``jusqu_au`` (``YYYY-MM-DD``, inclusive) bound the days of ``par=jour``.
        ``provenance`` says which formula, zone and position the figures stand for, and
        the store's head when read. Raises ``PersistenceError`` if a database cannot be
        read, and ``ValueError`` for a bound that is not a ``YYYY-MM-DD`` day or bounds
        without ``par="jour"``.
        """
        for bound in (depuis, jusqu_au):
            if bound is not None:
                check_day(bound)
        if (depuis or jusqu_au) and par != "jour":
            raise ValueError("depuis and jusqu_au bound days: they need par=jour")
        snapshot = self.projection.snapshot(par, depuis, jusqu_au)
        bilan = snapshot.as_dict(self.store.head(), self.store.count_up_to(snapshot.position),
                                 iso_utc(datetime.now(UTC)))
        if self.runner.journal is not None:
            bilan["provenance"]["journal"] = self.runner.journal.state()
        return bilan

    def demande(self, demande_id: str) -> dict[str, Any] | None:
        """One demande's figures (SPEC, ``GET /economies/demandes/{id}``), or None for an
        id never seen. Should two clients share the id, the first by name is given and
        ``autres_clients`` lists the others."""
        entries = self.projection.view.demande(self.projection.tracking_name, demande_id)
        if not entries:
            return None
        first = entries[0]
        if len(entries) > 1:
            first["autres_clients"] = [e["client"] for e in entries[1:]]
        return first


def _projection_settings(view: SQLiteBilanView, name: str,
                         settings: Settings) -> ProjectionSettings:
    """The zone and journal projection ``name`` is built with (ADR-0008).

    The first opening records them (the asked ones, else the machine's zone and
    ``DIR/delegations.jsonl``); later openings follow them when unset. An explicit setting
    that differs from a recorded explicit one raises ``ProjectionMismatch``; one that
    differs from a recorded default rebuilds the projection (logged): nobody chose the old.
    """
    wanted = ProjectionSettings(
        fuseau=settings.fuseau or machine_fuseau(),
        journal=str(settings.journal_path.resolve()),
        fuseau_explicite=settings.fuseau is not None,
        journal_explicite=settings.journal is not None,
    )
    recorded = view.record_settings(name, wanted)
    asked = (("fuseau", wanted.fuseau, recorded.fuseau, wanted.fuseau_explicite,
              recorded.fuseau_explicite),
             ("journal", wanted.journal, recorded.journal, wanted.journal_explicite,
              recorded.journal_explicite))
    conflicts = [(what, new, old, old_explicit)
                 for what, new, old, explicit, old_explicit in asked
                 if explicit and new != old]
    for what, new, old, old_explicit in conflicts:
        if old_explicit:
            raise ProjectionMismatch(
                f"the projection was built with {what} {old}, not {new}: pass {old} (or "
                f"leave it unset), or rebuild the projection with {new} by deleting "
                "projections.sqlite while the server is stopped")
    if conflicts:
        log.warning("projection %s: rebuilding it with %s (was built with defaults)",
                    name, ", ".join(f"{what} {new}" for what, new, _, _ in conflicts))
        view.reset(name)
        recorded = view.record_settings(name, wanted)
    return recorded


@contextmanager
def open_services(settings: Settings, *, run_projections: bool = True) -> Iterator[Services]:
    """Open the store and the view under ``settings.data``; close them on exit.

    With ``run_projections`` the runner follows the log (and MIAM's journal) in a
    background thread, woken by every append of this process (ADR-0004); without, callers
    run ``runner.catch_up()``. Raises ``OSError`` when the data directory cannot be
    created, ``ZoneInfoNotFoundError`` for an unknown ``fuseau``, ``ProjectionMismatch``
    when the view was built with another explicit zone or journal (ADR-0008), and the
    library's ``PersistenceError`` when a database cannot be opened.
    """
    if settings.fuseau is not None:
        ZoneInfo(settings.fuseau)  # an unknown zone fails before anything is created
    settings.data.mkdir(parents=True, exist_ok=True)
    store = EventStore(env=sqlite_env(settings.store_path, settings.lock_timeout))
    datastore = SQLiteDatastore(str(settings.projections_path),
                                lock_timeout=settings.lock_timeout)
    try:
        view = SQLiteBilanView(datastore)
        view.create_table()
        name = BilanProjection.tracking_name_of(V1)
        if (view.max_tracking_id(name) or 0) > store.head():
            # The view outlived its store (the store file was replaced or deleted): its
            # figures describe events that are not there. It is derived data: rebuild it.
            log.warning("projection %s is past the store's head: rebuilding it", name)
            view.reset(name)
        recorded = _projection_settings(view, name, settings)
        settings = replace(settings, fuseau=recorded.fuseau, journal=Path(recorded.journal))
        projection = BilanProjection(view, ZoneInfo(recorded.fuseau), V1)
        runner = CatchUpRunner(store.recorder, store.mapper, projection,
                               journal=JournalFollower(view, Path(recorded.journal)),
                               poll_interval=settings.poll_interval)
        store.on_append(runner.wake)
        if run_projections:
            runner.start()
        try:
            yield Services(settings, store, projection, runner)
        finally:
            runner.stop()
    finally:
        datastore.close()
        store.close()
