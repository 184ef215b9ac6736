"""Replaying the history: rebuild the bilan under a formula or a zone, compare formulas,
and list the events whose plugin figures disagree with the server's (ADR-0009).

A replay builds a new projection (``bilan:<formule>:<fuseau>``) beside the one that serves,
from the event store, while the server keeps ingesting and serving; once it has caught up
with the store it becomes the active projection in one statement, which the server's
runner follows without restart. Interrupted, it resumes from its own tracking position.
With a price file, the formula is the user's: its table is recorded in the view under its
name, with the file's checksum, before the replay starts (ADR-0131).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from eventsourcing.persistence import PersistenceError

from miam_economies.api.service.bootstrap import open_services, open_store, open_view
from miam_economies.api.service.export import stored_events
from miam_economies.api.service.formules import (
    UnknownFormula,
    check_same_file,
    check_user_name,
    price_file_bytes,
    to_record,
    unknown_formula,
    unpriced,
    user_formula,
)
from miam_economies.api.service.serving import REPLAY_PAGE, REPLAY_READ, build_projection
from miam_economies.api.service.settings import Settings, machine_fuseau
from miam_economies.domain.anomalies import anomaly_values
from miam_economies.domain.bilan import Jours
from miam_economies.domain.errors import MiamEconomiesError
from miam_economies.domain.events import ConflitRecu
from miam_economies.domain.formulas import FORMULES, Formule
from miam_economies.domain.instants import iso_utc
from miam_economies.domain.releves_events import ReleveRecu
from miam_economies.domain.tarifs_fichier import FormuleEnregistree, lire
from miam_economies.projections.collector import collector_paused
from miam_economies.projections.formula_figures import FormulaFigures
from miam_economies.projections.projection import projection_name
from miam_economies.projections.sql_view import SqlBilanView

Progress = Callable[[int, int], None]
"""Called with (events folded, events in the store) as a replay advances."""


__all__ = ["ReplayRefused", "UnknownFormula", "compare", "list_anomalies", "replay",
           "replay_formula"]


def replay_formula(settings: Settings, formule: str, tarifs: Path | None = None
                   ) -> tuple[Formule, FormuleEnregistree | None]:
    """The formula a replay under ``formule`` folds with, and what to record first (None
    when nothing is to be recorded), checked against the view opened read-only: nothing
    is written. Without ``tarifs``, a built-in formula or a recorded user formula. With
    ``tarifs`` (a price file): the file recorded under that name (its checksum) is the
    recorded formula, as recorded; another is read and checked, then the name: not a
    built-in one (``check_user_name``), and not recorded from another file; ADR-0131,
    ADR-0162. Raises ``UnknownFormula``,
    ``FormulaRefused``, ``TarifsError``, ``PriceFileUnreadable``, ``PersistenceError``."""
    if tarifs is None:
        return _named_formula(settings, formule), None
    data = price_file_bytes(tarifs)
    recorded = _recorded(settings, formule)
    if recorded is not None and recorded.sha256 == hashlib.sha256(data).hexdigest():
        # The file recorded, again: its table is the formula, as recorded, even if a rule
        # added since would refuse the file (ADR-0162's unknown models).
        return user_formula(recorded), None
    prix = lire(data, tarifs.name)
    check_user_name(formule)
    if recorded is not None:
        check_same_file(recorded, prix.sha256, prix.fichier)
        return user_formula(recorded), None
    record = to_record(formule, prix, iso_utc(datetime.now(UTC)))
    return user_formula(record), record


@contextmanager
def _existing_view(settings: Settings) -> Iterator[SqlBilanView | None]:
    """The view of ``settings.database`` opened without creating or writing anything, or
    None when there is none (SQLite: no projections file yet)."""
    database = settings.database
    if not database.is_postgres and not database.projections_path.exists():
        yield None
        return
    view, datastore = open_view(database, settings.lock_timeout, create=False)
    try:
        yield view
    finally:
        datastore.close()


def _recorded(settings: Settings, name: str) -> FormuleEnregistree | None:
    """User formula ``name`` as the view records it, read-only; None when the view, or
    its registry (a view from before ADR-0131), is not there yet."""
    with _existing_view(settings) as view:
        if view is None:
            return None
        try:
            return view.recorded_formula(name)
        except PersistenceError as exc:
            if "bilan_formules" in str(exc):
                return None
            raise


def _named_formula(settings: Settings, name: str) -> Formule:
    """Formula ``name``: built in, or a user formula recorded in the view (read-only).
    Raises ``UnknownFormula``, naming the recorded ones too."""
    builtin = FORMULES.get(name)
    if builtin is not None:
        return builtin
    recorded = _recorded(settings, name)
    if recorded is None:
        raise unknown_formula(name, _recorded_names(settings))
    return user_formula(recorded)


def _recorded_names(settings: Settings) -> list[str]:
    """The user formulas' names the view records, read-only; none when the view, or its
    registry (a view from before ADR-0131), is not there yet."""
    with _existing_view(settings) as view:
        if view is None:
            return []
        try:
            return view.recorded_formulas()
        except PersistenceError as exc:
            if "bilan_formules" in str(exc):
                return []
            raise


class ReplayRefused(MiamEconomiesError, ValueError):
    """A replay that would expose a half-built bilan (rebuilding the one that serves)."""


def replay(settings: Settings, formule: str, fuseau: str | None = None,
           progress: Progress | None = None, *, reconstruire: bool = False,
           page_size: int = REPLAY_PAGE, tarifs: Path | None = None) -> dict[str, Any]:
    """Build the bilan under ``formule`` (and zone ``fuseau``, default the active one)
    beside the one that serves, then make it the one that serves; return
    ``{"projection", "evenements", "active", "prix"}`` (``active`` is another name if a
    concurrent replay switched first: then this one does not switch; ``prix``: the user
    formula's ``{"fichier", "sha256"}``, else None).

    ``tarifs``: a price file, whose table is recorded under ``formule`` (a new name, or
    one recorded from the same file) before anything else is written (``replay_formula``;
    ADR-0131). Every refusal comes before any write.

    An existing projection of that name resumes from its position, unless
    ``reconstruire`` (then it is rebuilt from the first event; not for the active one).
    ``page_size``: events folded per view transaction (ADR-0011). ``non_tarifes``:
    ``{"modeles", "reference"}``, the store's models (those of its pilotages) the
    formula's table does not price, which weigh as its reference model (ADR-0162); None
    under a formula of token counts.
    Raises ``UnknownFormula``, ``FormulaRefused``, ``TarifsError``,
    ``PriceFileUnreadable``, ``ReplayRefused``, ``ZoneInfoNotFoundError`` or
    ``ValueError`` for a bad zone, ``ProjectionMismatch``, and ``PersistenceError``.
    """
    formula, record = replay_formula(settings, formule, tarifs)
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
        if record is not None:
            # Two replays recording one name from two files at once: the first wins.
            check_same_file(view.record_formula(record), record.sha256, record.fichier)
        view.record_settings(name, replace(
            current, fuseau=zone, formule=formula.name,
            fuseau_explicite=current.fuseau_explicite or fuseau is not None))
        if reconstruire:
            view.reset(name)
        projection = build_projection(store, view, name, progress, page_size,
                                      data=settings.data)
        switched = name == active or view.activate(name, expected=active)
        prix = formula.prix
        return {"projection": name, "evenements": projection.snapshot().evenements,
                "active": name if switched else view.active(),
                "prix": ({"fichier": prix.fichier, "sha256": prix.sha256}
                         if prix is not None and prix.sha256 is not None else None),
                "non_tarifes": unpriced(formula, view.snapshot(name, formula.name,
                                                                par="modele").groupes)}


def _following(settings: Settings) -> Settings:
    # These commands work on the active projection whatever zone they were given.
    return replace(settings, fuseau=None)


def _active_zone(settings: Settings) -> str:
    """The zone of the projection that serves, read through its view without creating or
    writing anything (else the given or the machine's zone: it only cuts days)."""
    recorded = None
    with _existing_view(settings) as view:
        if view is not None:
            try:
                active = view.active()
                recorded = view.settings_of(active) if active is not None else None
            except PersistenceError:
                recorded = None  # no view yet, or an older one: fall back
    return recorded.fuseau if recorded is not None else settings.fuseau or machine_fuseau()


def compare(settings: Settings, formules: list[str], par: str = "client") -> dict[str, Any]:
    """Fold the whole store under each of ``formules`` and return their figures side by
    side: ``{"par", "fuseau", "formules", "groupes": {key: {client: {formule:
    figures}}}, "non_tarifes": {formule: {"modeles", "reference"}}}`` for ``par`` in
    ``client``, ``jour``, ``modele``, days cut in the active projection's zone;
    ``non_tarifes`` gives, for each weighted formula, the store's models its table does
    not price and the reference they weigh as (ADR-0162). A formula
    is built in or a user's recorded by ``replay --tarifs``, read from the view
    (ADR-0131). A dry run: it opens the store and the view read-only and writes
    nothing anywhere. It reads the store once; memory holds one read of events (5,000)
    and a row of sums per (client, day) and per (client, model), not per event
    (ADR-0180).

    Raises ``UnknownFormula`` and ``ValueError`` for another ``par``.
    """
    if par not in ("client", "jour", "modele"):
        raise ValueError(f"compare par client, jour or modele, not {par!r}")
    if not formules:
        raise UnknownFormula(f"name at least one formula: {', '.join(sorted(FORMULES))}")
    formulas = [_named_formula(settings, name) for name in formules]
    zone = ZoneInfo(_active_zone(settings))
    days = Jours(zone)
    # Only the sums the answer shows, per client and day and per client and model, every
    # formula's side by side: memory grows with the days, not the events (ADR-0180).
    fold = FormulaFigures(formulas, days)
    with closing(open_store(settings.database, read_only=True)) as store:
        head, position = store.head(), 0
        while position < head:  # the store up to its head when the comparison began
            # A read's values are freed by reference counting: the cyclic collector
            # would only walk them, over and over (as a replay's pages, ADR-0062).
            with collector_paused():
                page = store.read(position + 1, min(REPLAY_READ, head - position))
                if not page:
                    break
                # Ids may have gaps (PostgreSQL): what was appended since is left out.
                fold.add_all([value for n, value in page if n <= head])
            position = page[-1][0]
    groupes: dict[str, dict[str, dict[str, Any]]] = {}
    for k, formula in enumerate(formulas):
        if par == "client":
            cells = {(c, c): f.as_dict() for c, f in fold.clients(k).items()}
        elif par == "jour":
            cells = {(j, c): f.as_dict() for (c, j), f in fold.jours(k).items()}
        else:
            cells = {(m, c): f.as_dict(m) for (c, m), f in fold.modeles(k).items()}
        for (key, client), figures in cells.items():
            groupes.setdefault(key, {}).setdefault(client, {})[formula.name] = figures
    modeles = {m for _, m in fold.modeles(0)}
    return {"par": par, "fuseau": str(zone), "formules": [f.name for f in formulas],
            # Sorted at both levels: the clients of a day or model too, whatever the order
            # the store holds them in.
            "groupes": {k: {c: groupes[k][c] for c in sorted(groupes[k])}
                        for k in sorted(groupes)},
            "non_tarifes": {f.name: unpriced(f, modeles) for f in formulas
                            if f.prix is not None}}


def list_anomalies(settings: Settings) -> Iterator[dict[str, Any]]:
    """Every stored event whose plugin figures disagree with the server's recomputation:
    ``{"id", "type", "client", "anomalies": [kinds], "valeurs": {kind: {"plugin",
    "serveur"}}, "recu_le"}`` (``domain.anomalies.anomaly_values``: the two values of
    each kind), in store order. Reads the store only."""
    with closing(open_store(settings.database, read_only=True)) as store:
        for stored in stored_events(store):
            if isinstance(stored, ConflitRecu | ReleveRecu):
                continue  # no plugin figures: a differing version, or Claude's own
            try:
                evenement = stored.evenement()
            except (KeyError, TypeError, ValueError):
                continue  # no event of schema 1: the folds set it aside (ADR-0135)
            found = anomaly_values(evenement)
            if found:
                yield {"id": evenement.id, "type": evenement.type,
                       "client": evenement.client, "anomalies": list(found),
                       "valeurs": found, "recu_le": stored.recu_le}
