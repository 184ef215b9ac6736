"""``serve --workers 2`` (PostgreSQL): ``/metrics`` gives the counts of every worker,
whichever worker answers the scrape, and the gauges read from the store once, not once a
worker (issue 34.5; ADR-0154). Against 7093df9 each scrape showed the counters of the
worker that answered it: 0 or 60 doublons where 60 had been counted."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import TOKEN, LiveServer, fresh_postgres
from tests.corpus import generate

BATCHES = 12
SENDERS = 4


def samples(exposition: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of a Prometheus text exposition, by name and labels."""
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(exposition) for s in family.samples}


def test_every_scrape_counts_every_worker(tmp_path: Path) -> None:
    events = generate(BATCHES * 5, seed=34)[:BATCHES * 5]
    batches = [{"evenements": events[i * 5:(i + 1) * 5]} for i in range(BATCHES)]
    with fresh_postgres() as url:
        server = LiveServer(tmp_path / "data", database_url=url, workers=2)
        server.start()
        try:
            def send(mine: list[dict[str, object]]) -> None:
                for batch in mine:  # each batch twice, each POST on a connection of its own
                    for _ in range(2):
                        answer = httpx.post(f"{server.url}/economies", json=batch, timeout=30,
                                            headers={"Authorization": f"Bearer {TOKEN}"})
                        assert answer.status_code == 200, answer.text

            senders = [threading.Thread(target=send, args=(batches[i::SENDERS],))
                       for i in range(SENDERS)]
            for sender in senders:
                sender.start()
            for sender in senders:
                sender.join()
            stored = BATCHES * 5
            scrapes = [httpx.get(f"{server.url}/metrics", timeout=30,
                                 headers={"Authorization": f"Bearer {TOKEN}"}).text
                       for _ in range(8)]
        finally:
            server.close()
    posts = frozenset({"route": "/economies", "method": "POST", "status": "200"}.items())
    for scrape in map(samples, scrapes):
        assert scrape[("miam_economies_events_stored_total", frozenset())] == stored
        assert scrape[("miam_economies_doublons_total", frozenset())] == stored
        assert scrape[("miam_economies_events_received_total", frozenset())] == 2 * stored
        assert scrape[("miam_economies_request_duration_seconds_count", posts)] == 2 * BATCHES
        assert scrape[("miam_economies_store_head", frozenset())] == stored  # not summed
        assert scrape[("miam_economies_projection_lag_events", frozenset())] <= stored
