"""Issue 24, point 1: under a weighted formula the report gives the saving in USD beside
tokens, and its per-model chart can be read in USD (ADR-0130), in the page's data, its
HTML and a real headless Chromium (Debian's ``chromium``)."""

from __future__ import annotations

import json
import re
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest

from miam_economies.api.http.report import render_html
from miam_economies.api.service.answers import bilan_answer
from miam_economies.api.service.replay import replay
from miam_economies.api.service.report import report_data
from miam_economies.api.service.services import Services
from miam_economies.domain.acceptance import accept_batch
from miam_economies.domain.formulas import PONDERE_V2
from tests.integration.test_report import (
    CHROMIUM,
    CORPUS,
    EXAMPLE_DAY,
    SCRIPT,
    assert_self_contained,
    card_text,
    load_example,
)


def test_under_pondere_v2_the_report_gives_the_saving_in_usd(services: Services) -> None:
    load_example(services)
    # v1 counts tokens: no price, no amount at a reference price, the page says tokens.
    tokens = report_data(services, today=EXAMPLE_DAY)
    assert tokens["prix"] is None
    assert "en_usd" not in tokens["periode"] and "en_usd" not in tokens["aujourd_hui"]
    assert all("en_usd" not in m for m in tokens["modeles"])
    page = render_html(tokens)
    assert not re.search(r"\$\d", page) and 'id="cout-par-modele-usd"' not in page
    assert "Figures are tokens" in page
    assert card_text(page, "net-periode").endswith("2,410")  # 4,900 - 2,000 - 490

    replay(services.settings, "pondere-v2", fuseau="UTC")
    data = report_data(services, today=EXAMPLE_DAY)
    # By hand, in input tokens of claude-sonnet-4-5 (a written token weighs 5), at $3 per
    # million: evites 4,000 + 5 x 900 = 8,500 = $0.0255; pilotage, Haiku 5.5 at 0.10 /
    # 0.50 / 0.01 USD per million, (800 x 0.10 + 200 x 0.50 + 10,000 x 0.01) / 3 = 93.3,
    # rounded: 93 = $0.000279; corrections 5 x 490 = 2,450 = $0.00735; net 8,500 - 93 -
    # 2,450 = 5,957 = $0.017871.
    usd = {"evites": "0.0255", "pilotage": "0.000279", "corrections": "0.00735",
           "net": "0.017871"}
    periode = data["periode"]
    assert (periode["evites"], periode["pilotage"], periode["corrections"],
            periode["net"]) == (8500, 93, 2450, 5957)
    assert periode["en_usd"] == usd
    assert data["aujourd_hui"] == {"jour": EXAMPLE_DAY, "net": 5957, "en_usd": usd,
                                   "est_aujourd_hui": True}
    assert report_data(services, today="2026-10-31")["aujourd_hui"]["en_usd"]["net"] == "0.00"
    assert PONDERE_V2.prix is not None
    assert data["prix"] == {"modele_reference": "claude-sonnet-4-5",
                            "usd_par_million": "3.00", "source": PONDERE_V2.prix.source,
                            "sha256": None}
    # The model's pilotage at the reference price, exact, beside its own prices' float
    # (Haiku 5.5: 800 x 0.10 + 200 x 0.50 + 10,000 x 0.01 = 280 micro-dollars).
    assert data["modeles"] == [{"modele": "claude-haiku-5-5", "pilotage": 93, "tours": 1,
                                "usd": 0.00028, "en_usd": {"pilotage": "0.000279"}}]
    assert json.loads(json.dumps(data))["periode"]["en_usd"] == usd  # text survives JSON

    page = render_html(data)
    assert card_text(page, "net-periode").endswith("5,957 tokens · $0.017871")
    assert card_text(page, "net-aujourd-hui").endswith("5,957 tokens · $0.017871")
    assert "$0.0255 · $0.000279 · $0.00735" in card_text(page, "flux-periode")
    assert ("at claude-sonnet-4-5's prices (genai-prices" in page
            and "$3.00 per million input tokens" in page)
    chart = re.search(r'<figure class="chart" id="cout-par-modele-usd">(.*?)</figure>',
                      page, re.S)
    assert chart is not None and ">$0.000279<" in chart.group(1)  # the bar's exact label
    assert re.search(r"<td>claude-haiku-5-5</td>.*?<td>\$0\.000279</td>", page)
    assert_self_contained(page)


def test_the_amounts_in_usd_are_the_figures_at_the_reference_price(
        services: Services) -> None:
    for i in range(0, len(CORPUS), 500):
        services.store.append(accept_batch({"evenements": CORPUS[i:i + 500]}))
    services.runner.catch_up()
    replay(services.settings, "pondere-v2", fuseau="UTC")
    data = report_data(services)
    rate = Decimal(data["prix"]["usd_par_million"])
    total = bilan_answer(services.bilan())["total"]
    for name in ("evites", "pilotage", "corrections", "net"):
        assert data["periode"][name] == total[name]  # unbounded: all time
        # Recomputed in decimal arithmetic, independently of domain.argent's fractions.
        assert Decimal(data["periode"]["en_usd"][name]) == total[name] * rate / 10**6
    for model in data["modeles"]:
        assert Decimal(model["en_usd"]["pilotage"]) == model["pilotage"] * rate / 10**6
    assert sum(Decimal(m["en_usd"]["pilotage"]) for m in data["modeles"]) == Decimal(
        data["periode"]["en_usd"]["pilotage"])  # conservation, in USD too
    assert data["periode"]["en_usd"]["net"] == total["en_usd"]["net"]


@pytest.mark.skipif(not CHROMIUM.exists(),
                    reason="headless Chromium not installed (apt-get install chromium; "
                           ".ci/run installs it)")
def test_the_chart_in_usd_renders_in_headless_chromium(services: Services,
                                                       tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    load_example(services)
    data = str(services.settings.data)
    # The formula switched by the command, the page written by another: the real path.
    subprocess.run([str(SCRIPT), "replay", "--formule", "pondere-v2", "--fuseau", "UTC",
                    "--data", data], check=True, capture_output=True, timeout=120)
    page_file = tmp_path / "rapport.html"
    subprocess.run([str(SCRIPT), "rapport", "--data", data, "--html", str(page_file)],
                   check=True, capture_output=True, timeout=120)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM),
                                             args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            requested: list[str] = []
            page.on("request", lambda request: requested.append(request.url))
            answer = page.goto(page_file.as_uri())
            assert answer is not None and answer.ok
            assert page.locator("#net-periode .value").inner_text() == (
                "5,957 tokens · $0.017871")
            for chart in ("cout-par-modele", "cout-par-modele-usd"):
                bar = page.locator(f"figure#{chart} g.bar > rect").first.bounding_box()
                assert bar is not None and bar["width"] > 300 and bar["height"] > 0, chart
            assert "$0.000279" in page.locator("figure#cout-par-modele-usd > svg").inner_html()
            assert requested == [page_file.as_uri()]  # nothing else fetched
            page.screenshot(path=str(tmp_path / "rapport-usd.png"), full_page=True)
        finally:
            browser.close()
