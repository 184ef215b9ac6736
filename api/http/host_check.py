"""The check ``open_economies(settings, app)`` runs before it opens anything (SPEC,
"Installed as a library", "Fail closed"; ADR-0091, ADR-0140): in the assembled host app,
each of our data routes must be the one a request reaches, a request without MIAM's token
must be refused before it gets there, and MIAM's token must get through.

1. Reachability (``host_routes``): a route of ours must come first. A ``Mount("/")``
   listed before it, or a host route on the same path, takes the request (404, or the
   host's own answer: a 200 would drop the batch) and the plugin's batches stop. Our
   routes under a ``Mount("/x")`` are named as such: the plugin posts to ``/economies``
   at the root.
2. Refusals (``host_probe``): per data route, in process, through the whole app, one
   request without ``Authorization``, two with an empty bearer and one with a random wrong
   token. Each must be answered 401 or 403 (any body) before our route; reaching it proves
   the route unguarded (a guard that checks presence, the scheme, or any token), any
   other answer proves no guard. ``ProbeStop`` answers the ones that get through: nothing
   is stored or logged.
3. MIAM's token: the one ``economies_routes(auth=TOKEN)`` was given, or
   ``open_economies(..., token=)``'s. One request with it per data route must reach our
   route. Without it, the known dead guard (the MCP SDK's ``RequireAuthMiddleware`` with no
   ``AuthenticationMiddleware`` before it) is refused, and one warning line says what the
   check could not prove.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from starlette.routing import BaseRoute
from starlette.types import ASGIApp

from miam_economies.api.http.host_probe import (
    Probe,
    answer,
    probe_scope,
    refused_probes,
    token_probe,
)
from miam_economies.api.http.host_routes import (
    first_taker,
    label,
    prefixes_of_ours,
    routes_of,
    stop_of,
    token_of,
    unlabelled_sdk_guard,
)
from miam_economies.domain.errors import MiamEconomiesError

log = logging.getLogger(__name__)

DATA_ROUTES = (("POST", "/economies"), ("GET", "/economies/bilan"),
               ("GET", "/economies/demandes/sonde"), ("GET", "/economies/sessions/sonde"),
               ("GET", "/economies/classement"),
               ("GET", "/economies/rapport"))
"""The requests the check makes: one per data route (``/healthz``, ``/metrics`` and
``/openapi.json`` follow the auth they were given; the standalone app serves two of them
publicly)."""

LOST = "the plugin would keep its batches, then drop the oldest"


class EmbeddingRefused(MiamEconomiesError, RuntimeError):
    """The host app leaves our routes unguarded, unreachable, or closed to MIAM's own
    token: ``open_economies`` will not start (SPEC, "Fail closed"; ADR-0091, ADR-0140).
    The message says what is wrong and how to mend it."""


class _Findings:
    """What the walk and the requests found, by kind of fault; ``faults()`` words them."""

    def __init__(self, routes: Sequence[BaseRoute]):
        self.prefixes = prefixes_of_ours(routes)
        self.missing: list[str] = []
        self.shadowed: dict[str, list[str]] = {}
        self.through: dict[str, list[str]] = {}  # by probe: the requests that reached us
        self.unsure: dict[str, dict[str, int | str]] = {}  # by probe: request -> answer
        self.dead: list[str] = []
        self.shut: dict[str, int | str] = {}  # MIAM's token refused: request -> answer
        self.unproven: list[str] = []

    def faults(self) -> list[str]:
        """One line per fault, each with its mend."""
        placed = self.missing or self.shadowed
        if placed and self.prefixes and "" not in self.prefixes:
            lines = [_under_prefix(self.prefixes, [*self.missing,
                                                   *sum(self.shadowed.values(), [])])]
        else:
            lines = [*_missing(self.missing), *_shadowed(self.shadowed)]
        for said, requests in self.through.items():
            lines.append(_through(said, requests))
        for said, answers in self.unsure.items():
            lines.append(_unsure(said, answers))
        if self.dead:
            lines.append(_dead(self.dead))
        if self.shut:
            lines.append(_shut(self.shut))
        return lines


async def check_host(app: ASGIApp, token: str | None = None) -> None:
    """Check ``app`` (the assembled host app, as its lifespan receives it) as the module
    says; stores nothing and returns None when every data route is ours, guarded, and
    open to MIAM's token. ``token``: MIAM's bearer token, as the plugin sends it (None:
    the one ``economies_routes(auth=TOKEN)`` was given, if any).

    Raises ``EmbeddingRefused`` with one message naming each fault and its mend. Logs
    one warning when it could not prove that MIAM's token gets through.
    """
    routes = routes_of(app)
    if routes is None:
        raise EmbeddingRefused(
            f"miam-economies will not start: open_economies(settings, app) needs the "
            f"Starlette app the lifespan receives (it got a {type(app).__name__} without "
            f"routes), to check that our routes are reachable and guarded")
    found = _Findings(routes)
    probes = refused_probes()
    for method, path in DATA_ROUTES:
        request = f"{method} {path}"
        taker = first_taker(routes, probe_scope(method, path, probes[0], []))
        stop = None if taker is None else stop_of(taker.route)
        if taker is None:
            found.missing.append(request)
        elif stop is None:
            found.shadowed.setdefault(label(taker.route), []).append(request)
        elif await _refused_by_all(app, method, path, probes, found):
            await _token_through(app, method, path, token or token_of(stop),
                                 unlabelled_sdk_guard(app, taker), found)
    faults = found.faults()
    if faults:
        raise EmbeddingRefused("miam-economies will not start (SPEC, \"Fail closed\"):\n- "
                               + "\n- ".join(faults))
    if found.unproven:
        log.warning("miam-economies: the start-up check proved that %s refuse a request "
                    "without MIAM's token, not that MIAM's token reaches them (no token "
                    "known: auth=\"host\" or auth=[Middleware(...)]); pass "
                    "open_economies(settings, app, token=MIAM_TOKEN) to have it proven",
                    ", ".join(found.unproven))


async def _refused_by_all(app: ASGIApp, method: str, path: str, probes: Sequence[Probe],
                          found: _Findings) -> bool:
    """Whether every one of ``probes`` is refused (401/403) before our route; the first
    that is not is noted in ``found``, the weakest first."""
    request = f"{method} {path}"
    for probe in probes:
        reached: list[str] = []
        status = await answer(app, probe_scope(method, path, probe, reached))
        if reached:
            found.through.setdefault(probe.said, []).append(request)
            return False
        if status not in (401, 403):
            found.unsure.setdefault(probe.said, {})[request] = status
            return False
    return True


async def _token_through(app: ASGIApp, method: str, path: str, token: str | None,
                         dead: bool, found: _Findings) -> None:
    """Send MIAM's ``token`` to our route and note in ``found`` if it does not get there
    (``dead``: the route's guard is one that never lets it through); told no token, note
    the dead guard, or what could not be proven."""
    request = f"{method} {path}"
    status: int | str = "not sent"
    if token is not None:
        reached: list[str] = []
        status = await answer(app, probe_scope(method, path, token_probe(token), reached))
        if reached:
            return
    if dead:
        found.dead.append(request)
    elif token is None:
        found.unproven.append(request)
    else:
        found.shut[request] = status


def _missing(requests: list[str]) -> list[str]:
    return [f"no route of the app matches {', '.join(requests)}: put "
            f"economies_routes(auth=...) in the routes of the app given to "
            f"open_economies(settings, app)"] if requests else []


def _shadowed(takers: dict[str, list[str]]) -> list[str]:
    return [f"{taker}, listed before our routes, takes {', '.join(requests)}: they would "
            f"get 404 or the host's own answer (a 200 would drop the batch), and {LOST}. "
            f"Mend: list economies_routes(...) before {taker} in the app's routes"
            for taker, requests in takers.items()]


def _under_prefix(prefixes: list[str], requests: list[str]) -> str:
    mounts = ", ".join(f'Mount("{prefix}")' for prefix in prefixes)
    return (f"our routes are under {mounts} ({prefixes[0]}/economies...), and nothing of "
            f"ours answers {', '.join(requests)}: the plugin posts to /economies at the "
            f"root of the host, never under a prefix, and {LOST}. Mend: put "
            f"economies_routes(...) in the app's own routes, before any Mount(\"/\")")


def _through(said: str, requests: list[str]) -> str:
    if said == "without credentials":
        return (f"{', '.join(requests)} without credentials reached our routes: anyone "
                f"could post and read. Mend: economies_routes(auth=MIAM_TOKEN) (our "
                f"BearerAuth on each route), or auth=[Middleware(...)] with the host's "
                f"per-route auth (the MCP SDK's: Middleware(RequireAuthMiddleware, "
                f"required_scopes=[])); auth=\"host\" holds only when the host app has a "
                f"middleware that refuses such a request (401/403) before routing, and "
                f"the SDK's AuthenticationMiddleware refuses nothing")
    return (f"{', '.join(requests)} {said} reached our routes: the host's guard checks "
            f"that a token is there, not that it is MIAM's, so anyone could post and read. "
            f"Mend: have the guard compare the token with MIAM's (hmac.compare_digest) and "
            f"answer 401 otherwise, or economies_routes(auth=MIAM_TOKEN) (our BearerAuth "
            f"on each route)")


def _unsure(said: str, answers: dict[str, int | str]) -> str:
    told = ", ".join(f"{request} ({status})" for request, status in answers.items())
    host_list = (" A 400 is often a Host allow-list (TrustedHostMiddleware) without "
                 "localhost." if 400 in answers.values() else "")
    return (f"{said}, {told}: neither our route nor a 401/403 refusal, so nothing shows "
            f"that the routes are guarded. Mend: let the host's auth answer 401 or 403 to "
            f"a request without the token (the check's requests come from 127.0.0.1 with "
            f"Host: localhost).{host_list}")


def _dead(requests: list[str]) -> str:
    return (f"{', '.join(requests)} are guarded by the MCP SDK's RequireAuthMiddleware, "
            f"which needs the user that the SDK's AuthenticationMiddleware sets, and none "
            f"runs before it in this app: every request would get 401, MIAM's token "
            f"included, and {LOST}. Mend: add Middleware(AuthenticationMiddleware, "
            f"backend=BearerAuthBackend(MiamVerifier())) to the app's middleware "
            f"(starlette.middleware.authentication, mcp.server.auth.middleware.bearer_auth), "
            f"or economies_routes(auth=MIAM_TOKEN)")


def _shut(answers: dict[str, int | str]) -> str:
    told = ", ".join(f"{request} ({status})" for request, status in answers.items())
    return (f"with MIAM's token, {told} did not reach our routes: the plugin's batches "
            f"would be refused for ever, and {LOST}. Mend: let the host's guard accept "
            f"'Authorization: Bearer <MIAM's token>' on these paths, and give our routes "
            f"and open_economies(..., token=) the token the plugin sends")
