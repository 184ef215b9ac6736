"""The event store's recorders keep one contract on every backend (``EconomiesRecorder``,
ADR-0043): which streams exist, their stored events, the log as raw rows and its typed
values (ADR-0062), the count up to a position, and a wake-up on each insert where the
backend can tell. Real SQLite files and a real
PostgreSQL database; the store's mapper and compressor seams, end to end."""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from uuid import uuid4

import pytest
from eventsourcing.persistence import StoredEvent

from miam_economies.api.service.export import stored_events
from miam_economies.api.store.application import EventStore
from miam_economies.api.store.backends import SQLITE, Database
from miam_economies.domain.acceptance import accept_batch
from miam_economies.domain.events import TOPICS, Conflit, stream_id
from tests.conftest import EXAMPLE_BATCH, fresh_postgres
from tests.corpus import generate


@pytest.fixture
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EventStore]:
    """An empty event store on the test class's backend."""
    if request.cls.backend == "sqlite":
        opened = EventStore(Database(SQLITE, path=tmp_path / "economies.sqlite").store_env())
        yield opened
        opened.close()
        return
    with fresh_postgres() as url:
        opened = EventStore(Database.parse(url).store_env())
        yield opened
        opened.close()


class RecorderContract:
    """``EconomiesRecorder`` on one backend."""

    backend: str

    def test_stored_streams_are_exactly_those_appended(self, store: EventStore) -> None:
        events = generate(50, seed=3)[:50]
        store.append(accept_batch({"evenements": events[:30]}))
        ids = [stream_id(e["id"]) for e in events]
        assert store.economies_recorder.stored_streams(ids) == set(ids[:30])
        assert store.economies_recorder.stored_streams([uuid4()]) == set()
        assert store.economies_recorder.stored_streams([]) == set()

    def test_stored_states_read_back_the_version_kept(self, store: EventStore) -> None:
        store.append(accept_batch(copy.deepcopy(EXAMPLE_BATCH)))
        delegation = EXAMPLE_BATCH["evenements"][0]
        sid = stream_id(delegation["id"])
        states = store.economies_recorder.stored_states([sid, uuid4()])
        assert list(states) == [sid]
        event = store.mapper.to_domain_event(StoredEvent(sid, 1, TOPICS["delegation"],
                                                         states[sid]))
        assert event.received_payload() == delegation  # type: ignore[attr-defined]
        assert json.loads(store.economies_mapper.stored_payload(states[sid])) == delegation
        assert store.economies_recorder.stored_states([]) == {}

    def test_count_up_to_counts_the_events_stored_below_a_position(
            self, store: EventStore) -> None:
        store.append(accept_batch({"evenements": generate(40, seed=5)[:40]}))
        head = store.head()
        recorder = store.economies_recorder
        assert recorder.count_up_to(head, head) == 40
        assert recorder.count_up_to(head + 10, head) == 40
        position = store.recorder.select_notifications(1, 25)[-1].id
        assert recorder.count_up_to(position, head) == 25
        assert recorder.count_up_to(0, head) == 0


    def test_select_states_reads_the_log_as_raw_rows(self, store: EventStore) -> None:
        store.append(accept_batch({"evenements": generate(40, seed=7)[:40]}))
        differing = copy.deepcopy(generate(40, seed=7)[0])
        differing["session_id"] = "other"
        assert store.append(accept_batch({"evenements": [differing]})).conflits == 1
        log = store.recorder.select_notifications(1, 100)
        assert store.economies_recorder.select_states(1, 100) == [
            (n.id, n.topic, n.state) for n in log]
        assert store.economies_recorder.select_states(log[10].id, 5) == [
            (n.id, n.topic, n.state) for n in log[10:15]]
        assert store.economies_recorder.select_states(log[-1].id + 1, 5) == []

    def test_read_gives_the_values_the_library_path_gives(self, store: EventStore) -> None:
        events = generate(60, seed=8)[:60]
        store.append(accept_batch({"evenements": events}))
        differing = copy.deepcopy(events[5])
        differing["session_id"] = "other"
        store.append(accept_batch({"evenements": [differing]}))
        log = store.recorder.select_notifications(1, 100)
        expected = [(n.id, store.mapper.to_domain_event(n).value())  # type: ignore[attr-defined]
                    for n in log]
        assert store.read(1, 100) == expected
        assert expected[-1][1] == Conflit(events[5]["client"])
        assert store.read(log[20].id, 7) == expected[20:27]


class TestRecorderSQLite(RecorderContract):
    backend = "sqlite"

    def test_listen_returns_at_once_readers_poll(self, store: EventStore) -> None:
        stop = threading.Event()
        started = time.monotonic()
        store.economies_recorder.listen(lambda: None, stop)
        assert time.monotonic() - started < 1


class TestRecorderPostgres(RecorderContract):
    backend = "postgresql"

    def test_listen_wakes_the_reader_at_each_insert(self, store: EventStore) -> None:
        woken = threading.Event()
        calls: list[float] = []
        stop = threading.Event()

        def wake() -> None:
            calls.append(time.monotonic())
            if len(calls) > 1:  # the first call is the one made when listening starts
                woken.set()

        listener = threading.Thread(target=store.economies_recorder.listen,
                                    args=(wake, stop), daemon=True)
        listener.start()
        try:
            deadline = time.monotonic() + 10
            while not calls and time.monotonic() < deadline:
                time.sleep(0.01)  # until the LISTEN is in place
            store.append(accept_batch(copy.deepcopy(EXAMPLE_BATCH)))
            assert woken.wait(10)
        finally:
            stop.set()
            listener.join(5)


def test_a_compressed_store_appends_and_reads_back_through_the_mapper(
        tmp_path: Path) -> None:
    env = {**Database(SQLITE, path=tmp_path / "economies.sqlite").store_env(),
           "COMPRESSOR_TOPIC": "eventsourcing.compressor:ZlibCompressor"}
    store = EventStore(env)
    try:
        appended = store.append(accept_batch(copy.deepcopy(EXAMPLE_BATCH)))
        assert (appended.recus, appended.doublons) == (2, 0)
        again = store.append(accept_batch(copy.deepcopy(EXAMPLE_BATCH)))
        assert (again.recus, again.doublons, again.conflits) == (0, 2, 0)
        raw = store.recorder.select_notifications(1, 10)
        assert all(b'"payload"' not in n.state for n in raw)  # compressed on disk
        payloads = [e.received_payload() for e in stored_events(store)]
        assert payloads == EXAMPLE_BATCH["evenements"]
        assert [v.payload for _, v in store.read(1, 10)] == EXAMPLE_BATCH["evenements"]
    finally:
        store.close()
