"""Issue 12, "Done when": a data directory written by the previous release (commit
``ca63dfe``, top-level ``api``/``domain``/``projections``) opens unchanged with today's
``miam_economies``: the same bilan, breakdowns included, from Python and from a live
server. The directory and the bilans that release served are in
``tests/fixtures/store_ca63dfe/`` with the script that made them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from miam_economies import Settings, read_bilan
from miam_economies.api.service.replay import replay
from tests.conftest import LiveServer
from tests.fixtures.store_ca63dfe.make import BREAKDOWNS, HERE, comparable, fixture_copy

EXPECTED: dict[str, Any] = json.loads((HERE / "bilan.json").read_text(encoding="utf-8"))


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A copy of the old release's data directory (the fixture itself stays as made)."""
    return fixture_copy(tmp_path)


def test_the_fixture_holds_what_the_old_release_counted() -> None:
    # What the fixture is meant to exercise, so a remade one cannot quietly lose it.
    bilan = EXPECTED[""]
    assert bilan["provenance"]["fuseau"] == "Europe/Paris"
    assert bilan["conservation"]["stockes"] == bilan["provenance"]["tete"] > 200
    assert bilan["total"]["anomalies"] == {"cout": 1} and bilan["total"]["conflits"] == 1
    assert bilan["provenance"]["journal"]["lignes"] > 0
    assert {"rapide", "(inconnu)"} <= set(EXPECTED["preset"]["groupes"])
    assert len(EXPECTED["jour"]["groupes"]) > 10


def test_read_bilan_gives_the_old_releases_bilans(data: Path) -> None:
    for par in BREAKDOWNS:
        assert comparable(read_bilan(data, par=par)) == EXPECTED[par or ""], par


def test_a_live_server_gives_the_old_releases_bilans(data: Path) -> None:
    server = LiveServer(data)
    server.start()
    try:
        for par in BREAKDOWNS:
            answer = server.client.get("/economies/bilan",
                                       params={"attendre": "1", **({"par": par} if par else {})})
            assert answer.status_code == 200
            assert comparable(answer.json()) == EXPECTED[par or ""], par
    finally:
        server.close()


def test_the_old_releases_history_replays_into_the_same_bilans(data: Path) -> None:
    # Folding the old events again (not reading the old projection): the stored events
    # name their classes by the old topics (domain.events:...), which still resolve.
    settings = Settings(data=data)
    replay(settings, "v1", reconstruire=False)
    replay(settings, "v1-serveur")
    rebuilt = replay(settings, "v1", "UTC")
    assert rebuilt["evenements"] == EXPECTED[""]["provenance"]["evenements"]
    replay(settings, "v1", "Europe/Paris")
    for par in BREAKDOWNS:
        assert comparable(read_bilan(data, par=par)) == EXPECTED[par or ""], par
