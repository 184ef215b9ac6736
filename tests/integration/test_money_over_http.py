"""Money and the new breakdowns as a client reads them over HTTP from a real
``miam-economies serve`` (issue 24; ADR-0130, ADR-0131, ADR-0133): the contract's example
under ``pondere-v2`` and under a price file, in USD computed by hand; two dimensions; the
400s naming their parameter."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLE_BATCH, EXAMPLE_CORRECTION, LiveServer

SCRIPT = Path(sys.executable).with_name("miam-economies")

# Sonnet 4.5 at 5/6 of its list prices (the same ratios, so the same weighted tokens for
# delegations and corrections), Haiku 5.5 at genai-prices' own.
PRICE_FILE = """\
# USD per million tokens
reference = "claude-sonnet-4-5"

[modeles.claude-sonnet-4-5]
input = 2.5
output = 12.5
cache_write = 3.125
cache_read = 0.25

[modeles.claude-haiku-5-5]
input = 0.1
output = 0.5
cache_write = 0.125
cache_read = 0.01
"""


def replay(server: LiveServer, *args: str) -> None:
    done = subprocess.run([str(SCRIPT), "replay", "--data", str(server.data), *args],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def get(server: LiveServer, path: str, **params: str) -> Any:
    answer = server.client.get(path, params={**params, "attendre": "1"})
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_the_contract_example_in_usd_under_pondere_v2_and_a_price_file(
        server: LiveServer, tmp_path: Path) -> None:
    server.post(EXAMPLE_BATCH)
    server.post({"evenements": [EXAMPLE_CORRECTION]})
    assert "en_usd" not in server.bilan()["total"]  # v1: tokens only
    replay(server, "--formule", "pondere-v2")
    bilan = get(server, "/economies/bilan")
    assert bilan["formule"] == "pondere-v2"
    # By hand at Sonnet 4.5's $3 (input) and $15 (output) per million: the delegation's
    # 4,000 tokens read and 900 written, $0.012 + $0.0135; the Haiku turn, 93 reference
    # tokens (280 micro-dollars at Haiku's prices, rounded to whole tokens per event);
    # the correction's 490 written tokens, 490 x $15 / 10^6.
    assert bilan["total"]["en_usd"] == {"evites": "0.0255", "pilotage": "0.000279",
                                        "corrections": "0.00735", "net": "0.017871"}
    assert bilan["economies"]["claude-code"]["en_usd"] == bilan["total"]["en_usd"]
    assert bilan["provenance"]["prix"]["modele_reference"] == "claude-sonnet-4-5"
    assert bilan["provenance"]["prix"]["usd_par_million"] == "3.00"
    models = get(server, "/economies/bilan", par="modele")["groupes"]
    haiku = models["claude-haiku-5-5"]["claude-code"]
    assert (haiku["en_usd"]["pilotage"], haiku["usd"]) == ("0.000279", 0.00028)
    table = subprocess.run([str(SCRIPT), "bilan", "--data", str(server.data), "--par",
                            "modele"], capture_output=True, text=True, timeout=60)
    # The Haiku turn: its pilotage at its own prices, and at Sonnet 4.5's (the formula's).
    assert "pilotage USD" in table.stdout and "$0.000279" in table.stdout
    assert "$0.000280" in table.stdout and "net USD" not in table.stdout
    classement = get(server, "/economies/classement", par="client", min="1")
    (groupe,) = classement["groupes"]
    assert groupe["en_usd"]["net"] == "0.017871"
    assert groupe["en_usd"]["net_par_demande"] == "0.017871"  # one demande
    assert classement["prix"] == bilan["provenance"]["prix"]

    prices = tmp_path / "mes-prix.toml"
    prices.write_text(PRICE_FILE)
    replay(server, "--formule", "mes-prix", "--tarifs", str(prices))
    bilan = get(server, "/economies/bilan")
    assert bilan["formule"] == "mes-prix"
    assert bilan["provenance"]["prix"]["sha256"] == hashlib.sha256(
        prices.read_bytes()).hexdigest()
    assert bilan["provenance"]["prix"]["usd_par_million"] == "2.50"
    # 8,500 and 2,450 reference tokens as before, at $2.50 per million; the Haiku turn,
    # 280 / 2.5 = 112 reference tokens, $0.00028.
    assert (bilan["total"]["evites"], bilan["total"]["pilotage"]) == (8500, 112)
    assert bilan["total"]["en_usd"] == {"evites": "0.02125", "pilotage": "0.00028",
                                        "corrections": "0.006125", "net": "0.014845"}


def test_two_dimensions_and_periods_over_http(server: LiveServer) -> None:
    server.post(EXAMPLE_BATCH)
    server.post({"evenements": [EXAMPLE_CORRECTION]})
    server.bilan()
    weeks = get(server, "/economies/bilan", par="preset", puis="semaine")
    assert weeks["puis"] == "semaine"
    cell = weeks["groupes"]["(inconnu)"]["2026-W44"]["claude-code"]  # no journal line
    assert (cell["evites"], cell["pilotage"], cell["corrections"]) == (4900, 2000, 490)
    by_month = get(server, "/economies/bilan", par="mois", depuis="2026-10-01",
                   jusqu_au="2026-10-31")
    assert by_month["groupes"]["2026-10"]["claude-code"]["net"] == 2410
    assert get(server, "/economies/bilan", par="mois", depuis="2026-11-01")["groupes"] == {}
    model_days = get(server, "/economies/bilan", par="modele", puis="jour")
    assert model_days["groupes"]["claude-haiku-5-5"]["2026-10-30"]["claude-code"][
        "tours"] == 1


@pytest.mark.parametrize(("params", "named"), [
    ({"puis": "jour"}, "puis"),
    ({"par": "preset", "puis": "journal.preset"}, "puis"),
    ({"par": "modele", "puis": "preset"}, "puis"),
    ({"par": "preset", "depuis": "2026-10-01"}, "depuis"),
    ({"par": "semaine", "jusqu_au": "2026-02-30"}, "jusqu_au"),
    ({"par": "semaine", "format": "xml"}, "format"),
])
def test_bad_breakdowns_get_a_400_naming_the_parameter(server: LiveServer,
                                                       params: dict[str, str],
                                                       named: str) -> None:
    answer = server.client.get("/economies/bilan", params=params)
    assert answer.status_code == 400
    assert answer.json()["erreur"].startswith(named)
