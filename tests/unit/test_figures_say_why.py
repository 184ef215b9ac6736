"""Figures that agree or say why (issue 32, item 3; ADR-0165), the pure parts: the
classement's answer says what its figures count, the bilan table's line of checks says
what the JSON has beside the figures, the report's axis has every day of its period, and
a day that lost tokens is drawn red."""

from __future__ import annotations

import re

import pytest

from miam_economies.api.service.answers import PERIMETRE, classement_answer
from miam_economies.api.service.report import days
from miam_economies.api.service.results import BilanLu, ClassementLu
from miam_economies.domain.bilan import Figures
from miam_economies.projections.view import BilanSnapshot


def test_the_classement_says_what_its_figures_count() -> None:
    answer = classement_answer(ClassementLu("preset", "v1", 0, 30, "taux", [], [], 0))
    assert answer["perimetre"] == PERIMETRE == "demandes dont la delegation est arrivee"
    assert list(answer)[:6] == ["par", "formule", "position", "min", "critere", "perimetre"]


def test_the_bilan_tables_checks_line_has_what_the_json_has() -> None:
    from miam_economies.api.cli.reading import _checks_line

    snapshot = BilanSnapshot("v1", 9, 9, {"a": Figures(1, 10, 2, 1), "b": Figures()},
                             en_attente=3, anomalies={"a": {"cout": 2}, "b": {"cout": 1,
                                                                            "evites": 4}},
                             conflits={"a": 1, "b": 2})
    line = _checks_line(BilanLu(snapshot, 9, 9, "2026-12-03T00:00:00.000Z"))
    assert line.startswith("anomalies 7 (cout 3, evites 4), conflits 3, en_attente 3 ")
    assert "not in the classement" in line
    empty = _checks_line(BilanLu(BilanSnapshot("v1", 0, 0, {}), 0, 0, "x"))
    assert empty.startswith("anomalies 0, conflits 0, en_attente 0 ")


def test_the_axis_has_every_day_of_the_period() -> None:
    assert days("2026-10-30", "2026-11-02") == ["2026-10-30", "2026-10-31", "2026-11-01",
                                                "2026-11-02"]
    assert days("2028-02-28", "2028-03-01") == ["2028-02-28", "2028-02-29", "2028-03-01"]
    assert days("2026-10-30", "2026-10-30") == ["2026-10-30"]
    assert days("2026-10-31", "2026-10-30") == []


def _data(nets: list[int]) -> dict[str, object]:
    jours = [{"jour": f"2026-10-{i + 1:02d}", **Figures(evites=max(n, 0),
                                                       pilotage=max(-n, 0)).as_dict()}
             for i, n in enumerate(nets)]
    return {"jours": jours, "reprise": {"preset": [], "format": []}, "modeles": [],
            "prix": None, "classement": {}}


def test_a_day_that_lost_tokens_is_drawn_red_and_a_day_that_gained_green() -> None:
    report_page = pytest.importorskip("miam_economies.api.http.report_page")
    svg = str(report_page.charts(_data([500, -300, 0, -20]))["net-par-jour"])
    red = re.findall(rf'<g class="bar" style="fill: {report_page.LOSS}', svg)
    assert len(red) == 2  # the two negative days, and only those
    bars = re.findall(r'<g class="bar"', svg)
    assert len(bars) == 4  # every day has its bar, a zero day included
    assert report_page.GAIN != report_page.LOSS


def test_a_period_past_two_years_leaves_out_its_empty_ends() -> None:
    from miam_economies.api.service.report import MAX_AXIS_DAYS, axis

    events = ["2026-10-02", "2026-10-05"]
    assert axis("2026-10-01", "2026-10-31", events, "2026-12-03") == days("2026-10-01",
                                                                          "2026-10-31")
    # A last day after today: today, or the last day with events if later.
    assert axis("2026-10-01", "9999-12-31", events, "2026-10-07")[-1] == "2026-10-07"
    assert axis("1900-01-01", "9999-12-31", events, "2026-12-03") == days("2026-10-02",
                                                                          "2026-10-05")
    far = ["2020-01-01", "2026-10-05"]  # the days with events span more than the bound
    assert axis("2020-01-01", "2026-10-05", far, "2026-12-03") == far
    assert len(axis("2025-01-01", "2026-12-03", [], "2026-12-03")) <= MAX_AXIS_DAYS + 1
    assert axis(None, None, [], "2026-12-03") == []
