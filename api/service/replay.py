"""Replaying the history: rebuild the bilan under a formula or a zone, compare formulas,
and list the events whose plugin figures disagree with the server's (ADR-0009).

A replay builds a new projection (``bilan:<formule>:<fuseau>``) beside the one that serves,
from the event store, while the server keeps ingesting and serving; once it has caught up
with the store it becomes the active projection in one statement, which the server's
runner follows without restart. Interrupted, it resumes from its own tracking position.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import replace
from typing import Any
from zoneinfo import ZoneInfo

from eventsourcing.persistence import PersistenceError

from miam_economies.api.service.bootstrap import open_services, open_store, open_view
from miam_economies.api.service.export import stored_events
from miam_economies.api.service.serving import REPLAY_PAGE, REPLAY_READ, build_projection
from miam_economies.api.service.settings import Settings, machine_fuseau
from miam_economies.domain.anomalies import anomalies
from miam_economies.domain.bilan import Jours
from miam_economies.domain.errors import MiamEconomiesError
from miam_economies.domain.events import ConflitRecu
from miam_economies.domain.formulas import FORMULES
from miam_economies.projections.delta import PageDelta
from miam_economies.projections.projection import projection_name

Progress = Callable[[int, int], None]
"""Called with (events folded, events in the store) as a replay advances."""


class UnknownFormula(MiamEconomiesError, ValueError):
    """No formula of that name in ``domain.formulas.FORMULES``."""


def formula_named(name: str) -> Any:
    """The registered formula ``name``; raises ``UnknownFormula`` naming the known ones."""
    try:
        return FORMULES[name]
    except KeyError:
        raise UnknownFormula(
            f"no formula {name!r}; known: {', '.join(sorted(FORMULES))}") from None


class ReplayRefused(MiamEconomiesError, ValueError):
    """A replay that would expose a half-built bilan (rebuilding the one that serves)."""


def replay(settings: Settings, formule: str, fuseau: str | None = None,
           progress: Progress | None = None, *, reconstruire: bool = False,
           page_size: int = REPLAY_PAGE) -> dict[str, Any]:
    """Build the bilan under ``formule`` (and zone ``fuseau``, default the active one)
    beside the one that serves, then make it the one that serves; return
    ``{"projection", "evenements", "active"}`` (``active`` is another name if a concurrent
    replay switched first: then this one does not switch).

    An existing projection of that name resumes from its position, unless
    ``reconstruire`` (then it is rebuilt from the first event; not for the active one).
    ``page_size``: events folded per view transaction (ADR-0011).
    Raises ``UnknownFormula``, ``ReplayRefused``, ``ZoneInfoNotFoundError`` or
    ``ValueError`` for a bad zone, ``ProjectionMismatch``, and ``PersistenceError``.
    """
    formula = formula_named(formule)
    if fuseau is not None:
        ZoneInfo(fuseau)  # before anything is written
    with open_services(_following(settings), run_projections=False) as services:
        view, store = services.projection.view, services.store
        active = services.projection.tracking_name
        current = view.settings_of(active)
        assert current is not None
        zone = fuseau or current.fuseau
        name = projection_name(formula.name, zone)
        if reconstruire and name == active:
            raise ReplayRefused(
                f"{name} serves the bilan: rebuilding it in place would serve it half-built; "
                "replay into another formula or zone first")
        view.record_settings(name, replace(
            current, fuseau=zone, formule=formula.name,
            fuseau_explicite=current.fuseau_explicite or fuseau is not None))
        if reconstruire:
            view.reset(name)
        projection = build_projection(store, view, name, progress, page_size,
                                      data=settings.data)
        switched = name == active or view.activate(name, expected=active)
        return {"projection": name, "evenements": projection.snapshot().evenements,
                "active": name if switched else view.active()}


def _following(settings: Settings) -> Settings:
    # These commands work on the active projection whatever zone they were given.
    return replace(settings, fuseau=None)


def _active_zone(settings: Settings) -> str:
    """The zone of the projection that serves, read through its view without creating or
    writing anything (else the given or the machine's zone: it only cuts days)."""
    database = settings.database
    if not database.is_postgres and not database.projections_path.exists():
        return settings.fuseau or machine_fuseau()
    view, datastore = open_view(database, settings.lock_timeout, create=False)
    try:
        active = view.active()
        recorded = view.settings_of(active) if active is not None else None
    except PersistenceError:
        recorded = None  # no view yet, or an older one: fall back
    finally:
        datastore.close()
    return recorded.fuseau if recorded is not None else settings.fuseau or machine_fuseau()


def compare(settings: Settings, formules: list[str], par: str = "client") -> dict[str, Any]:
    """Fold the whole store in memory under each of ``formules`` and return their figures
    side by side: ``{"par", "fuseau", "groupes": {key: {client: {formule: figures}}}}``
    for ``par`` in ``client``, ``jour``, ``modele``, days cut in the active projection's
    zone. A dry run: it opens the store read-only and writes nothing anywhere.

    Raises ``UnknownFormula`` and ``ValueError`` for another ``par``.
    """
    if par not in ("client", "jour", "modele"):
        raise ValueError(f"compare par client, jour or modele, not {par!r}")
    if not formules:
        raise UnknownFormula(f"name at least one formula: {', '.join(sorted(FORMULES))}")
    formulas = [formula_named(name) for name in formules]
    zone = ZoneInfo(_active_zone(settings))
    days = Jours(zone)
    deltas = [PageDelta(f, zone, jours_of=days) for f in formulas]
    with closing(open_store(settings.database, read_only=True)) as store:
        head, position = store.head(), 0
        while position < head:  # the store up to its head when the comparison began
            page = store.read(position + 1, min(REPLAY_READ, head - position))
            if not page:
                break
            # Ids may have gaps (PostgreSQL): what was appended since is left out.
            values = [value for n, value in page if n <= head]
            for delta in deltas:
                delta.add_all(values)
            position = page[-1][0]
    groupes: dict[str, dict[str, dict[str, Any]]] = {}
    for formula, delta in zip(formulas, deltas, strict=True):
        if par == "client":
            cells = {(c, c): f.as_dict() for c, f in delta.clients.items()}
        elif par == "jour":
            cells = {(j, c): f.as_dict() for (c, j), f in delta.jours.items()}
        else:
            cells = {(m, c): f.as_dict(m)
                     for (c, m), f in delta.modeles.items()}
        for (key, client), figures in cells.items():
            groupes.setdefault(key, {}).setdefault(client, {})[formula.name] = figures
    return {"par": par, "fuseau": str(zone), "formules": [f.name for f in formulas],
            "groupes": {k: groupes[k] for k in sorted(groupes)}}


def list_anomalies(settings: Settings) -> Iterator[dict[str, Any]]:
    """Every stored event whose plugin figures disagree with the server's recomputation:
    ``{"id", "type", "client", "anomalies": [kinds], "recu_le"}``, in store order. Reads
    the store only."""
    with closing(open_store(settings.database, read_only=True)) as store:
        for stored in stored_events(store):
            if isinstance(stored, ConflitRecu):
                continue
            evenement = stored.evenement()
            kinds = anomalies(evenement)
            if kinds:
                yield {"id": evenement.id, "type": evenement.type,
                       "client": evenement.client, "anomalies": list(kinds),
                       "recu_le": stored.recu_le}
