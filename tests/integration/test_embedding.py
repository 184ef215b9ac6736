"""Issue 8, "Embedding in MIAM": a host app with its own ``/mcp`` route and its own bearer
middleware mounts ``economies_routes()``, opens our services in its lifespan, and runs the
contract's example through them on a real uvicorn; MIAM's Python functions read the same
data directory without a server."""

from __future__ import annotations

import copy
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from miam_economies.api.service.reading import economies_section, net_du_jour
from miam_economies.api.service.settings import DEFAULT_MAX_BODY
from tests.conftest import EXAMPLE_BATCH
from tests.corpus import generate
from tests.integration.miam_host import HOST_REFUSAL

ROOT = Path(__file__).parents[2]
HOST_TOKEN = "host-token-of-miam"
EXPECTED = {"delegations": 1, "evites": 4900, "pilotage": 2000, "corrections": 0,
            "net": 2900, "taux_reprise": 0.0, "anomalies": {}, "conflits": 0}


class HostServer:
    """A host app under ``uvicorn`` in a subprocess on loopback: by default
    ``tests.integration.miam_host`` run from the repository; ``app`` (``module:factory``)
    run from ``tree``, first on its ``sys.path``, for a host tree of its own."""

    def __init__(self, data: Path, app: str = "tests.integration.miam_host:from_env",
                 tree: Path = ROOT):
        self.app = app
        self.tree = tree
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.data = data
        self.log_path = data.parent / "host.log"
        self.client = httpx.Client(base_url=self.url, timeout=30,
                                   headers={"Authorization": f"Bearer {HOST_TOKEN}"})

    def start(self) -> None:
        """Start uvicorn and return once the host's ``/mcp`` answers (at most 20 s)."""
        env = {**os.environ, "MIAM_HOST_DATA": str(self.data), "MIAM_HOST_TOKEN": HOST_TOKEN,
               "PYTHONPATH": str(self.tree)}
        self.log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "--factory", self.app,
             "--host", "127.0.0.1", "--port", str(self.port)],
            cwd=self.tree, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log_path.read_text()
            try:
                if self.client.get("/mcp").status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.05)  # still starting: nothing to wait on
        raise RuntimeError("the host did not start within 20 s")

    def stop(self) -> None:
        """SIGTERM, then wait: the host's lifespan closes our services."""
        self.process.terminate()
        self.process.wait(timeout=20)
        self.log.close()
        self.client.close()


@pytest.fixture
def host(tmp_path: Path) -> Iterator[HostServer]:
    """A running host app over a fresh data directory."""
    server = HostServer(tmp_path / "data")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_the_host_serves_the_contract_example_through_our_routes(host: HostServer) -> None:
    assert host.client.get("/mcp").text == "mcp of miam"  # the host's own state is intact
    first = host.client.post("/economies", json=EXAMPLE_BATCH)
    assert first.status_code == 200
    assert first.json() == {"ok": True, "recus": 2, "doublons": 0}
    assert host.client.post("/economies", json=EXAMPLE_BATCH).json() == {
        "ok": True, "recus": 0, "doublons": 2}
    bilan = host.client.get("/economies/bilan", params={"attendre": "1"}).json()
    assert bilan["economies"] == {"claude-code": EXPECTED}
    assert bilan["position"] == bilan["provenance"]["tete"] == 2  # the runner runs
    demande = host.client.get("/economies/demandes/dem-9c8a4d0189").json()
    assert demande["net"] == 2900


def test_our_routes_sit_behind_the_hosts_auth_only(host: HostServer) -> None:
    for method, path in (("GET", "/mcp"), ("POST", "/economies"), ("GET", "/economies/bilan"),
                         ("GET", "/economies/rapport"), ("GET", "/metrics")):
        refused = httpx.request(method, host.url + path, json=EXAMPLE_BATCH)
        assert refused.status_code == 401, path
        assert refused.json() == {"host_error": HOST_REFUSAL}, path  # the host's refusal
    ours = {"Authorization": "Bearer test-token"}  # our standalone token means nothing here
    assert httpx.post(host.url + "/economies", json=EXAMPLE_BATCH,
                      headers=ours).status_code == 401
    health = host.client.get("/healthz").json()
    # Nothing stored:
    assert health == {"ok": True, "tete": 0, "position": 0, "retard": 0, "ecartes": 0}


