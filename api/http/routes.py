"""The route handlers (SPEC, "Interfaces"): ``POST /economies`` validates, appends and
acknowledges, nothing else (projection work happens in the runner); the reads answer from
the projection's snapshots. Refusals are raised and answered by ``errors``.
"""

from __future__ import annotations

import time
from dataclasses import replace

from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response

from miam_economies.api.http.body import parse_json, read_capped
from miam_economies.api.http.bounded import within_lock_timeout
from miam_economies.api.http.errors import NotOpen, error_response
from miam_economies.api.http.metrics import METRICS_STATE, Metrics
from miam_economies.api.http.observer import OUTCOME
from miam_economies.api.http.openapi import openapi_document
from miam_economies.api.http.report import render_report
from miam_economies.api.http.representation import represented
from miam_economies.api.service.answers import bilan_answer, classement_answer
from miam_economies.api.service.csv_answers import bilan_csv, classement_csv
from miam_economies.api.service.freshness import folded_up_to
from miam_economies.api.service.services import Services
from miam_economies.api.service.session_answers import ligne, session_answer
from miam_economies.api.store.application import Appended
from miam_economies.domain.acceptance import accept_batch
from miam_economies.domain.breakdowns import check_bounds
from miam_economies.domain.classement import DEFAULT_MIN, SELON, check_parametres, parse_min
from miam_economies.domain.known_names import check_once, check_parameters, wait_asked

STATE = "economies"
"""Key of the ``Services`` in the lifespan state (``request.state.economies``)."""

INLINE_BODY = 16 * 1024
"""Bytes: a POST body up to this size (the plugin's 10-event batch is about 4 KiB; 500
events about 190 KiB) is validated and appended on the event loop when the SQLite store
can take it at once, saving the thread hop (0.2–0.5 ms served; ADR-0118)."""

INLINE_LOCK_WAIT = 0.002
"""Seconds the event loop may wait for SQLite's write lock for such a batch (it is free
unless another process writes the store) before the batch goes to a thread (ADR-0118)."""


def _services(request: Request) -> Services:
    services = getattr(request.state, STATE, None)
    if not isinstance(services, Services):  # absent, or a host's own key of that name
        raise NotOpen("miam-economies is not open in this app: enter "
                      "open_economies(settings, app) in the app's lifespan and merge the state "
                      "it yields under its keys (docs/embedding.md, \"The routes, in "
                      "MIAM's app\")")
    return services


async def post_economies(request: Request) -> JSONResponse:
    """Ingest one batch: 200 ``{"ok": true, "recus": n, "doublons": m}`` once durably stored,
    plus ``"conflits": k`` when k doublons differ from the version kept.

    413 / 408 / 400 / 422 / 503 come from ``EXCEPTION_HANDLERS``; a refused batch stores
    nothing. Once the body is in, the answer comes within ``--lock-timeout`` seconds
    (and the time to validate), whatever queues in front of it (ADR-0053).
    """
    services = _services(request)
    settings = services.settings
    body = await read_capped(request, settings.max_body, settings.body_timeout)
    deadline = time.monotonic() + settings.lock_timeout

    def validate_and_append() -> Appended:
        # Decoding 500 events is CPU work: keep it off the event loop, with the append.
        return services.store.append(accept_batch(parse_json(body), body),
                                    deadline=deadline)

    with services.pacing.ingesting():  # the projection waits for a quiet moment
        if len(body) > INLINE_BODY or settings.database.is_postgres:
            appended = await run_in_threadpool(validate_and_append)
        else:
            # The plugin's small batch: on the event loop when the store takes it at once
            # (ADR-0118), else in a thread like any other.
            batch = accept_batch(parse_json(body), body)
            now = services.store.append_now(batch, within=INLINE_LOCK_WAIT)
            appended = now if now is not None else await run_in_threadpool(
                lambda: services.store.append(batch, deadline=deadline))
    request.scope[OUTCOME] = appended  # for the request's log line and the metrics
    answer = {"ok": True, "recus": appended.recus, "doublons": appended.doublons}
    if appended.conflits:  # re-sent ids with other content: a plugin bug made visible
        answer["conflits"] = appended.conflits
    return JSONResponse(answer)


BILAN_QUERY = ("par", "puis", "depuis", "jusqu_au", "attendre", "format")
CLASSEMENT_QUERY = ("par", "selon", "min", "apparier", "depuis", "jusqu_au", "attendre",
                    "format")
