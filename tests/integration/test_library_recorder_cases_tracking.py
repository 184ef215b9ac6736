"""The projections' views keep the library's tracking recorder contract.

``BilanView`` is a ``TrackingRecorder`` (``SQLiteBilanView`` the library's
``SQLiteTrackingRecorder``, ``PostgresBilanView`` its ``PostgresTrackingRecorder``): the
view keeps each projection's position in the library's tracking table, in its own
database, and ``BilanProjection`` (the library's ``Projection``) reads it back with
``max_tracking_id``. A page's fold moves the position with its own compare-and-set
(``SqlBilanView._advance``, ADR-0007), in the library's table; a page of one event goes
through the library's own ``_insert_tracking``. So the library's
``TrackingRecorderTestCase`` runs against both views, as the service opens them
(``open_view``), each on a fresh database.

``ProcessRecorderTestCase`` is not run: it tests a ``ProcessRecorder``, an application
recorder that stores a process application's new events and its tracking in one
transaction (``insert_events(..., tracking=...)``). The service has none: its event store
records no tracking (``EconomiesRecorder`` is an application recorder only), and its
views record tracking but no events.
"""

from __future__ import annotations

import tempfile
import unittest
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from eventsourcing.persistence import TrackingRecorder

from miam_economies.api.service.bootstrap import open_view
from miam_economies.api.store.backends import Database
from tests.conftest import fresh_postgres
from tests.integration.test_library_recorder_cases import library_cases

if TYPE_CHECKING:
    from eventsourcing.tests.persistence import TrackingRecorderTestCase
else:
    TrackingRecorderTestCase = library_cases().TrackingRecorderTestCase


@contextmanager
def fresh_sqlite() -> Iterator[str]:
    """An SQLite store's URL in a new temporary directory (its view in
    ``projections.sqlite`` beside it), removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="miam-tracking-") as tmp:
        yield f"sqlite:///{Path(tmp) / 'economies.sqlite'}"


class FreshView(unittest.TestCase):
    """The view the service opens (``open_view``) on a fresh database, closed after."""

    def setUp(self) -> None:
        super().setUp()
        self.stack = ExitStack()

    def tearDown(self) -> None:
        self.stack.close()
        super().tearDown()

    def fresh_database(self) -> AbstractContextManager[str]:
        raise NotImplementedError

    def create_recorder(self) -> TrackingRecorder:
        url = self.stack.enter_context(self.fresh_database())
        view, datastore = open_view(Database.parse(url))
        self.stack.callback(datastore.close)  # closed before the database is removed
        return view


class TestSQLiteViewTrackingCase(FreshView, TrackingRecorderTestCase):
    """``SQLiteBilanView``: the library's ``tracking`` table in ``projections.sqlite``."""

    def fresh_database(self) -> AbstractContextManager[str]:
        return fresh_sqlite()


class TestPostgresViewTrackingCase(FreshView, TrackingRecorderTestCase):
    """``PostgresBilanView``: the library's tracking table, ``bilan_tracking``."""

    def fresh_database(self) -> AbstractContextManager[str]:
        return fresh_postgres()
