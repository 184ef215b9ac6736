"""``compare``'s fold is the page fold's three sums (ADR-0180): on any history, in any
order and cut into reads of any size, under one to four built-in formulas at once (the
same one twice included) and in a zone whose days cross the dates' midnights,
``FormulaFigures`` keeps under each exactly ``PageDelta``'s ``clients`` and ``jours``, and
its ``modeles`` summed over their days, ``evenements`` included; a differing re-sent
version (``Conflit``) counts for its client, an event set aside (``Ecarte``) and a
relevé's ``Observation`` in no figure. Pure: no store."""

from __future__ import annotations

from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miam_economies.domain.bilan import FiguresModele, Jours
from miam_economies.domain.events import Conflit, Ecarte, Stored, Usage, from_payload
from miam_economies.domain.formulas import FORMULES
from miam_economies.domain.releves import Observation, ReplyKey
from miam_economies.projections.delta import PageDelta
from miam_economies.projections.formula_figures import FormulaFigures
from tests.property.test_order_independence import CLIENTS, event

PARIS = ZoneInfo("Europe/Paris")
OTHERS = st.one_of(
    st.builds(Conflit, CLIENTS),
    st.builds(Ecarte, st.integers(1, 99), st.just("not an event of schema 1")),
    st.just(Observation(ReplyKey("s", "message_id", "msg_1"), Usage(1, 2, 3, 4),
                        "2026-11-20T09:00:00.000Z", "claude-sonnet-5", None, "end_turn",
                        False)))


@st.composite
def reads(draw: st.DrawFn) -> list[list[Stored]]:
    """A history's stored values, shuffled and cut into reads."""
    payloads = [draw(event(n)) for n in range(draw(st.integers(0, 40)))]
    values: list[Stored] = [from_payload(p) for p in payloads]
    values += draw(st.lists(OTHERS, max_size=5))
    values = draw(st.permutations(values))
    cuts = sorted(draw(st.lists(st.integers(0, len(values)), max_size=5)))
    bounds = [0, *cuts, len(values)]
    return [values[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


@settings(max_examples=150, deadline=None)
@given(reads(), st.lists(st.sampled_from(sorted(FORMULES)), min_size=1, max_size=4))
def test_the_sums_are_the_page_folds_under_each_formula(history: list[list[Stored]],
                                                        names: list[str]) -> None:
    fold = FormulaFigures([FORMULES[name] for name in names], Jours(PARIS))
    for values in history:
        fold.add_all(values)
    for k, name in enumerate(names):
        delta = PageDelta(FORMULES[name], PARIS)
        delta.add_all(value for values in history for value in values)
        assert fold.clients(k) == dict(delta.clients)
        assert fold.jours(k) == dict(delta.jours)
        summed: dict[tuple[str, str], FiguresModele] = {}
        for (client, modele, _), figures in delta.modeles.items():
            summed[(client, modele)] = summed.get((client, modele), FiguresModele()) + figures
        assert fold.modeles(k) == summed


def test_a_value_of_no_stored_type_is_refused() -> None:
    fold = FormulaFigures([FORMULES["v1"]], Jours(PARIS))
    stray: Any = {"type": "delegation"}  # a payload, not its value
    with pytest.raises(TypeError, match="not a stored event's value"):
        fold.add_all([stray])
