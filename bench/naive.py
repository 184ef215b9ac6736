"""The naive reference: the contract's literal design, small and honest, for ``make bench``.

What the plugin's contract describes (``000_*.txt``, "Stockage"): append every new event,
plus its ``recu_le``, to ``economies.jsonl``; keep the ids seen in an in-memory set, reloaded
from the file at start; compute the bilan by scanning the file. Served by the same
Starlette/uvicorn, with the same validation (``domain.validation``), the same formula
(``v1``: the plugin's figures as sent, summed by ``contribution`` below) and the same
durability (one fsync per batch), so the benchmark compares designs, not shortcuts. Never
used by the service.

Run: ``python -m bench.naive --data DIR --port N`` (token from ``MIAM_ECONOMIES_TOKEN``).
"""

from __future__ import annotations

import argparse
import json
import os
import threading
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from miam_economies.api.store.mapper import payload_text
from miam_economies.domain.bilan import Figures, jour
from miam_economies.domain.events import Delegation, Pilotage, Received, from_payload
from miam_economies.domain.instants import iso_utc
from miam_economies.domain.strict_json import NotStrictJson, loads_strict
from miam_economies.domain.validation import SchemaError, validate_batch


def contribution(event: Received) -> Figures:
    """What one event adds to its client's figures under ``v1``, written here as the
    contract says it (the service folds it its own way: ``projections.delta``)."""
    if isinstance(event, Delegation):
        return Figures(delegations=1, evites=event.estimation.evites, evenements=1)
    if isinstance(event, Pilotage):
        return Figures(pilotage=event.cout, evenements=1)
    return Figures(corrections=event.cout, evenements=1)


class NaiveStore:
    """``economies.jsonl`` and the set of its ids. ``path``: the file (created if absent).
    Loading reads the whole file: start-up time grows with the history."""

    def __init__(self, path: Path):
        self.path = path
        self.ids: set[str] = set()
        self.lock = threading.Lock()
        path.touch()
        with path.open("rb") as lines:
            for line in lines:
                self.ids.add(json.loads(line)["id"])

    def append(self, body: bytes) -> dict[str, Any]:
        """Validate and append a batch; ``{"ok", "recus", "doublons"}``. Raises
        ``NotStrictJson`` and ``SchemaError`` as the service's route does."""
        evenements = validate_batch(loads_strict(body))
        recu_le = iso_utc(datetime.now(UTC))
        with self.lock:
            new = []
            for ev in evenements:
                if ev.id not in self.ids:
                    self.ids.add(ev.id)
                    new.append(payload_text({**ev.payload, "recu_le": recu_le}) + "\n")
            with self.path.open("a", encoding="utf-8") as out:
                out.write("".join(new))
                out.flush()
                os.fsync(out.fileno())
        return {"ok": True, "recus": len(new), "doublons": len(evenements) - len(new)}

    def bilan(self, jour_voulu: str | None = None) -> dict[str, Any]:
        """Scan the file: per-client figures under ``v1`` (only the day ``jour_voulu``,
        in UTC, when given)."""
        utc = ZoneInfo("UTC")
        clients: defaultdict[str, Figures] = defaultdict(Figures)
        with self.path.open("rb") as lines:
            for line in lines:
                event = from_payload(json.loads(line))
                if jour_voulu is not None and jour(event.date, utc) != jour_voulu:
                    continue
                clients[event.client] += contribution(event)
        return {"economies": {c: f.as_dict() for c, f in sorted(clients.items())}}

    def demande(self, demande_id: str) -> dict[str, Any]:
        """Scan the file for one demande's figures under ``v1`` (its evites, pilotage
        shares are not split here: the naive design has no per-demande view)."""
        figures = Figures()
        with self.path.open("rb") as lines:
            for line in lines:
                if demande_id.encode() not in line:
                    continue
                event = from_payload(json.loads(line))
                figures += contribution(event)
        return figures.as_dict()


def build_app(data: Path, token: str) -> Starlette:
    """The naive server over ``data/economies.jsonl``, behind ``Bearer token``."""
    data.mkdir(parents=True, exist_ok=True)
    store = NaiveStore(data / "economies.jsonl")

    def authorised(request: Request) -> bool:
        return request.headers.get("authorization") == f"Bearer {token}"

    async def post(request: Request) -> JSONResponse:
        if not authorised(request):
            return JSONResponse({"ok": False}, status_code=401)
        body = await request.body()
        try:
            return JSONResponse(await run_in_threadpool(store.append, body))
        except (NotStrictJson, SchemaError) as exc:
            return JSONResponse({"ok": False, "erreur": str(exc)}, status_code=400)

    async def bilan(request: Request) -> JSONResponse:
        if not authorised(request):
            return JSONResponse({"ok": False}, status_code=401)
        day = request.query_params.get("depuis")
        return JSONResponse(await run_in_threadpool(store.bilan, day))

    async def demande(request: Request) -> JSONResponse:
        if not authorised(request):
            return JSONResponse({"ok": False}, status_code=401)
        found = await run_in_threadpool(store.demande, request.path_params["demande_id"])
        return JSONResponse(found)

    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"ok": True})

    return Starlette(routes=[
        Route("/economies", post, methods=["POST"]),
        Route("/economies/bilan", bilan),
        Route("/economies/demandes/{demande_id:path}", demande),
        Route("/healthz", healthz),
    ])


def main() -> None:
    """Serve the naive reference on 127.0.0.1 (see the module's docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    app = build_app(args.data, os.environ["MIAM_ECONOMIES_TOKEN"])
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning",
                http="h11", limit_concurrency=64, timeout_keep_alive=5)


if __name__ == "__main__":
    main()
