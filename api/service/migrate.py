"""``miam-economies migrate``: copy an event store to another backend, then rebuild the bilan
there by replay (ADR-0031).

Stored events are copied as they are stored (originator id, version, topic and state
bytes), so each event's id, payload and ``recu_le`` arrive unchanged, conflicts
(``ConflitRecu``) included, in the source's order. A stream already in the target is
skipped, so a second run copies nothing and an interrupted run resumes. The projection
that serves the source is then built in the target under the same name and settings
(formula, zone, journal; a user's price table: ADR-0131) by replaying the target's store,
and its figures are compared with the source's.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast
from uuid import UUID

from eventsourcing.persistence import IntegrityError, StoredEvent

from miam_economies.api.service.answers import bilan_answer
from miam_economies.api.service.bootstrap import open_services, open_store, open_view
from miam_economies.api.service.serving import build_projection
from miam_economies.api.service.settings import Settings
from miam_economies.api.store.application import SAVE_ATTEMPTS, EventStore, StoreUnavailable
from miam_economies.api.store.backends import Database
from miam_economies.domain.errors import MiamEconomiesError

PAGE = 2_000
"""Stored events read from the source, checked and inserted per transaction."""

BREAKDOWNS = (None, "client", "jour", "modele", "demande")
"""The readings compared between source and target once the target is rebuilt."""

Progress = Callable[[str, int, int], None]
"""Called with (stage: ``copy`` or ``replay``, done, total)."""


class MigrationMismatch(MiamEconomiesError):
    """The target's bilan differs from the source's after the migration (a bug: the copy
    keeps every stored byte and the projection is the same code)."""


@dataclass(frozen=True)
class Migration:
    """What a migration did: ``copies`` events copied, ``deja`` already in the target,
    ``projection`` the name rebuilt in the target and its ``evenements`` folded;
    ``en_plus``: events the target holds that the source does not (appended there since
    a first migration); the bilans are compared only when it is 0."""

    copies: int
    deja: int
    projection: str
    evenements: int
    en_plus: int = 0


def copy_events(source: EventStore, target: EventStore,
                progress: Callable[[int, int], None] | None = None,
                page: int = PAGE) -> tuple[int, int]:
    """Copy the stored events of ``source`` that ``target`` lacks, in source order,
    ``page`` per transaction; return (copied, already there). ``progress(done, total)``
    after each page, in source notification ids. Raises ``StoreUnavailable`` when the
    target keeps losing races to other writers, ``PersistenceError`` otherwise."""
    head = source.head()
    position = copied = already = 0
    while position < head:
        notifications = source.recorder.select_notifications(
            position + 1, min(page, head - position), inclusive_of_start=True)
        if not notifications:
            break
        for _ in range(SAVE_ATTEMPTS):
            present = target.stored([cast(UUID, n.originator_id) for n in notifications])
            new = [StoredEvent(n.originator_id, n.originator_version, n.topic, n.state)
                   for n in notifications if n.originator_id not in present]
            try:
                if new:
                    target.recorder.insert_events(new)
                break
            except IntegrityError:
                continue  # a writer of the target stored one of them meanwhile
        else:
            raise StoreUnavailable(f"lost the race to other writers {SAVE_ATTEMPTS} times")
        copied += len(new)
        already += len(notifications) - len(new)
        position = notifications[-1].id
        if progress is not None:
            progress(position, head)
    return copied, already


def migrate(data: Path, source_url: str, target_url: str,
            progress: Progress | None = None, lock_timeout: int = 5) -> Migration:
    """Copy the store at ``source_url`` into ``target_url`` (``copy_events``), build the
    source's serving projection in the target and make it serve there, then check that
    every reading of the bilan (``BREAKDOWNS``) is the same on both sides.

    ``data``: the data directory (its journal is the default one both sides join).
    When the target holds events the source does not (it has served since a first
    migration), the copy still happens but the bilans are not compared.
    Raises ``ValueError`` for a bad URL or the same database twice, ``MigrationMismatch``
    when the bilans differ, ``StoreUnavailable``/``PersistenceError`` from the stores,
    ``ProjectionMismatch`` from the target's view.
    """
    source_db, target_db = Database.parse(source_url), Database.parse(target_url)
    if str(source_db) == str(target_db):
        raise ValueError("--from and --to name the same database")
    if not source_db.exists():
        raise ValueError(f"no event store at {source_db}")
    settings = Settings(data=data, lock_timeout=lock_timeout)
    source_settings = replace(settings, database_url=source_url)
    target_settings = replace(settings, database_url=target_url)

    def stage(name: str) -> Callable[[int, int], None] | None:
        if progress is None:
            return None
        return lambda done, total: progress(name, done, total)

    # The source's serving projection, caught up: the reference the target must match.
    with open_services(source_settings, run_projections=False) as source:
        source.runner.catch_up()
        name = source.projection.tracking_name
        recorded = source.projection.view.settings_of(name)
        assert recorded is not None
        # A user's price table travels with the projection built on it (ADR-0131).
        prices = source.projection.view.recorded_formula(recorded.formule)
        with closing(open_store(target_db, lock_timeout)) as target:
            copied, already = copy_events(source.store, target, stage("copy"))
            view, datastore = open_view(target_db, lock_timeout)
            try:
                if prices is not None:
                    view.record_formula(prices)
                view.record_settings(name, recorded)
                active = view.active()
                built = build_projection(target, view, name, stage("replay"), data=data)
                if active != name:
                    view.activate(name, expected=active)
                evenements = built.snapshot().evenements
            finally:
                datastore.close()
        with open_services(target_settings, run_projections=False) as target_services:
            target_services.runner.catch_up()
            extra = _stored(target_services) - _stored(source)
            if extra == 0:  # else the target took traffic of its own: nothing to match
                _compare(source, target_services)
    return Migration(copied, already, name, evenements, max(extra, 0))


def _stored(services: Any) -> int:
    head = services.store.head()
    return int(services.store.count_up_to(head, head))


def _figures(bilan: dict[str, Any]) -> dict[str, Any]:
    # Everything but when and where it was read.
    return {k: v for k, v in bilan.items() if k not in ("provenance", "position")} | {
        "evenements": bilan["provenance"]["evenements"], "fuseau": bilan["provenance"]["fuseau"]}


def _compare(source: Any, target: Any) -> None:
    """Raise ``MigrationMismatch`` unless both services give the same bilan readings."""
    for par in BREAKDOWNS:
        one = _figures(bilan_answer(source.bilan(par)))
        other = _figures(bilan_answer(target.bilan(par)))
        if one != other:
            raise MigrationMismatch(f"the target's bilan (par={par}) differs from the "
                                    f"source's: {other} != {one}")
