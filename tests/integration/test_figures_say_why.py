"""Figures that agree or say why (issue 32, item 3; ADR-0165), on a copy of the fixture
store (anomalies, a conflict, a journal with presets and formats, days with gaps): a
report for a period is the period's wherever the view allows and says "all time" where it
does not, its axis has every day, its headline is the period's last day; the CLI's tables
say what the JSON has and why the classement's taux differs from the bilan's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from miam_economies.api.cli import main
from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.report import report_data
from miam_economies.api.service.results import modeles
from miam_economies.api.service.services import Services
from miam_economies.api.service.settings import Settings
from tests.fixtures.store_ca63dfe.make import fixture_copy

OCTOBER = ("2026-10-01", "2026-10-31")
TODAY = "2026-12-03"


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A copy of the fixture store (the fixture itself stays as made)."""
    return fixture_copy(tmp_path)


@pytest.fixture
def services(data: Path) -> Iterator[Services]:
    with open_services(Settings(data=data), run_projections=False) as opened:
        opened.runner.catch_up()
        yield opened


def test_the_period_has_every_day_on_its_axis(services: Services) -> None:
    october = report_data(services, *OCTOBER, today=TODAY)
    assert [d["jour"] for d in october["jours"]] == [f"2026-10-{d:02d}" for d in range(1, 32)]
    with_events = set(services.bilan("jour", *OCTOBER).groupes())
    assert {"2026-10-12", "2026-10-29", "2026-10-31"}.isdisjoint(with_events)  # gaps
    gap = next(d for d in october["jours"] if d["jour"] == "2026-10-12")
    assert (gap["net"], gap["delegations"], gap["taux_reprise"]) == (0, 0, None)
    everything = report_data(services, today=TODAY)  # unbounded: first to last day
    axis = [d["jour"] for d in everything["jours"]]
    with_any = services.bilan("jour").groupes()
    assert (axis[0], axis[-1]) == (min(with_any), max(with_any)) == ("2026-09-01",
                                                                       "2026-11-28")
    assert len(axis) == len(set(axis)) == 30 + 31 + 28 and "2026-09-02" not in with_any


def test_a_period_bounds_the_clients_the_journal_fields_and_the_models(
        services: Services) -> None:
    october = report_data(services, *OCTOBER, today=TODAY)
    assert october["periode"]["bornee"] is True
    by_day = services.bilan("jour", *OCTOBER)
    for client, figures in by_day.par_client().items():
        row = october["economies"][client]
        assert {k: row[k] for k in figures.as_dict()} == figures.as_dict()
    assert october["total"]["net"] == october["periode"]["net"] == by_day.total_des_lignes().net
    everything = report_data(services, today=TODAY)
    assert october["total"]["net"] != everything["total"]["net"]
    # anomalies and conflicts: the view keeps them all-time only; the page says so
    assert october["anomalies"] == everything["anomalies"] == {"cout": 1}
    assert october["conflits"] == everything["conflits"] == 1
    assert october["classement"] == everything["classement"]
    models = modeles(services.bilan("modele", *OCTOBER, puis="jour"))
    assert [(m["modele"], m["pilotage"], m["tours"]) for m in october["modeles"]] == [
        (m.modele, m.pilotage, m.tours) for m in models]
    assert sum(m["pilotage"] for m in october["modeles"]) == october["periode"]["pilotage"]
    assert sum(m["tours"] for m in october["modeles"]) < sum(
        m["tours"] for m in everything["modeles"])
    presets = services.bilan("preset", *OCTOBER, puis="jour").par_cle()
    for row in october["reprise"]["preset"]:
        assert row["taux_reprise"] == presets[row["valeur"]].taux_reprise
        assert row["evites"] == presets[row["valeur"]].evites


def test_the_headline_is_the_periods_last_day_when_a_period_is_asked(
        services: Services) -> None:
    asked = report_data(services, "2026-10-01", "2026-10-30", today=TODAY)
    assert asked["aujourd_hui"]["jour"] == "2026-10-30"
    assert asked["aujourd_hui"]["est_aujourd_hui"] is False
    assert asked["aujourd_hui"]["net"] == services.bilan("jour", "2026-10-30",
                                                         "2026-10-30").groupe("2026-10-30").net
    assert asked["aujourd_hui"]["net"] != 0
    unbounded = report_data(services, today=TODAY)
    assert unbounded["aujourd_hui"] | {"net": 0} == {"jour": TODAY, "net": 0,
                                                     "est_aujourd_hui": True}
    since = report_data(services, "2026-10-01", today=TODAY)  # runs to today
    assert since["aujourd_hui"]["jour"] == TODAY


def test_the_page_labels_what_the_period_does_not_bound(services: Services) -> None:
    report_page = pytest.importorskip("miam_economies.api.http.report_page")
    page = report_page.render_html(report_data(services, "2026-10-01", "2026-10-30",
                                               today=TODAY))
    assert "Net on the period's last day (2026-10-30)" in page and "Net today" not in page
    assert "Classement: which preset is ahead, and how sure (all time" in page
    assert "Anomalies and conflits (all time" in page
    assert "<th>anomalies (all time)</th>" in page
    for section in ("Taux de reprise per journal field", "Cost per model", "Per client"):
        assert f"{section} (2026-10-01 – 2026-10-30)</h2>" in page, section
    assert "0 en attente" in page and "may differ" in page
    plain = report_page.render_html(report_data(services, today=TODAY))
    assert "all time" not in plain and "Net today (2026-12-03)" in plain


def test_the_cli_tables_say_what_the_json_has_and_why_the_taux_differ(data: Path) -> None:
    runner = CliRunner()
    bilan = runner.invoke(main, ["bilan", "--data", str(data)], catch_exceptions=False)
    assert bilan.exit_code == 0
    assert ("anomalies 1 (cout 1), conflits 1, en_attente 0 (pilotages and corrections "
            "whose delegation has not arrived: counted here, not in the classement)"
            ) in bilan.stdout
    ranked = runner.invoke(main, ["classement", "--data", str(data), "--par", "preset"],
                           catch_exceptions=False)
    assert ranked.exit_code == 0
    assert ("figures: demandes dont la delegation est arrivee (the bilan counts en_attente "
            "too: its taux may differ)") in ranked.stdout