DEMANDE_QUERY = ("attendre",)
SESSION_QUERY = ("attendre", "format")
RAPPORT_QUERY = ("depuis", "jusqu_au")
"""The query parameters each read route reads; any other is refused (ADR-0164)."""


def _query(request: Request, known: tuple[str, ...]) -> QueryParams:
    """The request's query, once each of its parameters is one of ``known`` and given
    once, names starting with ``_`` aside; else ``NotUnderstood`` (a 400 naming it and
    the nearest spelling, before anything is read: ``jusqu-au=`` returned the whole
    history, in silence; ADR-0164)."""
    # A name starting with "_" is a cache-buster's (?_=1700000000), a probe's or a
    # proxy's: never a parameter of ours, so it is no typo either.
    names = [name for name, _ in request.query_params.multi_items()
             if not name.startswith("_")]
    check_once(names)
    check_parameters(names, known, f"{request.method} {request.url.path}")
    return request.query_params


async def get_bilan(request: Request) -> Response:
    """The bilan snapshot; ``?par=`` adds a breakdown (``client``, ``jour``, ``semaine``,
    ``mois``, ``modele``, ``demande`` or a journal field), ``?puis=`` splits each of its
    groups by a second dimension (ADR-0133), ``?depuis=``/``?jusqu_au=`` (``YYYY-MM-DD``,
    inclusive) bound its days when either is a period. With ``?attendre=1``, first wait
    (at most ``attendre_max`` s) until the projection has folded every event stored
    before this request."""
    services = _services(request)
    query = _query(request, BILAN_QUERY)
    par = query.get("par") or None
    puis = query.get("puis")
    bounds = {name: query[name] for name in ("depuis", "jusqu_au") if name in query}
    check_bounds(par, bounds.get("depuis"), bounds.get("jusqu_au"),  # BoundsError: 400
                 puis=puis)
    waited = await _maybe_wait(request, services)
    lu = await run_in_threadpool(services.bilan, par, puis=puis, **bounds)
    if waited is False:
        lu = replace(lu, attente_expiree=True)
    return represented(request, lu, bilan_answer, bilan_csv, "bilan")  # ADR-0134


async def _maybe_wait(request: Request, services: Services) -> bool | None:
    # ?attendre=1: read your own writes, bounded by attendre_max (SPEC, "Interfaces").
    # None: not asked; False: the wait expired before the projection caught up.
    if not wait_asked(request.query_params.get("attendre")):  # else NotUnderstood: 400
        return None
    head = await run_in_threadpool(services.store.head)
    return await folded_up_to(services, head, services.settings.attendre_max)


async def get_demande(request: Request) -> JSONResponse:
    """One demande's figures (SPEC, ``GET /economies/demandes/{id}``); 404 if never seen.
    ``?attendre=1`` as for the bilan."""
    services = _services(request)
    _query(request, DEMANDE_QUERY)
    await _maybe_wait(request, services)
    demande_id = request.path_params["demande_id"]
    found = await run_in_threadpool(services.demande, demande_id)
    if found is None:
        return error_response(404, f"no event for demande {demande_id!r}")
    return JSONResponse(found)


SESSION_FORMATS = ("json", "ligne")
"""The values ``?format=`` takes on the session route: its JSON document, or one line of
text for Claude Code's status line (SPEC, "Where a person looks")."""


async def get_session(request: Request) -> Response:
    """One Claude Code session (SPEC, "A session"; ADR-0176): the plugin's figures, Claude
    Code's own replies, ``part_economisee`` and the rapprochement (``session_answers``);
    404 for a session neither source has seen. ``?format=ligne``: one line of
    ``text/plain`` instead (``session_answers.ligne``); ``?format=json`` the default;
    any other a 400 before anything is read. ``?attendre=1`` as for the bilan."""
    services = _services(request)
    query = _query(request, SESSION_QUERY)
    fmt = query.get("format", "json")
    if fmt not in SESSION_FORMATS:
        return error_response(400, f"format must be {' or '.join(SESSION_FORMATS)}, "
                                   f"not {fmt[:20]!r}")
    await _maybe_wait(request, services)
    session_id = request.path_params["session_id"]
    lu = await run_in_threadpool(services.session, session_id)
    if lu is None:
        return error_response(404, f"no event and no reply for session {session_id!r}")
    if fmt == "ligne":
        return PlainTextResponse(ligne(lu) + "\n")
    return JSONResponse(session_answer(lu))


