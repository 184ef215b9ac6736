"""Issue 8, "Observability": ``/healthz``, ``/metrics`` under a small load, and one log line
per request that never holds the token or the body; against a real uvicorn."""

from __future__ import annotations

import copy
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import EXAMPLE_BATCH, LiveServer
from tests.corpus import generate

SECRET = "observability-token-that-must-not-leak"
WRONG = "a-wrong-token-that-must-not-leak-either"
MARKER = "body-marker-that-must-not-be-logged"


def samples(response: httpx.Response) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a Prometheus text exposition, by (name, sorted labels)."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(response.text)
            for s in family.samples}


def value(found: dict[Any, float], name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


def test_healthz_tells_head_position_and_lag(server: LiveServer) -> None:
    server.post(EXAMPLE_BATCH)
    server.bilan()  # waits until the projection folded both events
    assert httpx.get(server.url + "/healthz").json() == {
        "ok": True, "tete": 2, "position": 2, "retard": 0, "ecartes": 0}


def test_metrics_need_the_token_unless_made_public(server: LiveServer, tmp_path: Path) -> None:
    refused = httpx.get(server.url + "/metrics")
    assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
    assert server.client.get("/metrics").status_code == 200
    public = LiveServer(tmp_path / "public", env={"MIAM_ECONOMIES_METRICS_PUBLIC": "1"})
    public.start()
    try:
        assert httpx.get(public.url + "/metrics").status_code == 200
        assert httpx.get(public.url + "/economies/bilan").status_code == 401  # only metrics
    finally:
        public.stop()
        public.client.close()


def test_metrics_move_as_expected_under_a_small_load(server: LiveServer) -> None:
    before = samples(server.client.get("/metrics"))
    events = generate(400, seed=8)[:400]
    batches = [{"evenements": events[i:i + 20]} for i in range(0, 400, 20)]  # 20 of 20
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(server.post, batches))
        resent = list(pool.map(server.post, batches[:5]))  # 100 doublons
    assert [a.status_code for a in answers + resent] == [200] * 25
    changed = copy.deepcopy(batches[0])
    changed["evenements"][0]["session_id"] = "another"  # one conflict
    assert server.post(changed).json()["conflits"] == 1
    broken = copy.deepcopy(EXAMPLE_BATCH)
    broken["evenements"][0]["tokens_entree"] = -1
    assert server.post(broken).status_code == 422
    assert httpx.post(server.url + "/economies", json=EXAMPLE_BATCH).status_code == 401
    assert server.client.get("/economies/nothing").status_code == 404
    server.bilan()  # the projection has caught up
    after = samples(server.client.get("/metrics"))

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("miam_economies_events_received_total") == 400 + 100 + 20
    assert delta("miam_economies_events_stored_total") == 400
    assert delta("miam_economies_doublons_total") == 100 + 20
    assert delta("miam_economies_conflits_total") == 1
    assert delta("miam_economies_requests_refused_total", status="422") == 1
    assert delta("miam_economies_requests_refused_total", status="401") == 1
    assert delta("miam_economies_requests_refused_total", status="404") == 1
    assert delta("miam_economies_request_duration_seconds_count", route="/economies",
                 method="POST", status="200") == 20 + 5 + 1
    assert delta("miam_economies_request_duration_seconds_bucket", route="/economies",
                 method="POST", status="200", le="+Inf") == 26
    assert value(after, "miam_economies_store_head") == 400 + 1  # the conflict is stored
    assert value(after, "miam_economies_projection_position") == 401
    assert value(after, "miam_economies_projection_lag_events") == 0
    assert value(after, "miam_economies_projection_failing") == 0


def test_one_log_line_per_request_without_token_or_body(tmp_path: Path) -> None:
    live = LiveServer(tmp_path / "data", token=SECRET)
    live.start()
    try:
        marked = copy.deepcopy(EXAMPLE_BATCH)
        for event in marked["evenements"]:
            event["session_id"] = MARKER
        live.post(marked)
        live.post(marked)
        live.post({"evenements": [{"schema": 1, "note": MARKER}]})
        httpx.post(live.url + "/economies", json=marked,
                   headers={"Authorization": f"Bearer {WRONG}"})
        live.client.get("/economies/bilan", params={"attendre": "1"})
    finally:
        live.stop()
        live.client.close()
    text = b"".join(p.read_bytes() for p in tmp_path.glob("server-*.log")).decode()
    assert SECRET not in text and WRONG not in text and MARKER not in text
    lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    posts = [line for line in lines if line["path"] == "/economies"]
    assert [(p["status"], p.get("recus"), p.get("doublons")) for p in posts] == [
        (200, 2, 0), (200, 0, 2), (422, None, None), (401, None, None)]
    assert all(p["duration_s"] >= 0 and p["method"] == "POST" and p["time"].endswith("Z")
               for p in posts)
    assert any(line["route"] == "/economies/bilan" and line["status"] == 200
               for line in lines)
