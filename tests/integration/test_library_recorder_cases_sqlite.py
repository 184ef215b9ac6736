"""``SQLiteEconomiesRecorder`` keeps the library's recorder contract (ADR-0122).

The library's recorder test cases (``eventsourcing.tests.persistence``) run against it as
the library's own SQLite suite runs them against ``SQLiteApplicationRecorder`` (its
``tests/persistence_tests/test_sqlite.py`` and ``test_noninterleaving_notification_ids.py``):
``ApplicationRecorderTestCase`` (ids returned ``[1, 2]`` then ``[3]``, the notification
log, 10 concurrent writers with 2 readers, throughput) and the non-interleaving check (two
inserts of 10,000 events racing), each on a fresh database: a file in a temporary
directory (WAL, as the event store), and in memory where the library's suite uses memory
(``:memory:`` for insert/select, a shared-cache database named per test for the
concurrent cases). Beside them, what they do not cover: the ids under writers on several
connections, the ``insert_rows`` of the append among them, and rows and ids identical to
the library's own recorder's.

Skipped or not run, with the reason:
``AggregateRecorderTestCase.test_insert_and_select`` wants ``insert_events`` to return
None, an aggregate recorder's answer (the library's ``SQLiteApplicationRecorder`` returns
ids and fails it too), skipped; the library's text originator id variants are not run
(the service's ids are ``uuid5``, ADR-0002, and the recorder's own reads parse them back
as UUIDs); nor is ``optional_test_insert_subscribe`` (the library's SQLite recorder has
no subscription, and neither has ours: readers poll). ``TrackingRecorderTestCase`` runs
against the projections' views (``test_library_recorder_cases_tracking.py``);
``ProcessRecorderTestCase`` applies to no recorder of the service (said there).
"""

from __future__ import annotations

import tempfile
import threading
import time
import unittest
from contextlib import ExitStack
from uuid import uuid4

from eventsourcing.persistence import IntegrityError, StoredEvent
from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteDatastore

from miam_economies.api.store.sqlite import SQLiteEconomiesRecorder
from tests.integration.test_library_recorder_cases import (
    AggregateRecorderTestCase,
    ApplicationRecorderTestCase,
    NonInterleavingNotificationIDsBaseCase,
)


class FreshDatabase(unittest.TestCase):
    """A fresh database per test: by default a file in a temporary directory, removed
    afterwards with every datastore opened on it closed first."""

    pool_size = 5  # the library's default; its application recorder tests use 100

    def setUp(self) -> None:
        super().setUp()
        self.threads = set(threading.enumerate())
        self.stack = ExitStack()
        tmp = self.stack.enter_context(tempfile.TemporaryDirectory(prefix="miam-cases-"))
        self.db_name = f"file:{tmp}/events.sqlite"  # a URI, as the library's tmpfile_uris

    def tearDown(self) -> None:
        # The library's concurrent case tells its readers to stop but does not join them:
        # they end here, before their connections are closed (closing one while another
        # thread steps a query on it crashes the interpreter).
        for thread in set(threading.enumerate()) - self.threads:
            thread.join(10)
        self.stack.close()
        super().tearDown()

    def in_memory(self, *, shared: bool) -> None:
        """This test's database in memory: one connection's (``:memory:``), or a
        shared-cache database all the pool's connections see, named for this test (the
        library's ``file::memory:?cache=shared`` would outlive it while a connection is
        open, and be shared with the next test)."""
        self.db_name = (f"file:miam-{uuid4().hex}?mode=memory&cache=shared" if shared
                        else ":memory:")

    def datastore(self) -> SQLiteDatastore:
        datastore = SQLiteDatastore(db_name=self.db_name, pool_size=self.pool_size)
        self.stack.callback(datastore.close)
        return datastore

    def create_recorder(self) -> SQLiteEconomiesRecorder:
        """Our recorder, as the library's factory builds it (its default table), its
        table created."""
        recorder = SQLiteEconomiesRecorder(self.datastore())
        recorder.create_table()
        return recorder


class TestLibraryApplicationRecorderCase(
        FreshDatabase, ApplicationRecorderTestCase[SQLiteEconomiesRecorder]):
    """The library's ``ApplicationRecorderTestCase`` on a database file, and in memory
    where its SQLite suite runs it in memory."""

    pool_size = 100

    def test_insert_select_in_memory_db(self) -> None:
        self.in_memory(shared=False)
        self.test_insert_select()

    def test_concurrent_no_conflicts_in_memory_db(self) -> None:
        self.in_memory(shared=True)
        self.test_concurrent_no_conflicts()

    def test_concurrent_throughput_in_memory_db(self) -> None:
        self.in_memory(shared=True)
        self.test_concurrent_throughput()


