"""The fold of relevés is order-proof on both backends (SPEC, "Claude Code's own
record...", "Stored as events"; ADR-0173): any order and split of the fixtures' lines over
files and imports, folded in pages of any size, gives the same projected replies, those
the reader and the pure merge make of the fixtures read once; observations that disagree
on every value, stored in any batches, fold to their pure merge, texts compared by code
point even on a PostgreSQL database whose own collation orders them otherwise.

Real SQLite files and the real PostgreSQL; each example has its own store."""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from random import Random

import psycopg
from hypothesis import given, settings
from hypothesis import strategies as st

from miam_economies import import_releves
from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.settings import Settings
from miam_economies.api.service.transcripts import read_transcripts
from miam_economies.api.store.mapper import payload_text
from miam_economies.domain.events import Usage
from miam_economies.domain.releves import COUNTERS, Observation, ReplyKey, merge_replies
from miam_economies.domain.releves_events import releve_payload, releve_stream_hex
from tests import conftest
from tests.releves_support import FIXTURES

SOURCES = [(path.relative_to(FIXTURES), path.read_text(encoding="utf-8").splitlines())
           for path in sorted(FIXTURES.rglob("*.jsonl"))]
"""Every fixture file: its path under the fixtures' folder and its lines."""

REFERENCE = sorted(merge_replies(read_transcripts([FIXTURES])).values(),
                   key=lambda reply: reply.key)
"""The replies of every fixture read once (``test_releves_fixtures`` holds them to the
hand counts)."""


