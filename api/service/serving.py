"""Which projection serves the bilan, and building one before it serves (ADR-0008,
ADR-0009): the policy the composition root, replay and migrate share.

A projection is a (formula, zone) pair folded from the whole store (``projection_name``).
The first opening records its settings; later ones follow them, refuse a contradicting
explicit setting, or build the projection in a newly asked zone before switching to it,
so no reader ever sees one half-built.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import suppress
from dataclasses import replace
from pathlib import Path
from zoneinfo import ZoneInfo

from eventsourcing.persistence import IntegrityError

from miam_economies.api.service.formules import formula_for
from miam_economies.api.service.settings import Settings, machine_fuseau
from miam_economies.api.store.application import EventStore
from miam_economies.domain.formulas import V1
from miam_economies.projections.journal import DATA_JOURNAL, JournalFollower, journal_file
from miam_economies.projections.projection import BilanProjection, projection_name
from miam_economies.projections.runner import CatchUpRunner, rebuild, same_source
from miam_economies.projections.view import BilanView, ProjectionMismatch, ProjectionSettings

log = logging.getLogger(__name__)

REPLAY_PAGE = 50_000
"""Events folded per view transaction while a projection is built or replayed: 20,000
folded 2x faster than 500 at 300,000 events (``make bench``; ADR-0011); at 1,000,000,
25,000 took a quarter longer than 50,000, and 100,000 was no faster but held 20 MB more
(ADR-0062). Read ``REPLAY_READ`` at a time, so memory holds the page's deltas, not its
events."""

REPLAY_READ = 5_000
"""Events read (and decoded) at a time while a projection is built or replayed."""


def follower(view: BilanView, settings: ProjectionSettings, data: Path) -> JournalFollower:
    """The follower of the journal a projection records (``settings.journal``): the data
    directory ``data``'s own when it was not named explicitly (ADR-0103)."""
    return JournalFollower(view, journal_file(settings.journal, data), settings.journal,
                           settings.journal_explicite)


def build_projection(store: EventStore, view: BilanView, name: str,
                     progress: Callable[[int, int], None] | None = None,
                     page_size: int = REPLAY_PAGE, *, data: Path) -> BilanProjection:
    """Fold the store into projection ``name`` (settings already recorded) until it has
    reached the store's head, from its own position (so an interrupted build resumes), and
    join the journal (the data directory ``data``'s unless one was named); its
    journal-field groups (with the classement's samples and their sessions) are computed
    once, at the end (``BilanView.rebuild_groups``; ADR-0062), deferred meanwhile unless
    it serves and has folded some events already (ADR-0179), and not at all when it
    serves, this call folded nothing and no earlier build left them deferred (they are
    current: nothing is written); return it. It is not made
    active here. ``progress(done, total)`` is called after each page of ``page_size``
    events. Raises the view's or store's
    ``PersistenceError``.
    """
    settings = view.settings_of(name)
    assert settings is not None, f"no settings recorded for {name}"
    # Built on another store: its first page starts it again (CatchUpRunner.fold_page).
    projection = BilanProjection(view, ZoneInfo(settings.fuseau),
                                 formula_for(view, settings.formule))
    # The journal-field groups are computed once at the end, in one aggregation, rather
    # than joined page by page (the view still folds them if this projection serves,
    # unless it is marked: ADR-0179).
    projection.groupes = False
    # Larger pages than the live runner's: nobody waits for a commit, and a page's events
    # meet in memory before they meet the view's B-trees (ADR-0011).
    runner = CatchUpRunner(store, projection, journal=follower(view, settings, data),
                           page_size=page_size, read_size=min(page_size, REPLAY_READ))
    position = projection.position()
    if position < store.head() and (position == 0 or view.active() != name):
        # Pages and journal lines leave the groups alone, even those of the serving one
        # built from its first event (it has none to serve yet): they are computed once
        # at the end. Killed before, the build rebuilds them when run again, and the
        # live runner once the mark has been left alone (ADR-0179).
        view.defer_groups(name)
    folded = False
    while True:
        while projection.position() < store.head():
            try:
                folded = runner.fold_page() > 0 or folded
            except IntegrityError:
                continue  # another runner folded this page
            if progress is not None:
                progress(projection.position(), store.head())
        while runner.journal is not None and runner.journal.follow():
            pass
        if projection.position() >= store.head():
            # The one that serves was built before it served, and folds its groups with
            # every page since (the view does, whatever ``groupes``, unless a build
            # marked it; a journal's lines join every projection's but the marked):
            # with no page folded here and no mark, a rebuild would only write them
            # again, and a caught-up replay writes nothing.
            if (folded or view.active() != name
                    or view.groups_deferred(name) is not None):
                view.rebuild_groups(name)
            return projection  # appends after this are the live runner's to fold


def open_active(view: BilanView, store: EventStore,
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
    # The journal nobody named is the data directory's wherever it is (ADR-0103).
    journal = DATA_JOURNAL if settings.journal is None else str(settings.journal.resolve())
    active = view.active()
    current = view.settings_of(active) if active is not None else None
    if active is None or current is None:
        fuseau = settings.fuseau or machine_fuseau()
        current = ProjectionSettings(fuseau, journal, settings.fuseau is not None,
                                     settings.journal is not None, V1.name)
        active = projection_name(V1.name, fuseau)
        current = view.record_settings(active, current)
        view.activate(active, expected=None)
    if not current.journal_explicite and current.journal != DATA_JOURNAL:
        # An earlier release recorded the data directory's journal by its absolute path,
        # which goes on naming the old directory's file after a move or a copy.
        log.info("the bilan now joins the data directory's journal, not %s",
                 current.journal)
        view.adopt_data_journal(current.journal)
        current = view.settings_of(active) or current
    recorded = journal_file(current.journal, settings.data).resolve()
    if settings.journal is not None and settings.journal.resolve() != recorded:
        raise ProjectionMismatch(
            f"the bilan is joined with journal {recorded}, not {journal}: pass that "
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
        build_projection(store, view, target, data=settings.data)
        view.activate(target, expected=active)
        active = view.active() or target
        current = view.settings_of(active) or current
    # The view may have outlived its store (a backup restored, another machine's store,
    # the file deleted): its figures then describe events that are not there, whatever
    # the store's length. It is derived data: rebuild it (ADR-0105).
    position, identite = view.source(active)
    if position and not same_source(store, position, identite):
        with suppress(IntegrityError):  # another process saw it first and rebuilds it
            rebuild(view, active, position)
    return current