class TestLibraryNonInterleavingCase(FreshDatabase, NonInterleavingNotificationIDsBaseCase):
    """Two inserts of 10,000 events racing get two separate runs of ids, as the library
    checks on SQLite (a file, and shared memory)."""

    insert_num = 10000

    def test_in_memory_db(self) -> None:
        self.in_memory(shared=True)
        self.test()


class TestLibraryAggregateRecorderCase(FreshDatabase, AggregateRecorderTestCase):
    """The library's ``AggregateRecorderTestCase``: only its timing applies."""

    @unittest.skip("asserts insert_events returns None, an aggregate recorder's answer: an "
                   "application recorder returns the notification ids (the library's own "
                   "SQLiteApplicationRecorder fails it too); test_insert_select covers "
                   "the same inserts with ids")
    def test_insert_and_select(self) -> None:
        """Skipped: see the decorator."""


def stored_events(count: int) -> list[StoredEvent]:
    """``count`` new streams' first events (version 1, ADR-0002), each its own state."""
    return [StoredEvent(uuid4(), 1, "topic", uuid4().bytes * 8) for _ in range(count)]


class TestComputedIds(FreshDatabase):
    """The ids are computed from ``last_insert_rowid()`` and the count, not read back:
    each batch's returned ids are the rowids its rows got, whoever else writes."""

    def test_ids_name_each_batchs_rows_under_writers_on_several_connections(self) -> None:
        recorder = self.create_recorder()
        writers, batches, size = 4, 15, 200
        # One recorder (its own datastore: connections, busy timeouts) per writer, as
        # processes are; every third call is the append's insert_rows, which returns none.
        recorders = [recorder, *(SQLiteEconomiesRecorder(self.datastore())
                                 for _ in range(writers - 1))]
        returned: dict[int, StoredEvent] = {}
        appended: list[int] = []  # rows inserted by insert_rows
        errors: list[BaseException] = []

        def write(index: int) -> None:
            try:
                for k in range(batches):
                    if k % 3 == 2:
                        rows = [(uuid4().hex, "topic", b"state") for _ in range(size)]
                        recorders[index].insert_rows(rows, time.monotonic() + 10)
                        appended.append(len(rows))
                        continue
                    events = stored_events(size)
                    ids = (recorders[index].insert_events(events) if k % 3 == 0 else
                           recorders[index].insert_within(events, time.monotonic() + 10))
                    assert ids is not None and len(ids) == size
                    returned.update(zip(ids, events, strict=True))
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)

        threads = [threading.Thread(target=write, args=(i,)) for i in range(writers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, errors
        total = writers * batches * size
        stored = {n.id: n for n in recorder.select_notifications(None, total + 1)}
        self.assertEqual(sorted(stored), list(range(1, total + 1)))
        self.assertEqual(len(returned), total - sum(appended))
        for notification_id, event in returned.items():
            row = stored[notification_id]
            self.assertEqual((row.originator_id, row.state), (event.originator_id, event.state))

    def test_ids_go_on_after_a_refused_insert_and_no_event_has_no_id(self) -> None:
        recorder = self.create_recorder()
        first = stored_events(3)
        self.assertEqual(recorder.insert_events(first), [1, 2, 3])
        with self.assertRaises(IntegrityError):
            recorder.insert_within([*stored_events(2), first[0]], time.monotonic() + 5)
        self.assertEqual(recorder.insert_within(stored_events(2), time.monotonic() + 5),
                         [4, 5])
        self.assertEqual(recorder.insert_events([]), [])  # as the library's recorder
        self.assertEqual(recorder.insert_within([], time.monotonic() + 5), [])
        self.assertEqual(recorder.max_notification_id(), 5)

    def test_rows_and_ids_are_the_librarys(self) -> None:
        """The same events through ours and the library's ``SQLiteApplicationRecorder``
        (a statement per event, ``lastrowid`` each) on another file: the same answers and
        the same rows, rowids included."""
        ours = self.create_recorder()
        theirs = SQLiteApplicationRecorder(
            SQLiteDatastore(self.db_name.replace("events.sqlite", "library.sqlite")))
        self.stack.callback(theirs.datastore.close)
        theirs.create_table()
        for batch in (stored_events(1), stored_events(500), stored_events(7)):
            self.assertEqual(ours.insert_events(batch), theirs.insert_events(batch))

        def rows(recorder: SQLiteApplicationRecorder) -> list[tuple[object, ...]]:
            with recorder.datastore.transaction(commit=False) as c:
                c.execute("SELECT rowid, * FROM stored_events ORDER BY rowid")
                return [tuple(row) for row in c.fetchall()]

        self.assertEqual(rows(ours), rows(theirs))
        self.assertEqual(len(rows(ours)), 508)
