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

from miam_economies.api.service.answers import bilan_answer
from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.replay import compare, list_anomalies, replay
from miam_economies.api.service.settings import Settings
from miam_economies.domain.acceptance import accept_batch
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
            services.store.append(accept_batch({"evenements": events[i:i + 500]}))
        services.runner.catch_up()


def read(settings: Settings, par: str | None = None) -> dict[str, Any]:
    # As MIAM reads: no zone of its own, the active projection's.
    with open_services(replace(settings, fuseau=None), run_projections=False) as services:
        services.runner.catch_up()
        return bilan_answer(services.bilan(par))


def test_replay_under_v1_reproduces_the_live_bilan_exactly(tmp_path: Path) -> None:
    settings = Settings(data=tmp_path / "data", token=TOKEN, fuseau="Europe/Paris")
    events, _ = corrupted_corpus(3_000, seed=1)
    load(settings, events)
    pars = ("jour", "modele", "demande")
    live = {par: read(settings, par) for par in pars}
    pages: list[int] = []
    replay(settings, "v1", fuseau="UTC", progress=lambda done, total: pages.append(done),
           page_size=500)
    assert pages and pages[0] == 500  # a new projection: folded from the first event
    moved = read(settings)
    assert moved["provenance"]["fuseau"] == "UTC"
    for key in ("economies", "total", "conservation"):
        assert moved[key] == live["jour"][key], key
    # Rebuild the first projection from scratch (it no longer serves), and switch back.
    pages.clear()
    replay(settings, "v1", fuseau="Europe/Paris", reconstruire=True,
           progress=lambda done, total: pages.append(done), page_size=500)
    assert pages and pages[0] == 500
    for par, before in live.items():
        after = read(settings, par)
        for key in ("economies", "total", "groupes", "conservation"):
            assert after[key] == before[key], (par, key)


def test_the_projection_that_serves_cannot_be_rebuilt_in_place(tmp_path: Path) -> None:
    from miam_economies.api.service.replay import ReplayRefused

    settings = Settings(data=tmp_path / "data", token=TOKEN, fuseau="UTC")
    load(settings, EXAMPLE_BATCH["evenements"])
    with pytest.raises(ReplayRefused):
        replay(settings, "v1", reconstruire=True)


def test_a_new_explicit_zone_is_built_before_it_serves(tmp_path: Path) -> None:
    data = tmp_path / "data"
    load(Settings(data=data, token=TOKEN), generate(1_500, seed=8))  # the machine's zone
    with open_services(Settings(data=data, token=TOKEN, fuseau="Asia/Tokyo"),
                       run_projections=False) as services:
        assert services.projection.zone.key == "Asia/Tokyo"
        assert services.projection.position() == services.store.head()  # never half-built


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
    # claude-haiku-5-5 at its list prices (domain.tarifs_v2, ADR-0071), whatever the
    # formula: 800 x 0.10 + 200 x 0.50 + 10,000 x 0.01 micro-dollars. Before issue 15 the
    # table stopped at the 4.5 models and this was null.
    assert cell["v1"]["usd"] == cell["pondere-v1"]["usd"] == 0.00028
    clients = compare(settings, ["v1", "pondere-v1"])["groupes"]["claude-code"]["claude-code"]
    assert clients["pondere-v1"]["evites"] == 4000 + 5 * 900
    after = read(settings)
    assert after["formule"] == "v1" and after["economies"] == before["economies"]


@pytest.mark.parametrize("par", ["jour", "modele"])
def test_compare_sorts_the_clients_of_each_group_too(tmp_path: Path, par: str) -> None:
    # Clients stored in the order "zz", "aa": the answer lists them by name.
    settings = Settings(data=tmp_path / "data", token=TOKEN, fuseau="UTC")
    batch = copy.deepcopy(EXAMPLE_BATCH["evenements"])
    other = copy.deepcopy(batch)
    for events, client in ((batch, "zz"), (other, "aa")):
        for e in events:
            e["client"] = client
            e["id"] = client + e["id"].removeprefix("claude-code")
    load(settings, batch + other)
    groupes = compare(settings, ["v1"], par=par)["groupes"]
    assert groupes and all(list(cells) == sorted(cells) for cells in groupes.values())
    assert any(len(cells) == 2 for cells in groupes.values())


