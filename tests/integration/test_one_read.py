"""Issue 32, item 2 (ADR-0163): one answer is one projection in one read. A replay that
switches the serving projection while an answer is being read (a report: ten reads) never
pairs one formula's figures with another's price, on either backend."""

from __future__ import annotations

from typing import Any

import pytest

from miam_economies.api.service.lecture import Lecture
from miam_economies.api.service.replay import replay
from miam_economies.api.service.report import report_data
from miam_economies.api.service.results import BilanLu
from miam_economies.api.service.services import Services
from tests.integration.test_report import EXAMPLE_DAY, load_example

# The example's figures under v1 (tokens) and under pondere-v2 (weighted tokens): see
# test_report_money.py for the arithmetic.
NET_V1, NET_V2 = 2410, 5957


class OneReadContract:
    """Per backend: a ``Lecture`` keeps its projection across a switch; a report read
    across a switch is wholly of the projection that served when it began."""

    def test_a_lecture_keeps_its_projection_across_a_switch(self, services: Services
                                                             ) -> None:
        load_example(services)
        with services.lire() as lecture:
            before = lecture.bilan()
            replay(services.settings, "pondere-v2", fuseau="UTC")  # switches meanwhile
            after = lecture.bilan("jour")
        assert before.prix is None and after.prix is None
        assert before.snapshot.formule == after.snapshot.formule == "v1"
        assert after.total.net == NET_V1
        # The next answer reads the projection that serves now, with its price.
        now = services.bilan()
        assert now.snapshot.formule == "pondere-v2" and now.prix is not None
        assert now.total.net == NET_V2

    def test_a_report_read_across_a_switch_is_of_one_formula(
            self, services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
        load_example(services)
        reads = 0
        real = Lecture.bilan

        def bilan_then_switch(self: Lecture, *args: Any, **kwargs: Any) -> BilanLu:
            # After the report's first read, another process's replay switches.
            nonlocal reads
            lu = real(self, *args, **kwargs)
            reads += 1
            if reads == 1:
                replay(services.settings, "pondere-v2", fuseau="UTC")
            return lu

        monkeypatch.setattr(Lecture, "bilan", bilan_then_switch)
        data = report_data(services, today=EXAMPLE_DAY)
        assert reads > 1
        assert data["provenance"]["formule"] == "v1"
        assert data["prix"] is None and "en_usd" not in data["periode"]
        assert data["periode"]["net"] == data["aujourd_hui"]["net"] == NET_V1
        assert all("en_usd" not in m for m in data["modeles"])
        assert all(c["formule"] == "v1" and "prix" not in c
                   for c in data["classement"].values())
        monkeypatch.undo()
        weighted = report_data(services, today=EXAMPLE_DAY)
        assert weighted["periode"]["net"] == NET_V2 and weighted["prix"] is not None


class TestOneReadSQLite(OneReadContract):
    backend = "sqlite"


class TestOneReadPostgres(OneReadContract):
    backend = "postgresql"
