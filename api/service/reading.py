"""Reading the bilan from Python, without a server: what MIAM's ``bilan`` tool and its
dashboard card call (``economies_section``, ``net_du_jour``; ``read_bilan`` for the whole
snapshot; ``read_session`` for one Claude Code session).

MIAM runs in its own process over the same data directory (``logs/mcp``). These functions
open the store and the projections, fold whatever the projection has not seen yet (so the
figures are current even when no server runs), read the snapshot, and close everything.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from miam_economies.api.service.answers import bilan_answer, classement_answer
from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.results import BilanLu, ClassementLu
from miam_economies.api.service.session_answers import SessionLu, session_answer
from miam_economies.api.service.settings import DEFAULT_DATA, Settings, machine_fuseau
from miam_economies.domain.breakdowns import check_bounds
from miam_economies.domain.classement import DEFAULT_MIN, SELON, check_parametres
from miam_economies.domain.formulas import V1
from miam_economies.domain.instants import iso_utc
from miam_economies.domain.known_names import check_dimension
from miam_economies.projections.view import BilanSnapshot

log = logging.getLogger(__name__)


def locked(position: int, tete: int | None) -> None:
    """Log that the figures were read as they stand, at ``position`` (of the store's head
    ``tete`` when known), the projections being locked by another process (ADR-0104)."""
    where = f"position {position:,}" + ("" if tete is None else f" of tete {tete:,}")
    log.warning("the projections are locked by another process: the figures are read as "
                "they stand (%s), not caught up", where)


def read_bilan(data: Path | str = DEFAULT_DATA, *, par: str | None = None,
               depuis: str | None = None, jusqu_au: str | None = None,
               fuseau: str | None = None, journal: Path | str | None = None,
               catch_up: bool = True, database_url: str | None = None,
               lock_timeout: int = 5, puis: str | None = None) -> dict[str, Any]:
    """The bilan of data directory ``data`` (or of ``database_url``: ``api.store.backends``), as
    ``GET /economies/bilan`` gives it (``answers.bilan_answer`` of ``bilan_lu``).

    ``par``, ``puis``, ``depuis``, ``jusqu_au``: the breakdown (``puis`` splits each group
    of ``par``: ADR-0133) and its day bounds (``YYYY-MM-DD``, inclusive), as the HTTP
    query; ``fuseau``: IANA zone the days are cut in (default:
    the projection's, or the machine's for a new one); ``journal``: MIAM's
    ``delegations.jsonl`` (default ``data/delegations.jsonl``); ``catch_up``: fold pending
    events and journal lines first, else read the snapshot as it stands (opening the
    projections file still creates its tables and records its settings the first time);
    ``lock_timeout``: seconds to wait for a database's lock. When another process holds
    the projections' write lock past it, the snapshot is read as it stands and
    ``provenance.attente_expiree`` is true, as after an expired ``?attendre=1``
    (ADR-0104).

    A directory without a store gives the empty bilan and creates nothing. Raises
    ``ZoneInfoNotFoundError`` for an unknown zone, ``projections.view.ProjectionMismatch``
    when the view was built with another explicit zone or journal, ``BoundsError`` (a
    ``ValueError``) for unsound breakdown parameters, ``PersistenceError`` when a
    database fails.
    """
    return bilan_answer(bilan_lu(data, par=par, depuis=depuis, jusqu_au=jusqu_au,
                                 fuseau=fuseau, journal=journal, catch_up=catch_up,
                                 database_url=database_url, lock_timeout=lock_timeout,
                                 puis=puis))


def bilan_lu(data: Path | str = DEFAULT_DATA, *, par: str | None = None,
             depuis: str | None = None, jusqu_au: str | None = None,
             fuseau: str | None = None, journal: Path | str | None = None,
             catch_up: bool = True, database_url: str | None = None,
             lock_timeout: int = 5, puis: str | None = None) -> BilanLu:
    """``read_bilan``'s typed result (``results.BilanLu``; ADR-0163): what the CLI's
    table and CSV are made from. Arguments and errors as ``read_bilan``'s."""
    check_bounds(par, depuis, jusqu_au, puis=puis)
    settings = Settings(data=Path(data), fuseau=fuseau,
                        journal=None if journal is None else Path(journal),
                        database_url=database_url, lock_timeout=lock_timeout)
    if not settings.database.exists():
        zone = fuseau or machine_fuseau()
        ZoneInfo(zone)  # the same error for a bad zone, store or not
        empty = BilanSnapshot(V1.name, 0, 0, {}, fuseau=zone, par=par,
                              groupes=None if par is None else {}, puis=puis)
        # No journal read yet: a field cannot be known (ADR-0164), a typo of a built-in can.
        champ_vu = (check_dimension("par", par, None) if par is not None else True) & (
            check_dimension("puis", puis, None) if puis is not None else True)
        return BilanLu(empty, 0, 0, iso_utc(datetime.now(UTC)), champ_vu=champ_vu)
    with open_services(settings, run_projections=False) as services:
        caught_up = services.runner.catch_up_unless_locked() if catch_up else True
        lu = services.bilan(par, depuis, jusqu_au, puis)
    if not caught_up:
        locked(lu.snapshot.position, lu.tete)
        return replace(lu, attente_expiree=True)
    return lu


