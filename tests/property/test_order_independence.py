"""Order tolerance is a law: any arrival order, any batching and any re-sends give one bilan.

SPEC, "The bilan": "for any multiset of valid events, every arrival order and any number
of re-sends give the same projection state." Each example appends to fresh SQLite files
through the real store and folds through the real projection.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from api.services import open_services
from api.settings import Settings
from domain.validation import validate_batch
from tests.conftest import TOKEN
from tests.corpus import expected_bilan

CLIENTS = st.sampled_from(["claude-code", "claude-code-ci", "autre"])
DEMANDES = st.sampled_from([f"dem-{i}" for i in range(6)])
COUNTER = st.integers(min_value=0, max_value=2**40)


@st.composite
def event(draw: st.DrawFn, n: int) -> dict[str, Any]:
    """One valid event of any type; ``n`` makes its id unique."""
    common = {"schema": 1, "date": "2026-10-30T09:12:04.512Z", "client": draw(CLIENTS),
              "session_id": "s"}
    kind = draw(st.sampled_from(["delegation", "pilotage", "correction"]))
    if kind == "delegation":
        agent = draw(st.none() | st.just("a1"))
        return {**common, "type": kind, "id": f"d{n}", "demande_id": draw(DEMANDES),
                "agent_id": agent, "par_subagent": agent is not None, "retour": "complet",
                "tokens_entree": draw(COUNTER), "tokens_sortie": draw(COUNTER),
                "estimation": {"lus": 0, "ecrits": 0, "consigne": 0, "rendus": 0,
                               "evites": draw(st.integers(-2**40, 2**40)), "methode": "m"}}
    if kind == "pilotage":
        usage = {k: draw(COUNTER) for k in ("input_tokens", "output_tokens",
                                            "cache_read_input_tokens",
                                            "cache_creation_input_tokens")}
        return {**common, "type": kind, "id": f"p{n}", "agent_id": "a1", "turn_id": str(n),
                "demande_ids": draw(st.lists(DEMANDES, min_size=1, max_size=3)),
                "modele": "claude-haiku-5-5", "usage": usage, "cout": draw(COUNTER)}
    lus, ecrits = draw(COUNTER), draw(COUNTER)
    return {**common, "type": kind, "id": f"c{n}", "demande_id": draw(DEMANDES),
            "outil": draw(st.sampled_from(["Read", "Edit", "Write", "NotebookEdit", "Bash"])),
            "tool_use_id": str(n), "tokens_lus": lus, "tokens_ecrits": ecrits,
            "cout": lus + ecrits}


@st.composite
def arrivals(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[list[dict[str, Any]]]]:
    """A set of distinct events, and one way they may arrive: shuffled, re-sent, batched."""
    size = draw(st.integers(min_value=1, max_value=30))
    events = [draw(event(n)) for n in range(size)]
    resent = draw(st.lists(st.sampled_from(events), max_size=size))
    stream = draw(st.permutations(events + resent))
    cuts = sorted(draw(st.lists(st.integers(1, len(stream) - 1), max_size=6, unique=True))
                  if len(stream) > 1 else [])
    bounds = [0, *cuts, len(stream)]
    return events, [stream[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


def fold(batches: list[list[dict[str, Any]]]) -> tuple[dict[str, Any], int]:
    """Append ``batches`` in order to a fresh store, fold, and return the bilan and Σ recus."""
    with tempfile.TemporaryDirectory() as tmp:
        recus = 0
        settings_ = Settings(data=Path(tmp) / "data", token=TOKEN)
        with open_services(settings_, run_projections=False) as services:
            for batch in batches:
                recus += services.store.append(validate_batch({"evenements": batch})).recus
                if len(batch) % 2:  # fold at arbitrary moments, not only at the end
                    services.runner.catch_up()
            services.runner.catch_up()
            bilan = services.bilan()
    return {k: bilan[k] for k in ("economies", "total")}, recus


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arrivals())
def test_bilan_is_independent_of_arrival_order_and_resends(
        case: tuple[list[dict[str, Any]], list[list[dict[str, Any]]]]) -> None:
    events, batches = case
    canonical, _ = fold([events])
    shuffled, recus = fold(batches)
    assert shuffled == canonical
    assert shuffled == expected_bilan(events)
    assert recus == len(events)