@contextmanager
def store(backend: str, collation: str | None = None) -> Iterator[Settings]:
    """Settings of a new, empty store: an SQLite data directory, or a new PostgreSQL
    database (with ``collation``: an ICU locale as its own default), dropped after."""
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder, "data")
        if backend == "sqlite":
            yield Settings(data=data)
            return
        name = f"miam_t_{uuid.uuid4().hex[:12]}"
        locale = ("" if collation is None else
                  f" TEMPLATE template0 ENCODING 'UTF8' LOCALE_PROVIDER icu "
                  f"ICU_LOCALE '{collation}' LOCALE 'C.UTF-8'")
        with psycopg.connect(conftest.POSTGRES, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"{locale}')
            try:
                yield Settings(data=data,
                               database_url=conftest.POSTGRES.rsplit("/", 1)[0] + "/" + name)
            finally:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def folded(settings: Settings, page_size: int) -> list[Observation]:
    """Fold what is stored, ``page_size`` events a page; the projection's replies."""
    with open_services(settings, run_projections=False) as services:
        services.runner.page_size = services.runner.read_size = page_size
        services.runner.catch_up()
        return services.projection.view.releves(services.projection.tracking_name)


def spread(random: Random, folder: Path) -> list[list[Path]]:
    """The fixtures' lines spread over 1 to 3 imports of 1 or 2 copies of the fixtures'
    tree each, every line in one place or two, in any order within its file; each file
    keeps its path, so a subagent's file keeps its name. The imports' folders, in the
    order to import them."""
    imports, parts = random.randint(1, 3), random.randint(1, 2)
    files: dict[Path, list[str]] = {}
    for relative, lines in SOURCES:
        for line in lines:
            for _ in range(random.choice([1, 1, 1, 2])):
                where = folder / f"import-{random.randrange(imports)}" / \
                    f"part-{random.randrange(parts)}" / relative
                files.setdefault(where, []).append(line)
    for path, lines in files.items():
        random.shuffle(lines)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    order = [folder / f"import-{i}" for i in range(imports)]
    random.shuffle(order)
    return [[path] for path in order if path.exists()]


def check_any_spread(backend: str, random: Random) -> None:
    page_size = random.choice([1, 2, 5, 500])
    with store(backend) as where, tempfile.TemporaryDirectory() as folder:
        for paths in spread(random, Path(folder)):
            import_releves(paths, where.data, database_url=where.database_url)
            if random.random() < 0.5:  # fold between imports, or not
                folded(where, page_size)
        assert folded(where, page_size) == REFERENCE
        # The fixtures read whole: a reply whose lines were spread is a new, larger
        # relevé, which changes nothing; read again, nothing new at all.
        import_releves([FIXTURES], where.data, database_url=where.database_url)
        assert folded(where, page_size) == REFERENCE
        again = import_releves([FIXTURES], where.data, database_url=where.database_url)
        assert (again.reponses, again.nouvelles) == (26, 0)


@settings(max_examples=25)
@given(st.randoms(use_true_random=False))
def test_any_spread_of_the_fixtures_folds_to_the_same_replies_on_sqlite(
        random: Random) -> None:
    check_any_spread("sqlite", random)


@settings(max_examples=10)
@given(st.randoms(use_true_random=False))
def test_any_spread_of_the_fixtures_folds_to_the_same_replies_on_postgresql(
        random: Random) -> None:
    check_any_spread("postgresql", random)


TEXTS = st.none() | st.sampled_from(["a", "b", "Z", "\u00e9", "e\u0301", "\U0001f600", "A"])
KEYS = [ReplyKey("s-1", "message_id", "msg_1"), ReplyKey("s-1", "uuid", "msg_1"),
        ReplyKey("S-1", "message_id", "msg_1"), ReplyKey("\u00e9", "request_id", "r")]


@st.composite
def disagreeing(draw: st.DrawFn) -> list[Observation]:
    """Observations of a few replies that may disagree on every value."""
    counter = st.integers(0, 2**53 - 1) | st.integers(0, 9)
    return [Observation(draw(st.sampled_from(KEYS)),
                        Usage(*(draw(counter) for _ in COUNTERS)),
                        f"2026-11-20T09:{draw(st.integers(0, 59)):02d}:00.000Z",
                        draw(TEXTS), draw(TEXTS), draw(TEXTS), draw(st.booleans()))
            for _ in range(draw(st.integers(1, 12)))]


def check_disagreeing(settings_: Settings, found: list[Observation], random: Random) -> None:
    with open_services(settings_, run_projections=False) as services:
        rest = list(found)
        while rest:  # batches of any size, each folded in pages of any size, or not
            cut = random.randint(1, len(rest))
            services.store.append_releves([(releve_stream_hex(o),
                                            payload_text(releve_payload(o)), None)
                                           for o in rest[:cut]])
            rest = rest[cut:]
            if random.random() < 0.5:
                services.runner.page_size = services.runner.read_size = random.randint(1, 4)
                services.runner.catch_up()
    want = sorted(merge_replies(found).values(), key=lambda reply: reply.key)
    assert folded(settings_, random.randint(1, 4)) == want


@settings(max_examples=25)
@given(disagreeing(), st.randoms(use_true_random=False))
def test_disagreeing_observations_fold_to_their_merge_on_sqlite(
        found: list[Observation], random: Random) -> None:
    with store("sqlite") as where:
        check_disagreeing(where, found, random)


@settings(max_examples=8)
@given(disagreeing(), st.randoms(use_true_random=False))
def test_disagreeing_observations_fold_by_code_point_on_postgresql_of_any_collation(
        found: list[Observation], random: Random) -> None:
    # Under ICU English 'a' < 'B' and 'Z' > 'a'; by code point 'B' < 'Z' < 'a'. The
    # view's columns are COLLATE "C", whatever the database's own collation.
    with store("postgresql", collation="en") as where:
        check_disagreeing(where, found, random)


def test_two_pages_merge_texts_by_code_point_on_a_database_of_another_collation() -> None:
    # Each observation in a page of its own: the second is merged with the first's row
    # in SQL, where ICU English would keep 'a' (it sorts 'a' before 'Z'); code point
    # order keeps 'Z', as Python's min does.
    key = ReplyKey("s-1", "uuid", "u-1")
    one = Observation(key, Usage(1, 2, 3, 4), "2026-11-20T09:00:01.000Z", "a", "Z", None,
                      False)
    two = Observation(key, Usage(4, 3, 2, 1), "2026-11-20T09:00:00.000Z", "Z", "a",
                      "end_turn", True)
    for first, second in ((one, two), (two, one)):
        with store("postgresql", collation="en") as where:
            for observation in (first, second):
                with open_services(where, run_projections=False) as services:
                    services.store.append_releves([(releve_stream_hex(observation),
                                                    payload_text(releve_payload(observation)),
                                                    None)])
                folded(where, 500)
            assert folded(where, 500) == [Observation(
                key, Usage(4, 3, 3, 4), "2026-11-20T09:00:00.000Z", "Z", "Z", "end_turn",
                True)]