def test_our_error_policy_travels_with_the_routes(host: HostServer) -> None:
    # The host has no handler for our exceptions: each route carries its own.
    broken = copy.deepcopy(EXAMPLE_BATCH)
    broken["evenements"][1]["cout"] = 3.0
    answer = host.client.post("/economies", json=broken)
    assert answer.status_code == 422
    assert answer.json()["erreurs"][0]["champ"] == "cout"
    not_json = host.client.post("/economies", content=b"{nope",
                                headers={"Content-Type": "application/json"})
    assert not_json.status_code == 400 and not_json.json()["ok"] is False
    too_big = host.client.post("/economies", content=b" " * (1_048_576 + 1))
    assert too_big.status_code == 413
    bad_bounds = host.client.get("/economies/rapport", params={"depuis": "2026-13-01"})
    assert bad_bounds.status_code == 400
    assert host.client.get("/healthz").json()["tete"] == 0  # every refusal stored nothing
    metrics = host.client.get("/metrics").text
    assert 'miam_economies_requests_refused_total{status="422"} 1.0' in metrics
    assert 'miam_economies_requests_refused_total{status="413"} 1.0' in metrics


def test_miam_reads_the_section_and_todays_net_without_a_server(host: HostServer) -> None:
    now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    today = copy.deepcopy(EXAMPLE_BATCH)
    for event in today["evenements"]:
        event["date"] = now
    assert host.client.post("/economies", json=today).json()["recus"] == 2
    section = economies_section(host.data)
    assert section == {"economies": {"claude-code": EXPECTED}}
    by_day = economies_section(host.data, par="jour")
    assert by_day["par"] == "jour"
    (day, clients), = by_day["groupes"].items()
    assert clients["claude-code"]["net"] == 2900
    assert net_du_jour("claude-code", host.data) == 2900
    assert net_du_jour("another-client", host.data) == 0


