"""Named formulas, anomalies, conflicts and replay on real files and a real server (issue 4)."""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from api.replay import compare, list_anomalies, replay
from api.services import open_services
from api.settings import Settings
from domain.validation import validate_batch
from tests.conftest import EXAMPLE_BATCH, TOKEN, LiveServer
from tests.corpus import batches, generate

SCRIPT = Path(sys.executable).with_name("miam-economies")
FIGURES = ("delegations", "evites", "pilotage", "corrections", "net", "taux_reprise")


def corrupted_corpus(size: int, seed: int) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """A corpus where some events carry deliberately wrong plugin figures; returns the
    events and, for each corrupted id, the anomaly kind it must show."""
    events = generate(size, seed=seed)
    rng = random.Random(seed)
    wrong: dict[str, str] = {}
    for e in rng.sample(events, 60):
        if e["type"] == "pilotage":
            e["cout"] += 7
            wrong[e["id"]] = "cout"
        elif e["type"] == "correction":
            e["cout"] += 1
            wrong[e["id"]] = "cout"
        else:
            e["estimation"]["evites"] -= 3
            wrong[e["id"]] = "evites"
    return events, wrong


def load(settings: Settings, events: list[dict[str, Any]]) -> None:
    with open_services(settings, run_projections=False) as services:
        for i in range(0, len(events), 500):
            services.store.append(validate_batch({"evenements": events[i:i + 500]}))
        services.runner.catch_up()


def read(settings: Settings, par: str | None = None) -> dict[str, Any]:
    # As MIAM reads: no zone of its own, the active projection's.
    with open_services(replace(settings, fuseau=None), run_projections=False) as services:
        services.runner.catch_up()
        return services.bilan(par)


def test_replay_under_v1_reproduces_the_live_bilan_exactly(tmp_path: Path) -> None:
    settings = Settings(data=tmp_path / "data", token=TOKEN, fuseau="Europe/Paris")
    events, _ = corrupted_corpus(3_000, seed=1)
    load(settings, events)
    live = {par: read(settings, par) for par in ("jour", "modele", "demande")}
    # Rebuild v1 in another zone and back, so the replay really folds from scratch.
    replay(settings, "v1", fuseau="UTC")
    assert read(settings)["provenance"]["fuseau"] == "UTC"
    result = replay(settings, "v1", fuseau="Europe/Paris")
    assert result["projection"] == "bilan:v1:Europe/Paris"
    for par, before in live.items():
        after = read(settings, par)
        for key in ("economies", "total", "groupes", "conservation"):
            assert after[key] == before[key], (par, key)


def test_v1_serveur_differs_from_v1_only_where_the_plugin_was_wrong(tmp_path: Path) -> None:
    settings = Settings(data=tmp_path / "data", token=TOKEN, fuseau="UTC")
    events, wrong = corrupted_corpus(3_000, seed=2)
    load(settings, events)
    v1 = read(settings)
    listed = {row["id"]: row["anomalies"] for row in list_anomalies(settings)}
    assert listed == {event_id: [kind] for event_id, kind in wrong.items()}
    kinds = {kind: list(wrong.values()).count(kind) for kind in set(wrong.values())}
    assert v1["total"]["anomalies"] == kinds

    replay(settings, "v1-serveur")
    serveur = read(settings)
    assert serveur["formule"] == "v1-serveur"
    by_id = {e["id"]: e for e in events}
    delta_evites = sum(3 for i, k in wrong.items() if k == "evites")
    delta_pilotage = sum(7 for i, k in wrong.items()
                         if k == "cout" and by_id[i]["type"] == "pilotage")
    delta_corrections = sum(1 for i, k in wrong.items()
                            if k == "cout" and by_id[i]["type"] == "correction")
    assert serveur["total"]["evites"] == v1["total"]["evites"] + delta_evites
    assert serveur["total"]["pilotage"] == v1["total"]["pilotage"] - delta_pilotage
    assert serveur["total"]["corrections"] == v1["total"]["corrections"] - delta_corrections
    assert serveur["total"]["anomalies"] == kinds  # anomalies do not depend on the formula


def test_compare_is_a_dry_run_that_shows_each_formula(tmp_path: Path) -> None:
    settings = Settings(data=tmp_path / "data", token=TOKEN, fuseau="UTC")
    load(settings, EXAMPLE_BATCH["evenements"])
    before = read(settings)
    result = compare(settings, ["v1", "pondere-v1"], par="modele")
    cell = result["groupes"]["claude-haiku-5-5"]["claude-code"]
    assert cell["v1"]["pilotage"] == 2000
    assert cell["pondere-v1"]["pilotage"] == 800 + 5 * 200 + 10_000 // 10
    assert cell["v1"]["usd"] is None  # claude-haiku-5-5 has no known price
    clients = compare(settings, ["v1", "pondere-v1"])["groupes"]["claude-code"]["claude-code"]
    assert clients["pondere-v1"]["evites"] == 4000 + 5 * 900
    after = read(settings)
    assert after["formule"] == "v1" and after["economies"] == before["economies"]