def net_du_jour(client: str = "claude-code", data: Path | str = DEFAULT_DATA, *,
                fuseau: str | None = None, catch_up: bool = True,
                database_url: str | None = None, lock_timeout: int = 5) -> int:
    """Today's net for ``client``, tokens (0 when nothing today): MIAM's dashboard card.

    "Today" is the current day in the zone the projection's days are cut in;
    ``catch_up``, ``database_url`` and ``lock_timeout`` as for ``read_bilan`` (projections
    locked by another process: today's net as it stands, logged). Raises as
    ``read_bilan``.
    """
    settings = Settings(data=Path(data), fuseau=fuseau, database_url=database_url,
                        lock_timeout=lock_timeout)
    if not settings.database.exists():
        return 0
    with open_services(settings, run_projections=False) as services:
        if catch_up and not services.runner.catch_up_unless_locked():
            locked(services.projection.position(), services.store.head())
        today = datetime.now(services.projection.zone).date().isoformat()
        lu = services.bilan("jour", today, today)
    figures = lu.cellule(today, client)
    return 0 if figures is None else figures.net


def economies_section(data: Path | str = DEFAULT_DATA, *, par: str | None = None,
                      depuis: str | None = None, jusqu_au: str | None = None,
                      fuseau: str | None = None, journal: Path | str | None = None,
                      catch_up: bool = True, database_url: str | None = None,
                      lock_timeout: int = 5, puis: str | None = None) -> dict[str, Any]:
    """The section MIAM's ``bilan`` tool adds to its answer (contract, point 4):
    ``{"economies": {"<client>": {"delegations", "evites", "pilotage", "corrections",
    "net", "taux_reprise", "anomalies", "conflits"}}}``, figures in tokens
    (``taux_reprise`` a ratio, null when evites <= 0), and with ``par`` (a breakdown, as
    ``read_bilan``'s: ``jour``, ``modele``, ``demande``, ``preset``, ``format``...) also
    ``"par"`` and ``"groupes": {"<key>": {"<client>": figures}}`` (with ``puis``, also
    ``"puis"``, each group split: ``{"<key>": {"<key of puis>": {"<client>": figures}}}``);
    under a weighted formula every figures has its ``en_usd`` (ADR-0130).

    No store in ``data`` gives ``{"economies": {}}`` ("Fichier absent : section à zéro").
    The arguments and errors are ``read_bilan``'s.
    """
    bilan = read_bilan(data, par=par, depuis=depuis, jusqu_au=jusqu_au, fuseau=fuseau,
                       journal=journal, catch_up=catch_up, database_url=database_url,
                       lock_timeout=lock_timeout, puis=puis)
    section: dict[str, Any] = {"economies": bilan["economies"]}
    if par is not None:
        section["par"] = bilan["par"]
        if puis is not None:
            section["puis"] = puis
        section["groupes"] = bilan["groupes"]
    return section


def read_session(session_id: str, data: Path | str = DEFAULT_DATA, *,
                 fuseau: str | None = None, catch_up: bool = True,
                 database_url: str | None = None, lock_timeout: int = 5
                 ) -> dict[str, Any] | None:
    """Claude Code session ``session_id`` of data directory ``data`` (or of
    ``database_url``), as ``GET /economies/sessions/{session_id}`` gives it
    (``session_answers.session_answer``; SPEC, "A session"; ADR-0176): ``{"session_id",
    "economies": the plugin's figures of its events, "claude": what its merged replies
    cost or None, "part_economisee": net / (claude.cout + net) or None,
    "rapprochement": one entry per subagent with a pilotage}``, tokens but the ratios.

    None when neither source has seen the session (the route's 404), and for a
    directory without a store (which it does not create). ``fuseau``, ``catch_up``,
    ``database_url`` and ``lock_timeout`` as for ``read_bilan`` (projections locked
    past it: the session as it stands, logged). Raises as ``read_bilan``.
    """
    lu = session_lu_of(session_id, data, fuseau=fuseau, catch_up=catch_up,
                       database_url=database_url, lock_timeout=lock_timeout)
    return None if lu is None else session_answer(lu)