def test_without_a_store_the_section_is_empty_and_nothing_is_created(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    assert economies_section(missing) == {"economies": {}}
    assert economies_section(missing, par="preset") == {"economies": {}, "par": "preset",
                                                        "groupes": {}}
    assert net_du_jour("claude-code", missing) == 0
    assert not missing.exists()



# A host tree with its own top-level api, domain and projections (issue 12; ecosystem
# review, §3 A): MIAM's modules, each with something the host's route uses.
HOST_TREE = {
    "api/__init__.py": 'NAME = "the host\'s api"\n',
    "domain/__init__.py": "",
    "domain/presets.py": 'PRESETS = ("rapide", "soigne")\n',
    "projections/__init__.py": "def card(net: int) -> str:\n"
                               "    return f\"net {net:,} tokens\"\n",
    "host_app.py": '''"""MIAM's app module: its own packages beside ours, one app."""
import os
import sys
from pathlib import Path

import api
import domain.presets
import miam_economies
import projections
from miam_host import create_host_app
from starlette.responses import JSONResponse
from starlette.routing import Route


async def host(request):
    return JSONResponse({
        "api": api.NAME, "presets": list(domain.presets.PRESETS),
        "card": projections.card(2900),
        "files": {name: sys.modules[name].__file__
                  for name in ("api", "domain", "projections")},
        "ours": miam_economies.__file__})


def from_env():
    return create_host_app(Path(os.environ["MIAM_HOST_DATA"]), os.environ["MIAM_HOST_TOKEN"],
                           routes=[Route("/host", host)])
''',
}


def test_a_host_tree_with_its_own_api_domain_projections_keeps_them(tmp_path: Path) -> None:
    tree = tmp_path / "miam"
    for name, text in HOST_TREE.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(text)
    # The host of the other tests, as a file of the tree: it imports only miam_economies.
    (tree / "miam_host.py").write_text(
        (ROOT / "tests" / "integration" / "miam_host.py").read_text())
    host = HostServer(tmp_path / "data", app="host_app:from_env", tree=tree)
    host.start()
    try:
        assert httpx.get(host.url + "/economies/bilan").json() == {"host_error": HOST_REFUSAL}
        answer = host.client.post("/economies", json=EXAMPLE_BATCH)
        assert answer.json() == {"ok": True, "recus": 2, "doublons": 0}
        bilan = host.client.get("/economies/bilan", params={"attendre": "1"}).json()
        assert bilan["economies"]["claude-code"]["net"] == 2900
        own = host.client.get("/host").json()  # after our routes served: still the host's
    finally:
        host.stop()
    assert own["api"] == "the host's api"
    assert own["presets"] == ["rapide", "soigne"]
    assert own["card"] == "net 2,900 tokens"
    for name, path in own["files"].items():
        assert Path(path).is_relative_to(tree), name
    assert not Path(own["ours"]).is_relative_to(tree)


def test_a_hosts_app_wide_body_cap_does_not_lower_ours(tmp_path: Path) -> None:
    # The plugin re-sends a 413'd batch for ever: a host's cap of 64 KiB must not refuse
    # a 500-event batch (about 200 KB), while our own cap (1 MiB) still holds.
    host = HostServer(tmp_path / "data", app="tests.integration.miam_host:capped_from_env")
    host.start()
    try:
        body = json.dumps({"evenements": generate(500, seed=4)[:500]}).encode()
        assert 64 * 1024 < len(body) < DEFAULT_MAX_BODY
        answer = host.client.post("/economies", content=body,
                                  headers={"Content-Type": "application/json"})
        assert answer.status_code == 200 and answer.json()["recus"] == 500
        huge = host.client.post("/economies", content=b" " * (DEFAULT_MAX_BODY + 1),
                                headers={"Content-Type": "application/json"})
        assert huge.status_code == 413 and huge.json()["ok"] is False  # ours, in JSON
    finally:
        host.stop()


def test_routes_mounted_without_open_economies_answer_503_saying_so(tmp_path: Path) -> None:
    host = HostServer(tmp_path / "data", app="tests.integration.miam_host:forgetful_from_env")
    host.start()
    try:
        answer = host.client.post("/economies", json=copy.deepcopy(EXAMPLE_BATCH))
        assert answer.status_code == 503
        assert "open_economies" in answer.json()["erreur"]
        assert host.client.get("/economies/bilan").status_code == 503
    finally:
        host.stop()
    assert "open_economies" in host.log_path.read_text()  # the host's log says how to fix


def test_a_host_whose_auth_guards_each_route_passes_it_to_ours(tmp_path: Path) -> None:
    # The MCP SDK guards /mcp only: economies_routes(auth=[...]) puts the host's auth
    # on each of our routes too.
    host = HostServer(tmp_path / "data", app="tests.integration.miam_host:per_route_from_env")
    host.start()
    try:
        unguarded = httpx.post(f"{host.url}/economies", json=copy.deepcopy(EXAMPLE_BATCH))
        assert unguarded.status_code == 401 and unguarded.json() == {"host_error": HOST_REFUSAL}
        assert httpx.get(f"{host.url}/economies/bilan").status_code == 401
        answer = host.client.post("/economies", json=copy.deepcopy(EXAMPLE_BATCH))
        assert answer.json() == {"ok": True, "recus": 2, "doublons": 0}
        bilan = host.client.get("/economies/bilan", params={"attendre": "1"}).json()
        assert bilan["economies"]["claude-code"] == EXPECTED
    finally:
        host.stop()
