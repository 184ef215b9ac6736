"""``summed_by_key`` (the groups' exact rebuild, ADR-0114) writes a demande's sample sums
out for speed: whatever the rows, it gives per key the figures' sums and the sum of what
each demande adds to its sample, as the tests' reference states it
(``tests.classement_reference.sample_sums``), which the domain's one rule
(``Echantillon.sums_of``) is held to as well."""

from __future__ import annotations

from itertools import groupby

from hypothesis import given
from hypothesis import strategies as st

from miam_economies.domain.echantillon import Echantillon
from miam_economies.projections.sql_samples import summed_by_key
from tests.classement_reference import sample_sums

figure = st.integers(min_value=-(2**70), max_value=2**70)  # past 64 bits, negative too
rows = st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 2), figure,
                          figure, figure), max_size=40).map(sorted)


@given(rows, st.booleans())
def test_summed_by_key_is_the_references_sample_sums_summed(
        demandes: list[tuple[object, ...]], as_text: bool) -> None:
    # SQLite hands big sums back as decimal text: both forms are read alike.
    given_rows = [(r[0], *(str(x) if as_text else x for x in r[1:])) for r in demandes]
    expected = []
    for key, group in groupby(demandes, key=lambda r: r[0]):
        members = [r[1:] for r in group]
        totals = [sum(int(m[i]) for m in members) for i in range(4)]
        sample = [sum(values) for values in zip(*(sample_sums(*map(int, m)) for m in members),
                                                strict=True)]
        expected.append((key, *totals, *sample))
    assert list(summed_by_key(given_rows, 1)) == expected


@given(figure, figure, figure)
def test_the_domains_sample_sums_are_the_references(evites: int, pilotage: int,
                                                    corrections: int) -> None:
    assert Echantillon.sums_of(evites, pilotage, corrections) == sample_sums(
        1, evites, pilotage, corrections)
