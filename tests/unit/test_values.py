"""``domain.events.from_payload`` hands each value its attributes at once instead of
running the frozen dataclasses' ``__init__`` (ADR-0062): the values are exactly those the
constructors build, in every respect a reader can see."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, fields
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from miam_economies.domain.events import (
    Correction,
    Delegation,
    Estimation,
    Pilotage,
    Received,
    Usage,
    from_payload,
)
from tests.conftest import EXAMPLE_BATCH, EXAMPLE_CORRECTION
from tests.corpus import generate


def constructed(p: dict[str, Any]) -> Received:
    """The value of payload ``p`` built by the classes' own constructors, by keyword."""
    common = {"id": p["id"], "date": p["date"], "client": p["client"],
              "session_id": p["session_id"], "payload": p}
    if p["type"] == "delegation":
        return Delegation(**common, demande_id=p["demande_id"], agent_id=p["agent_id"],
                          par_subagent=p["par_subagent"], retour=p["retour"],
                          tokens_entree=p["tokens_entree"],
                          tokens_sortie=p["tokens_sortie"],
                          estimation=Estimation(**p["estimation"]))
    if p["type"] == "pilotage":
        return Pilotage(**common, agent_id=p["agent_id"], turn_id=p["turn_id"],
                        demande_ids=tuple(p["demande_ids"]), modele=p["modele"],
                        usage=Usage(**p["usage"]), cout=p["cout"])
    return Correction(**common, demande_id=p["demande_id"], outil=p["outil"],
                      tool_use_id=p["tool_use_id"], tokens_lus=p["tokens_lus"],
                      tokens_ecrits=p["tokens_ecrits"], cout=p["cout"])


def same(a: Any, b: Any) -> None:
    assert type(a) is type(b)
    assert a == b and hash(a) == hash(b) and repr(a) == repr(b)
    assert list(vars(a)) == [f.name for f in fields(a)] == list(vars(b))
    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, Estimation | Usage):
            same(x, y)
        else:
            assert x is y or x == y, f.name


@given(st.integers(0, 2**32))
def test_values_are_what_the_constructors_build(seed: int) -> None:
    for payload in [*generate(20, seed=seed), *EXAMPLE_BATCH["evenements"],
                    EXAMPLE_CORRECTION]:
        same(from_payload(payload), constructed(payload))


def test_values_stay_frozen() -> None:
    value = from_payload(EXAMPLE_CORRECTION)
    with pytest.raises(FrozenInstanceError):
        setattr(value, "cout", 0)  # noqa: B010