def test_an_interrupted_replay_resumes_from_its_own_position(tmp_path: Path) -> None:
    from miam_economies.api.service.serving import build_projection
    from miam_economies.projections.projection import projection_name

    settings = Settings(data=tmp_path / "data", token=TOKEN, fuseau="UTC")
    events = generate(2_000, seed=3)
    load(settings, events)
    name = projection_name("pondere-v1", "UTC")
    with open_services(settings, run_projections=False) as services:
        view = services.projection.view
        current = view.settings_of(services.projection.tracking_name)
        assert current is not None
        view.record_settings(name, replace(current, formule="pondere-v1"))

        def interrupt(done: int, total: int) -> None:
            raise KeyboardInterrupt  # the user's Ctrl-C after the first page

        with pytest.raises(KeyboardInterrupt):
            build_projection(services.store, view, name, interrupt, page_size=500,
                             data=settings.data)
        assert view.max_tracking_id(name) == 500
        assert view.active() != name
    folded: list[int] = []
    replay(settings, "pondere-v1", progress=lambda done, total: folded.append(done),
           page_size=500)
    assert folded[0] == 1_000  # went on from 500, one page at a time
    assert read(settings)["provenance"]["evenements"] == len(events)


def test_a_replay_while_a_client_posts_loses_nothing(tmp_path: Path) -> None:
    import time

    server = LiveServer(tmp_path / "data", env={"MIAM_ECONOMIES_TZ": "UTC"})
    server.start()
    try:
        first, later = generate(6_000, seed=4), generate(3_000, seed=5)
        for batch in batches(first, random.Random(1)):
            assert server.post({"evenements": batch}).status_code == 200
        stored_before = server.bilan()["provenance"]["tete"]
        stop = threading.Event()
        posts: list[tuple[float, int]] = []
        reads: list[dict[str, Any]] = []

        def post_meanwhile() -> None:
            for batch in batches(later, random.Random(2), largest=20):
                posts.append((time.monotonic(),
                              server.post({"evenements": batch}).status_code))

        def read_meanwhile() -> None:
            while not stop.is_set():
                reads.append(server.client.get("/economies/bilan").json())

        threads = [threading.Thread(target=post_meanwhile),
                   threading.Thread(target=read_meanwhile)]
        for t in threads:
            t.start()
        started = time.monotonic()
        done = subprocess.run([str(SCRIPT), "replay", "--data", str(server.data),
                               "--formule", "pondere-v1"], capture_output=True, text=True,
                              timeout=300)
        ended = time.monotonic()
        threads[0].join()
        stop.set()
        threads[1].join()
        assert done.returncode == 0, done.stderr
        assert {status for _, status in posts} == {200}
        assert any(started <= at <= ended for at, _ in posts)  # posted during the replay
        # Never half-built: the new formula, when first served, held every event stored
        # before the replay started.
        served_new = [r for r in reads if r["formule"] == "pondere-v1"]
        assert all(r["provenance"]["evenements"] >= stored_before for r in served_new)
        bilan = server.bilan()  # the server followed the switch without restart
        assert bilan["formule"] == "pondere-v1"
        ids = {e["id"] for e in first} | {e["id"] for e in later}
        assert bilan["conservation"]["stockes"] == bilan["conservation"]["comptes"] == len(ids)
        dry = compare(Settings(data=server.data, token=TOKEN), ["pondere-v1"])["groupes"]
        for client, figures in bilan["economies"].items():
            expected = dry[client][client]["pondere-v1"]
            assert {k: figures[k] for k in FIGURES} == {k: expected[k] for k in FIGURES}
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
    twice_in_one_batch = {"evenements": changed["evenements"][:1] * 2}
    elsewhere = copy.deepcopy(changed)
    elsewhere["evenements"][0]["client"] = "autre"  # the differing version names a client
    with open_services(settings, run_projections=False) as services:
        assert services.store.append(accept_batch(changed)).conflits == 1
        assert services.store.append(accept_batch(same_again)).conflits == 0
        assert services.store.append(accept_batch(changed)).conflits == 1
        # The answer counts this batch's differing doublons; the bilan, each version once.
        assert services.store.append(accept_batch(twice_in_one_batch)).conflits == 2
        assert services.store.append(accept_batch(elsewhere)).conflits == 1
    bilan = read(settings)
    assert list(bilan["economies"]) == ["claude-code"]  # counted under the kept version's
    assert bilan["economies"]["claude-code"]["conflits"] == 2
    assert bilan["economies"]["claude-code"]["net"] == 2900  # the first version kept
    assert bilan["conservation"]["stockes"] == bilan["conservation"]["comptes"] == 4


