"""Issue 8, "A report people would rather look at than read": ``GET /economies/rapport``
and ``miam-economies rapport --html`` give one self-contained page whose charts render in
a real headless Chromium (Debian's ``chromium``; ``.ci/run`` installs it). The money under
a weighted formula: ``test_report_money.py``."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from miam_economies.api.service.answers import bilan_answer, classement_answer
from miam_economies.api.service.report import report_data
from miam_economies.api.service.services import Services
from miam_economies.domain.acceptance import accept_batch
from miam_economies.domain.verdict_words import lettres, phrases
from tests.conftest import EXAMPLE_BATCH, EXAMPLE_CORRECTION, TOKEN, LiveServer
from tests.corpus import generate, journal_lines

SCRIPT = Path(sys.executable).with_name("miam-economies")
CHROMIUM = Path("/usr/bin/chromium")
CHARTS = ("net-par-jour", "flux-par-jour", "reprise-preset", "reprise-format",
          "cout-par-modele")
CORPUS = generate(600, seed=21)
EXAMPLE_DAY = "2026-10-30"
"""The day of the contract's example (its delegation, pilotage and correction, in UTC)."""


def todays_example() -> dict[str, Any]:
    """The contract's example batch, dated now: today's net is its 2,900 tokens."""
    now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    batch = copy.deepcopy(EXAMPLE_BATCH)
    for event in batch["evenements"]:
        event["date"] = now
    return batch


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A server holding a small corpus with MIAM's journal beside it, and today's example."""
    data = tmp_path_factory.mktemp("rapport") / "data"
    data.mkdir()
    (data / "delegations.jsonl").write_text("\n".join(journal_lines(CORPUS, seed=2)) + "\n")
    server = LiveServer(data)
    server.start()
    try:
        for i in range(0, len(CORPUS), 500):
            assert server.post({"evenements": CORPUS[i:i + 500]}).status_code == 200
        assert server.post(todays_example()).json()["recus"] == 2
        server.bilan()
        yield server
    finally:
        server.stop()
        server.client.close()


def load_example(services: Services) -> None:
    """The contract's example batch and the README's correction, folded."""
    services.store.append(accept_batch(
        {"evenements": [*EXAMPLE_BATCH["evenements"], EXAMPLE_CORRECTION]}))
    services.runner.catch_up()


def card_text(page: str, card: str) -> str:
    """The text of the headline card with id ``card``, tags dropped, spaces collapsed."""
    found = re.search(rf'<div class="card" id="{card}">(.*?)\n  </div>', page, re.S)
    assert found is not None, card
    return " ".join(re.sub(r"<[^>]+>", " ", found.group(1)).split())


def assert_self_contained(page: str) -> None:
    """No script to fetch, no stylesheet or image to load, a CSP forbidding any fetch."""
    assert "default-src 'none'" in page
    assert not re.search(r"<script\b|<link\b|\bsrc=|\bhref=|url\(", page)
    for chart in CHARTS:
        assert f'id="{chart}"' in page


def test_the_report_is_behind_the_token_and_self_contained(loaded: LiveServer) -> None:
    assert httpx.get(loaded.url + "/economies/rapport").status_code == 401
    response = loaded.client.get("/economies/rapport")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert_self_contained(response.text)
    assert re.search(r'id="net-aujourd-hui">.*?2,900</div>', response.text, re.S)


def test_unsound_bounds_are_a_400_and_change_nothing(loaded: LiveServer) -> None:
    head = httpx.get(loaded.url + "/healthz").json()["tete"]
    for params in ({"depuis": "2026-02-30"}, {"depuis": "2026-10-02", "jusqu_au": "2026-10-01"}):
        refused = loaded.client.get("/economies/rapport", params=params)
        assert refused.status_code == 400 and refused.json()["ok"] is False
    assert httpx.get(loaded.url + "/healthz").json()["tete"] == head


def test_the_cli_writes_the_same_page_for_a_period(loaded: LiveServer, tmp_path: Path) -> None:
    out = tmp_path / "rapport.html"
    subprocess.run([str(SCRIPT), "rapport", "--data", str(loaded.data), "--html", str(out),
                    "--depuis", "2026-10-01", "--jusqu-au", "2026-10-31"], check=True,
                   capture_output=True, timeout=120)
    page = out.read_text()
    assert out.stat().st_mode & 0o777 == 0o600  # figures and session ids: owner only
    assert_self_contained(page)
    assert "2026-10-01 – 2026-10-31" in page
    bounded = loaded.client.get("/economies/bilan", params={
        "par": "jour", "depuis": "2026-10-01", "jusqu_au": "2026-10-31"}).json()
    net = sum(f["net"] for clients in bounded["groupes"].values() for f in clients.values())
    assert re.search(rf'id="net-periode">.*?{net:,}</div>', page, re.S)


def test_the_report_figures_add_up(services: Services) -> None:
    journal = journal_lines(CORPUS, seed=2)
    (services.settings.data / "delegations.jsonl").write_text("\n".join(journal) + "\n")
    for i in range(0, len(CORPUS), 500):
        services.store.append(accept_batch({"evenements": CORPUS[i:i + 500]}))
    services.runner.catch_up()
    data = report_data(services)
    total = bilan_answer(services.bilan())["total"]
    assert data["periode"]["net"] == total["net"]  # unbounded: the period is all time
    assert sum(d["net"] for d in data["jours"]) == total["net"]
    assert [d["jour"] for d in data["jours"]] == sorted(d["jour"] for d in data["jours"])
    for field in ("preset", "format"):
        rates = [r["taux_reprise"] for r in data["reprise"][field]]
        assert rates and rates == sorted(rates, reverse=True)
    assert sum(m["pilotage"] for m in data["modeles"]) == total["pilotage"]
    for field in ("preset", "format"):  # the journal has both
        assert data["classement"][field] == classement_answer(services.classement(field))
    assert json.dumps(data)  # JSON-ready


@pytest.mark.skipif(not CHROMIUM.exists(),
                    reason="headless Chromium not installed (apt-get install chromium; "
                           ".ci/run installs it)")
def test_every_chart_renders_in_headless_chromium(loaded: LiveServer, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    page_file = tmp_path / "rapport.html"
    subprocess.run([str(SCRIPT), "rapport", "--data", str(loaded.data), "--html",
                    str(page_file)], check=True, capture_output=True, timeout=120)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM),
                                             args=["--no-sandbox"])
        try:
            context = browser.new_context(
                viewport={"width": 1100, "height": 900},
                extra_http_headers={"Authorization": f"Bearer {TOKEN}"})
            for name, url in (("fichier", page_file.as_uri()),
                              ("serveur", loaded.url + "/economies/rapport")):
                page = context.new_page()
                requested: list[str] = []
                page.on("request", lambda request, seen=requested: seen.append(request.url))
                answer = page.goto(url)
                assert answer is not None and answer.ok, name
                for chart in CHARTS:
                    svg = page.locator(f"figure#{chart} > svg")
                    assert svg.count() == 1, (name, chart)
                    box = svg.bounding_box()
                    assert box is not None and box["width"] > 300 and box["height"] > 100
                    bars = page.locator(f"figure#{chart} g.bar > rect")
                    assert bars.count() >= 1, (name, chart)
                    bar = bars.first.bounding_box()
                    assert bar is not None and bar["width"] > 0 and bar["height"] > 0
                # The classement by taux: a line per interval (an arrow where it has no
                # high end), a dot per group with a taux, the letters of the groups not
                # told apart, a sentence per verdict, one table row per group, in the
                # order of the document.
                document = loaded.client.get("/economies/classement",
                                             params={"par": "preset"}).json()
                ranked = document["groupes"]
                assert len(ranked) >= 4
                dots = page.locator("figure#classement-preset > svg g.groupe circle")
                assert dots.count() == sum(1 for g in ranked if g["taux_reprise"] is not None)
                lines = page.locator("figure#classement-preset > svg line.intervalle")
                assert lines.count() == sum(
                    1 for g in ranked if g["intervalle_taux_reprise"]), name
                arrows = page.locator("figure#classement-preset > svg path.ouvert")
                assert arrows.count() == sum(1 for g in ranked if g["intervalle_taux_reprise"]
                                             and g["intervalle_taux_reprise"][1] is None)
                named = [g["cle"] for g in ranked if g["rang"] is not None]
                letters = page.locator("figure#classement-preset > svg text.lettres")
                assert letters.all_text_contents() == [
                    lettres(named, document["comparaisons"]).get(g["cle"], "")
                    for g in ranked], name
                sentences = page.locator("#classement-preset-verdicts li")
                assert sentences.all_inner_texts() == phrases(named,
                                                              document["comparaisons"])
                first = lines.first.bounding_box()
                assert first is not None and first["width"] > 1, name
                cells = page.locator("#classement-preset-table tbody tr td:first-child")
                assert cells.all_inner_texts() == [g["cle"] for g in ranked], name
                assert page.locator("#net-aujourd-hui .value").inner_text() == "2,900"
                assert requested == [url], (name, requested)  # nothing else fetched
                page.screenshot(path=str(tmp_path / f"rapport-{name}.png"), full_page=True)
                page.locator("figure#classement-preset").screenshot(
                    path=str(tmp_path / f"classement-{name}.png"))
                assert (tmp_path / f"classement-{name}.png").stat().st_size > 5_000
                assert (tmp_path / f"rapport-{name}.png").stat().st_size > 10_000
                page.close()
        finally:
            browser.close()


def test_a_classement_without_any_taux_still_draws() -> None:
    # Every group's evites <= 0: no taux, no interval, no dot; the chart draws its rows.
    from miam_economies.api.http.report_page import interval_chart

    document = {"critere": "taux_reprise", "comparaisons": [], "groupes": [
        {"cle": cle, "demandes": 3, "rang": None, "taux_reprise": None,
         "intervalle_taux_reprise": None, "suffisant": False} for cle in ("a", "b")]}
    svg = str(interval_chart(document, "preset"))
    assert svg.count('class="groupe"') == 2 and "no taux" in svg and "<circle" not in svg


def test_an_unranked_group_is_labelled_without_a_rank() -> None:
    # "(inconnu)" and groups under the minimum have no rang: no "-. " before their name.
    from miam_economies.api.http.report_page import interval_chart

    document = {"critere": "taux_reprise", "comparaisons": [], "groupes": [
        {"cle": cle, "demandes": 3, "rang": rang, "taux_reprise": None,
         "intervalle_taux_reprise": None, "suffisant": False}
        for cle, rang in (("rapide", 1), ("(inconnu)", None))]}
    svg = str(interval_chart(document, "preset"))
    assert ">1. rapide (3)</text>" in svg and ">(inconnu) (3)</text>" in svg

