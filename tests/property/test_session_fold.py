"""A session's rows are order-proof on both backends (ADR-0176, ADR-0177): the story's
plugin events stored in any order and batches, its transcripts imported before, between
or after them, and the same files as a live session left them earlier (every reply
smaller and incomplete) imported at another moment, folded in pages of any
size, give every session's document and the bilan's summary as
``tests/session_support.py`` recomputes them independently. Real SQLite files and the
real PostgreSQL; each example has its own store."""

from __future__ import annotations

import tempfile
from pathlib import Path
from random import Random

from hypothesis import given, settings
from hypothesis import strategies as st

from miam_economies import import_releves
from miam_economies.api.service.answers import bilan_answer
from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.session_answers import session_answer
from miam_economies.api.service.settings import Settings
from miam_economies.domain.acceptance import accept_batch
from tests.property.test_releves_fold import store
from tests.session_support import (
    BOTH,
    CLAUDE_ONLY,
    PLUGIN_ONLY,
    expected_session,
    expected_summary,
    plugin_events,
    write_transcripts,
)


def check(backend: str, seed: int, page_size: int) -> None:
    random = Random(seed)
    events = plugin_events()
    random.shuffle(events)
    cut = sorted(random.sample(range(1, len(events)), random.randint(0, 3)))
    batches = [events[a:b] for a, b in zip([0, *cut], [*cut, len(events)], strict=True)]
    when = random.randint(0, len(batches))  # the import's place among the batches
    # An import of the files as they stood mid-stream, at any place: before the full
    # one, its replies grow in a later page (each reply's part of its agent's sums is
    # moved); after it, it changes nothing.
    early = random.randint(0, len(batches))
    with store(backend) as chosen, tempfile.TemporaryDirectory() as folder:
        transcripts = write_transcripts(Path(folder, "full"))
        streaming = write_transcripts(Path(folder, "partial"), partial=True)
        for n, batch in enumerate([*batches, None]):
            for path, at in ((streaming, early), (transcripts, when)):
                if n == at:
                    import_releves([path], chosen.data, database_url=chosen.database_url)
            if batch is not None:
                with open_services(chosen, run_projections=False) as services:
                    services.store.append(accept_batch({"evenements": batch}))
        read(chosen, page_size)


def read(chosen: Settings, page_size: int) -> None:
    with open_services(chosen, run_projections=False) as services:
        services.runner.page_size = services.runner.read_size = page_size
        services.runner.catch_up()
        for session_id in (BOTH, CLAUDE_ONLY, PLUGIN_ONLY):
            lu = services.session(session_id)
            assert lu is not None
            assert session_answer(lu) == expected_session(session_id)
        assert bilan_answer(services.bilan())["rapprochement"] == expected_summary()


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32), page_size=st.integers(1, 25))
def test_any_order_and_pages_give_the_sessions_on_sqlite(seed: int, page_size: int) -> None:
    check("sqlite", seed, page_size)


@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 2**32), page_size=st.integers(1, 25))
def test_any_order_and_pages_give_the_sessions_on_postgresql(seed: int,
                                                            page_size: int) -> None:
    check("postgresql", seed, page_size)
