"""Replaying the history: rebuild the bilan under a formula or a zone, compare formulas,
and list the events whose plugin figures disagree with the server's (ADR-0009).

A replay builds a new projection (``bilan:<formule>:<fuseau>``) beside the one that serves,
from the event store, while the server keeps ingesting and serving; once it has caught up
with the store it becomes the active projection in one statement, which the server's
runner follows without restart. Interrupted, it resumes from its own tracking position.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from eventsourcing.persistence import IntegrityError

from api.services import Services, open_services
from api.settings import Settings
from domain.anomalies import anomalies
from domain.events import ConflitRecu, EvenementRecu
from domain.formulas import FORMULES
from projections.bilan import BilanProjection, projection_name
from projections.delta import PageDelta
from projections.journal import JournalFollower
from projections.runner import CatchUpRunner

Progress = Callable[[int, int], None]
"""Called with (events folded, events in the store) as a replay advances."""


class UnknownFormula(ValueError):
    """No formula of that name in ``domain.formulas.FORMULES``."""


def _formule(name: str) -> Any:
    try:
        return FORMULES[name]
    except KeyError:
        raise UnknownFormula(
            f"no formula {name!r}; known: {', '.join(sorted(FORMULES))}") from None


def replay(settings: Settings, formule: str, fuseau: str | None = None,
           progress: Progress | None = None) -> dict[str, Any]:
    """Rebuild the bilan under ``formule`` (and zone ``fuseau``, default the active one),
    then make it the one that serves; return ``{"projection", "evenements", "active"}``.

    Raises ``UnknownFormula``, ``ZoneInfoNotFoundError``, and the view's or store's
    ``PersistenceError``.
    """
    formula = _formule(formule)
    with open_services(_following(settings), run_projections=False) as services:
        view, store = services.projection.view, services.store
        active = services.projection.tracking_name
        current = view.settings_of(active)
        assert current is not None
        zone = fuseau or current.fuseau
        ZoneInfo(zone)
        name = projection_name(formula.name, zone)
        wanted = replace(current, fuseau=zone, formule=formula.name,
                         fuseau_explicite=current.fuseau_explicite or fuseau is not None)
        view.record_settings(name, wanted)
        if (view.max_tracking_id(name) or 0) > store.head():
            view.reset(name)
        projection = BilanProjection(view, ZoneInfo(zone), formula)
        runner = CatchUpRunner(store.recorder, store.mapper, projection,
                               journal=JournalFollower(view, Path(wanted.journal)))
        while True:
            head = store.head()
            while projection.position() < head:
                try:
                    runner.fold_page()
                except IntegrityError:
                    continue  # another runner folded this page
                if progress is not None:
                    progress(projection.position(), store.head())
            while runner.journal is not None and runner.journal.follow():
                pass
            if projection.position() >= store.head():
                break  # caught up: appends after this are the live runner's to fold
        view.activate(name)
        return {"projection": name, "evenements": projection.snapshot().evenements,
                "active": name}


def _following(settings: Settings) -> Settings:
    # These commands work on the active projection whatever zone they were given.
    return replace(settings, fuseau=None)


def _stored_events(services: Services, page: int = 500) -> Iterator[EvenementRecu]:
    """Every stored event, in store order, a page at a time."""
    recorder, mapper = services.store.recorder, services.store.mapper
    position = 0
    while notifications := recorder.select_notifications(start=position + 1, limit=page):
        for n in notifications:
            yield mapper.to_domain_event(n)
        position = notifications[-1].id


def compare(settings: Settings, formules: list[str], par: str = "client") -> dict[str, Any]:
    """Fold the whole store in memory under each of ``formules`` and return their figures
    side by side: ``{"par", "fuseau", "groupes": {key: {client: {formule: figures}}}}``
    for ``par`` in ``client``, ``jour``, ``modele``. A dry run: nothing is written.

    Raises ``UnknownFormula`` and ``ValueError`` for another ``par``.
    """
    if par not in ("client", "jour", "modele"):
        raise ValueError(f"compare par client, jour or modele, not {par!r}")
    formulas = [_formule(name) for name in formules]
    with open_services(_following(settings), run_projections=False) as services:
        zone = services.projection.zone
        deltas = [PageDelta(f, zone) for f in formulas]
        for stored in _stored_events(services):
            evenement = stored.evenement()
            for delta in deltas:
                if isinstance(stored, ConflitRecu):
                    delta.add_conflit(evenement)
                else:
                    delta.add(evenement)
    groupes: dict[str, dict[str, dict[str, Any]]] = {}
    for formula, delta in zip(formulas, deltas, strict=True):
        if par == "client":
            cells = {(c, c): f.as_dict() for c, f in delta.clients.items()}
        elif par == "jour":
            cells = {(j, c): f.as_dict() for (c, j), f in delta.jours.items()}
        else:
            cells = {(m, c): f.as_dict(m) for (c, m), f in delta.modeles.items()}
        for (key, client), figures in cells.items():
            groupes.setdefault(key, {}).setdefault(client, {})[formula.name] = figures
    return {"par": par, "fuseau": str(zone), "formules": [f.name for f in formulas],
            "groupes": {k: groupes[k] for k in sorted(groupes)}}


def list_anomalies(settings: Settings) -> Iterator[dict[str, Any]]:
    """Every stored event whose plugin figures disagree with the server's recomputation:
    ``{"id", "type", "client", "anomalies": [kinds], "recu_le"}``, in store order."""
    with open_services(_following(settings), run_projections=False) as services:
        for stored in _stored_events(services):
            if isinstance(stored, ConflitRecu):
                continue
            evenement = stored.evenement()
            kinds = anomalies(evenement)
            if kinds:
                yield {"id": evenement.id, "type": evenement.type,
                       "client": evenement.client, "anomalies": list(kinds),
                       "recu_le": stored.recu_le}