async def get_classement(request: Request) -> Response:
    """The classement (SPEC, "Ranking presets: the classement"): ``?par=`` (``client`` or
    a journal field; required), ``?selon=`` (``taux``, the default, or ``net``),
    ``?min=`` (an integer >= 1, default ``DEFAULT_MIN``), ``?apparier=`` (the journal
    field of a task: paired comparisons), ``?depuis=``/``?jusqu_au=`` (``YYYY-MM-DD``,
    the window), ``?attendre=1`` as for the bilan. 400 naming the parameter the SPEC
    refuses, before anything is read."""
    services = _services(request)
    query = _query(request, CLASSEMENT_QUERY)
    par = query.get("par", "")
    selon = query.get("selon", SELON)
    apparier = query.get("apparier")
    minimum = parse_min(query.get("min", str(DEFAULT_MIN)))
    depuis, jusqu_au = query.get("depuis"), query.get("jusqu_au")
    # ClassementError: 400 (errors.py)
    check_parametres(par, selon, apparier, minimum, depuis, jusqu_au)
    waited = await _maybe_wait(request, services)
    lu = await run_in_threadpool(services.classement, par, minimum, selon, apparier,
                                 depuis, jusqu_au)
    if waited is False:
        lu = replace(lu, attente_expiree=True)
    return represented(request, lu, classement_answer, classement_csv,
                       "classement")  # ADR-0134


async def get_rapport(request: Request) -> Response:
    """The report (``api.http.report``): one self-contained HTML page; ``?depuis=`` and
    ``?jusqu_au=`` (``YYYY-MM-DD``, inclusive) bound its period (400 when unsound)."""
    services = _services(request)
    query = _query(request, RAPPORT_QUERY)
    bounds = {name: query[name] for name in ("depuis", "jusqu_au") if name in query}
    check_bounds("jour", bounds.get("depuis"), bounds.get("jusqu_au"))  # BoundsError: 400
    page = await run_in_threadpool(render_report, services, **bounds)
    return HTMLResponse(page)


async def healthz(request: Request) -> JSONResponse:
    """Health, without auth: 200 ``{"ok": true, "tete": head, "position": folded,
    "retard": head - folded, "ecartes": set aside}`` (notification ids; ``retard`` and
    ``ecartes`` in events: ADR-0135), or 503 with ``erreur`` while the projection runner's
    last page failed (details in the server's log only), while the fold has not advanced
    for ``Settings.fold_stall_after`` seconds with events waiting (the same figures,
    ``"arrete_depuis"`` in seconds: ADR-0136), or when the store cannot be read within
    the lock timeout plus ``bounded.READ_MARGIN`` (ADR-0152)."""
    services = _services(request)
    _query(request, ())
    if services.folding_failed:
        return error_response(503, "the projection runner is failing; see the server log")
    health = await within_lock_timeout(services, services.fold_health)  # ADR-0152
    answer = {"ok": True, "tete": health.tete, "position": health.position,
              "retard": health.retard, "ecartes": health.ecartes}
    if health.arrete_depuis is None:
        return JSONResponse(answer)
    where = ("on PostgreSQL the bilan is folded by `miam-economies project`: is one "
             "running beside this server? " if services.settings.database.is_postgres
             else "")
    erreur = (f"the fold has not advanced for {health.arrete_depuis:g} s while "
              f"{health.retard} events wait; {where}see the folding process's log")
    return JSONResponse({**answer, "ok": False, "erreur": erreur,
                         "arrete_depuis": health.arrete_depuis}, status_code=503)


async def get_metrics(request: Request) -> Response:
    """The metrics in Prometheus text format (``api.http.metrics.Metrics``); behind the
    bearer token unless ``Settings.metrics_public``."""
    services = _services(request)  # open, or NotOpen
    _query(request, ())
    metrics: Metrics = getattr(request.state, METRICS_STATE)
    body = await within_lock_timeout(services, metrics.exposition)  # ADR-0152
    return Response(body, media_type=CONTENT_TYPE_PLAIN_0_0_4)


async def get_openapi(request: Request) -> JSONResponse:
    """The OpenAPI 3.0 document of these routes (``api.http.openapi``), without auth."""
    _query(request, ())
    return JSONResponse(openapi_document())
