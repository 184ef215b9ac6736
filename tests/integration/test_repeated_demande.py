"""A demande listed twice in one pilotage's ``demande_ids`` is covered once (issue 21.6;
ADR-0101): its ``pilotages`` count, its share, the breakdown per demande and the
classement's samples are those of the pilotage listing it once, in any arrival order, on
both backends."""

from __future__ import annotations

from typing import Any

from miam_economies.api.service.answers import bilan_answer, classement_answer
from miam_economies.api.service.services import Services
from miam_economies.domain.acceptance import accept_batch
from tests.conftest import EXAMPLE_BATCH

DELEGATION, PILOTAGE = EXAMPLE_BATCH["evenements"]


def delegation(demande: str) -> dict[str, Any]:
    return {**DELEGATION, "id": f"claude-code:{demande}", "demande_id": demande}


def pilotage(turn: str, demande_ids: list[str], cout: int) -> dict[str, Any]:
    return {**PILOTAGE, "id": f"claude-code:{PILOTAGE['session_id']}:a1:{turn}",
            "turn_id": turn, "demande_ids": demande_ids, "cout": cout}


def append(services: Services, *events: dict[str, Any]) -> None:
    services.store.append(accept_batch({"evenements": list(events)}))
    services.runner.catch_up()


class RepeatedDemandeContract:
    """The demande view and its neighbours on one backend's view."""

    def test_a_demande_listed_twice_is_covered_once_in_any_order(
            self, services: Services) -> None:
        # The pilotage before its delegations (1), and after them (2): 1001 tokens over
        # the two distinct demandes, the odd token to the first in sorted order.
        append(services, pilotage("t1", ["dem-b1", "dem-a1", "dem-a1"], 1001))
        append(services, delegation("dem-a1"), delegation("dem-b1"))
        append(services, delegation("dem-a2"), delegation("dem-b2"))
        append(services, pilotage("t2", ["dem-a2", "dem-b2", "dem-a2"], 1001))
        for a, b in (("dem-a1", "dem-b1"), ("dem-a2", "dem-b2")):
            first, second = services.demande(a), services.demande(b)
            assert first is not None and second is not None
            assert first["pilotage"] == {"part": 501, "pilotages": 1}
            assert second["pilotage"] == {"part": 500, "pilotages": 1}
            assert first["net"] == 4900 - 501
        bilan = bilan_answer(services.bilan("demande"))
        assert sum(g["claude-code"]["pilotage"] for g in bilan["groupes"].values()) == 2002
        assert bilan["total"]["pilotage"] == 2002
        # The classement's samples are the demandes' figures: 4 demandes, net 4 x 4900 -
        # 2002, and the squares of each demande's net.
        (groupe,) = classement_answer(services.classement("client", minimum=1))["groupes"]
        assert (groupe["demandes"], groupe["net"]) == (4, 4 * 4900 - 2002)
        assert groupe["net_par_demande"] == (4 * 4900 - 2002) / 4


class TestRepeatedDemandeSQLite(RepeatedDemandeContract):
    backend = "sqlite"


class TestRepeatedDemandePostgres(RepeatedDemandeContract):
    backend = "postgresql"