def session_lu_of(session_id: str, data: Path | str = DEFAULT_DATA, *,
                  fuseau: str | None = None, catch_up: bool = True,
                  database_url: str | None = None, lock_timeout: int = 5
                  ) -> SessionLu | None:
    """``read_session``'s typed result (``session_answers.SessionLu``): what the CLI's
    text is made from. Arguments, None and errors as ``read_session``'s."""
    settings = Settings(data=Path(data), fuseau=fuseau, database_url=database_url,
                        lock_timeout=lock_timeout)
    if not settings.database.exists():
        ZoneInfo(fuseau or machine_fuseau())  # the same error for a bad zone, store or not
        return None
    with open_services(settings, run_projections=False) as services:
        if catch_up and not services.runner.catch_up_unless_locked():
            locked(services.projection.position(), services.store.head())
        return services.session(session_id)


def read_classement(data: Path | str = DEFAULT_DATA, *, par: str = "preset",
                    minimum: int = DEFAULT_MIN, selon: str = SELON,
                    apparier: str | None = None, depuis: str | None = None,
                    jusqu_au: str | None = None, fuseau: str | None = None,
                    journal: Path | str | None = None, catch_up: bool = True,
                    database_url: str | None = None, lock_timeout: int = 5
                    ) -> dict[str, Any]:
    """The classement of data directory ``data`` (or of ``database_url``), as
    ``GET /economies/classement`` gives it (``answers.classement_answer`` of
    ``classement_lu``): which preset (or format, client...) is ahead by the taux de
    reprise (``selon="taux"``) or net per demande (``"net"``), the verdict of every pair
    of ranked groups ("a ahead of b" or "can't tell yet"), compared on the tasks both ran
    when ``apparier`` names the journal field of a task (SPEC, "Ranking presets: the
    classement"; ADR-0081).

    ``par``: ``client`` or a journal field (default ``preset``); ``minimum``: demandes a
    group needs to be ranked (``min`` on the wire, default ``DEFAULT_MIN``); ``depuis``
    and ``jusqu_au`` (``YYYY-MM-DD``, inclusive) keep the demandes whose delegation's day
    is within them (ADR-0167); the other
    arguments as ``read_bilan``'s (projections locked past ``lock_timeout``, seconds: the
    classement as it stands, with ``"attente_expiree": true``). No store in ``data`` gives
    a classement without groups and creates nothing. Raises ``ClassementError`` (a
    ``ValueError``) for parameters the SPEC refuses, and as ``read_bilan``.
    """
    return classement_answer(classement_lu(
        data, par=par, minimum=minimum, selon=selon, apparier=apparier, depuis=depuis,
        jusqu_au=jusqu_au, fuseau=fuseau, journal=journal, catch_up=catch_up,
        database_url=database_url, lock_timeout=lock_timeout))


def classement_lu(data: Path | str = DEFAULT_DATA, *, par: str = "preset",
                  minimum: int = DEFAULT_MIN, selon: str = SELON,
                  apparier: str | None = None, depuis: str | None = None,
                  jusqu_au: str | None = None, fuseau: str | None = None,
                  journal: Path | str | None = None, catch_up: bool = True,
                  database_url: str | None = None, lock_timeout: int = 5
                  ) -> ClassementLu:
    """``read_classement``'s typed result (``results.ClassementLu``; ADR-0163): what the
    CLI's table and CSV are made from. Arguments and errors as ``read_classement``'s."""
    check_parametres(par, selon, apparier, minimum, depuis, jusqu_au)
    settings = Settings(data=Path(data), fuseau=fuseau,
                        journal=None if journal is None else Path(journal),
                        database_url=database_url, lock_timeout=lock_timeout)
    if not settings.database.exists():
        ZoneInfo(fuseau or machine_fuseau())  # the same error for a bad zone, store or not
        champ_vu = check_dimension("par", par, None, ("client",)) & (
            check_dimension("apparier", apparier, None, ()) if apparier is not None
            else True)
        return ClassementLu(par, V1.name, 0, minimum, selon, [], [], 0, apparier,
                            champ_vu=champ_vu, depuis=depuis, jusqu_au=jusqu_au)
    with open_services(settings, run_projections=False) as services:
        caught_up = services.runner.catch_up_unless_locked() if catch_up else True
        lu = services.classement(par, minimum, selon, apparier, depuis, jusqu_au)
    if not caught_up:
        locked(lu.position, None)
        return replace(lu, attente_expiree=True)
    return lu