def test_the_cli_lists_anomalies_and_refuses_an_unknown_formula(tmp_path: Path) -> None:
    settings = Settings(data=tmp_path / "data", token=TOKEN, fuseau="UTC")
    bad = copy.deepcopy(EXAMPLE_BATCH["evenements"])
    bad[1]["cout"] = 1999
    bad[0]["par_subagent"] = False
    load(settings, bad)
    lines = subprocess.run([str(SCRIPT), "anomalies", "--data", str(settings.data), "--json"],
                           check=True, capture_output=True, text=True).stdout.splitlines()
    assert [json.loads(line)["anomalies"] for line in lines] == [["par_subagent"], ["cout"]]
    assert [json.loads(line)["valeurs"] for line in lines] == [
        {"par_subagent": {"plugin": False, "serveur": True}},
        {"cout": {"plugin": 1999, "serveur": 2000}}]
    table = subprocess.run([str(SCRIPT), "anomalies", "--data", str(settings.data)],
                           check=True, capture_output=True, text=True).stdout
    assert "par_subagent False -> True" in table and "cout 1,999 -> 2,000" in table
    unknown = subprocess.run([str(SCRIPT), "replay", "--data", str(settings.data),
                              "--formule", "v9"], capture_output=True, text=True)
    assert unknown.returncode == 1 and "v1-serveur" in unknown.stderr
    compared = json.loads(subprocess.run(
        [str(SCRIPT), "compare", "--data", str(settings.data), "--formules", "v1,v1-serveur",
         "--json"], check=True, capture_output=True, text=True).stdout)
    cell = compared["groupes"]["claude-code"]["claude-code"]
    # v1-serveur recomputes the pilotage's cout, 2000 not 1999: the net is 1 less.
    assert (cell["v1"]["net"], cell["v1-serveur"]["net"]) == (2901, 2900)
    empty = subprocess.run([str(SCRIPT), "compare", "--data", str(settings.data),
                            "--formules", ","], capture_output=True, text=True)
    assert empty.returncode == 1 and "Traceback" not in empty.stderr
    bad_zone = subprocess.run([str(SCRIPT), "replay", "--data", str(settings.data),
                               "--formule", "v1", "--fuseau", "../etc"],
                              capture_output=True, text=True)
    assert bad_zone.returncode == 2 and "IANA" in bad_zone.stderr
    with pytest.raises(ValueError):
        compare(settings, ["v1"], par="demande")


def test_compare_and_anomalies_write_nothing(tmp_path: Path) -> None:
    import hashlib

    settings = Settings(data=tmp_path / "data", token=TOKEN, fuseau="UTC")
    load(settings, EXAMPLE_BATCH["evenements"])
    files = sorted(settings.data.glob("*.sqlite*"))

    def digest() -> dict[str, str]:
        return {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in files}

    before = digest()
    compare(settings, ["v1", "v1-serveur", "pondere-v1"], par="jour")
    list(list_anomalies(settings))
    assert digest() == before
    (settings.data / "projections.sqlite").unlink()
    compare(settings, ["v1"])
    assert not (settings.data / "projections.sqlite").exists()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_compare_shows_what_a_replay_serves_on_every_breakdown(tmp_path: Path,
                                                               backend: str) -> None:
    # compare folds three sums of its own (ADR-0180): under each formula they are the
    # bilan a replay under it serves, by client, day and model, in the projection's zone.
    from contextlib import nullcontext

    from tests.conftest import fresh_postgres

    with fresh_postgres() if backend == "postgresql" else nullcontext(None) as url:
        settings = Settings(data=tmp_path / "data", token=TOKEN, fuseau="Europe/Paris",
                            database_url=url)
        load(settings, generate(3_000, seed=11))
        for formule in ("v1", "pondere-v2"):
            if formule != "v1":
                replay(settings, formule)
            for par in ("client", "jour", "modele"):
                served = read(settings, par)["groupes"]
                compared = compare(settings, [formule, "v1-serveur"], par)["groupes"]
                assert len(served) > 1 and compared.keys() == served.keys()
                # A priced formula's bilan adds its money (en_usd...): compare shows the
                # figures of every formula.
                assert {k: {c: cells[formule] for c, cells in by_client.items()}
                        for k, by_client in compared.items()} == {
                    k: {c: {f: figures[f] for f in (*FIGURES, "usd", "tours", "usage")
                            if f in figures}
                        for c, figures in by_client.items()}
                    for k, by_client in served.items()}