def test_an_interrupted_replay_resumes_from_its_own_position(tmp_path: Path) -> None:
    from projections.bilan import projection_name

    settings = Settings(data=tmp_path / "data", token=TOKEN, fuseau="UTC")
    events = generate(2_000, seed=3)
    load(settings, events)
    with open_services(settings, run_projections=False) as services:
        from api.replay import _formule  # the replay's own pieces, stopped after one page
        from projections.bilan import BilanProjection
        from projections.runner import CatchUpRunner

        view = services.projection.view
        current = view.settings_of(services.projection.tracking_name)
        assert current is not None
        name = projection_name("pondere-v1", "UTC")
        view.record_settings(name, current.__class__(**{**current.__dict__,
                                                       "formule": "pondere-v1"}))
        partial = BilanProjection(view, services.projection.zone, _formule("pondere-v1"))
        CatchUpRunner(services.store.recorder, services.store.mapper, partial).fold_page()
        assert partial.position() == 500
        assert view.active() != name  # never exposed half-built
    folded: list[int] = []
    replay(settings, "pondere-v1", progress=lambda done, total: folded.append(done))
    assert folded[0] == 1_000  # went on from 500, one page at a time
    assert read(settings)["provenance"]["evenements"] == len(events)


def test_a_replay_while_a_client_posts_loses_nothing(tmp_path: Path) -> None:
    server = LiveServer(tmp_path / "data", env={"MIAM_ECONOMIES_TZ": "UTC"})
    server.start()
    try:
        first, later = generate(6_000, seed=4), generate(3_000, seed=5)
        for batch in batches(first, random.Random(1)):
            assert server.post({"evenements": batch}).status_code == 200
        server.bilan()
        stop = threading.Event()
        answers: list[int] = []

        def post_meanwhile() -> None:
            for batch in batches(later, random.Random(2), largest=50):
                answers.append(server.post({"evenements": batch}).status_code)
            stop.set()

        poster = threading.Thread(target=post_meanwhile)
        poster.start()
        done = subprocess.run([str(SCRIPT), "replay", "--data", str(server.data),
                               "--formule", "pondere-v1"], capture_output=True, text=True,
                              timeout=300)
        poster.join()
        assert done.returncode == 0, done.stderr
        assert set(answers) == {200}
        bilan = server.bilan()  # the server followed the switch without restart
        assert bilan["formule"] == "pondere-v1"
        ids = {e["id"] for e in first} | {e["id"] for e in later}
        assert bilan["conservation"]["stockes"] == bilan["conservation"]["comptes"] == len(ids)
        assert bilan["total"]["delegations"] == sum(
            1 for e in {e["id"]: e for e in first + later}.values()
            if e["type"] == "delegation")
    finally:
        server.stop()
        server.client.close()


def test_conflicting_resends_are_counted_not_merged(tmp_path: Path) -> None:
    settings = Settings(data=tmp_path / "data", token=TOKEN, fuseau="UTC")
    load(settings, EXAMPLE_BATCH["evenements"])
    changed = copy.deepcopy(EXAMPLE_BATCH)
    changed["evenements"][0]["tokens_entree"] = 1
    same_again = copy.deepcopy(EXAMPLE_BATCH)
    same_again["evenements"][0] = json.loads(json.dumps(same_again["evenements"][0],
                                                        sort_keys=True))  # key order only
    with open_services(settings, run_projections=False) as services:
        assert services.store.append(validate_batch(changed)).conflits == 1
        assert services.store.append(validate_batch(same_again)).conflits == 0
        assert services.store.append(validate_batch(changed)).conflits == 1
    bilan = read(settings)
    assert bilan["economies"]["claude-code"]["conflits"] == 1
    assert bilan["economies"]["claude-code"]["net"] == 2900  # the first version kept
    assert bilan["conservation"]["stockes"] == bilan["conservation"]["comptes"] == 3


def test_the_cli_lists_anomalies_and_refuses_an_unknown_formula(tmp_path: Path) -> None:
    settings = Settings(data=tmp_path / "data", token=TOKEN, fuseau="UTC")
    bad = copy.deepcopy(EXAMPLE_BATCH["evenements"])
    bad[1]["cout"] = 1999
    bad[0]["par_subagent"] = False
    load(settings, bad)
    lines = subprocess.run([str(SCRIPT), "anomalies", "--data", str(settings.data), "--json"],
                           check=True, capture_output=True, text=True).stdout.splitlines()
    assert [json.loads(line)["anomalies"] for line in lines] == [["par_subagent"], ["cout"]]
    unknown = subprocess.run([str(SCRIPT), "replay", "--data", str(settings.data),
                              "--formule", "v9"], capture_output=True, text=True)
    assert unknown.returncode == 1 and "v1-serveur" in unknown.stderr
    table = subprocess.run([str(SCRIPT), "compare", "--data", str(settings.data),
                            "--formules", "v1,v1-serveur"],
                           check=True, capture_output=True, text=True).stdout
    assert "-1" in table  # v1-serveur recomputes the cout: 2000, not 1999, so net is 1 less
    with pytest.raises(ValueError):
        compare(settings, ["v1"], par="demande")
