"""The event store and the bilan projection on real SQLite files, without HTTP."""

from __future__ import annotations

import copy
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from eventsourcing.persistence import DatetimeAsISO, IntegrityError, JSONTranscoder, Mapper

from miam_economies.api.service.answers import bilan_answer
from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.services import Services
from miam_economies.api.service.settings import Settings
from miam_economies.api.store.application import EventStore
from miam_economies.api.store.backends import SQLITE, Database
from miam_economies.domain.acceptance import accept_batch
from miam_economies.domain.events import DelegationRecue, stream_id
from tests.conftest import EXAMPLE_BATCH, TOKEN
from tests.corpus import expected_bilan, generate

DELEGATION, PILOTAGE = EXAMPLE_BATCH["evenements"]
CORRECTION = {
    "schema": 1, "type": "correction", "id": "claude-code:c009a419:toolu_1",
    "date": "2026-10-30T09:13:00.000Z", "client": "claude-code", "session_id": "c009a419",
    "demande_id": "dem-9c8a4d0189", "outil": "Edit", "tool_use_id": "toolu_1",
    "tokens_lus": 0, "tokens_ecrits": 490, "cout": 490,
}


def append(services: Services, *events: dict[str, Any]) -> tuple[int, int]:
    appended = services.store.append(accept_batch({"evenements": list(events)}))
    return appended.recus, appended.doublons


def clients(services: Services) -> dict[str, Any]:
    services.runner.catch_up()
    return bilan_answer(services.bilan())["economies"]


def test_a_view_ahead_of_its_store_is_rebuilt(tmp_path: Path) -> None:
    settings = Settings(data=tmp_path / "data", token=TOKEN)
    with open_services(settings, run_projections=False) as first:
        append(first, *generate(100, seed=8))
        first.runner.catch_up()
    for stale in settings.data.glob("economies.sqlite*"):
        stale.unlink()  # the store is gone; projections.sqlite remains
    with open_services(settings, run_projections=False) as second:
        assert second.projection.position() == 0
        append(second, DELEGATION, PILOTAGE)
        second.runner.catch_up()
        bilan = bilan_answer(second.bilan())
    assert bilan["provenance"]["evenements"] == 2
    assert bilan["economies"]["claude-code"]["net"] == 2900


def test_the_process_environment_cannot_move_the_store(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The library would let these override the settings given to the application.
    monkeypatch.setenv("ECONOMIES_SQLITE_DBNAME", ":memory:")
    monkeypatch.setenv("ECONOMIES_PERSISTENCE_MODULE", "eventsourcing.popo")
    settings = Settings(data=tmp_path / "data", token=TOKEN)
    with open_services(settings, run_projections=False) as services:
        append(services, DELEGATION)
    with open_services(settings, run_projections=False) as reopened:
        assert reopened.store.head() == 1


def test_appended_events_are_stored_as_the_library_mapper_would_store_them(
        tmp_path: Path) -> None:
    # The append path builds stored events itself (ADR-0011): byte for byte what
    # Application.save would have written with the library's default transcoder.
    transcoder = JSONTranscoder()
    transcoder.register(DatetimeAsISO())
    library = Mapper(transcoder=transcoder)
    store = EventStore(Database(SQLITE, path=tmp_path / "store.sqlite").store_env())
    try:
        store.append(accept_batch(copy.deepcopy(EXAMPLE_BATCH)))
        differing = copy.deepcopy(EXAMPLE_BATCH)
        differing["evenements"][0]["client"] = "autre-client-é"
        assert store.append(accept_batch(differing)).conflits == 1
        notifications = store.recorder.select_notifications(start=1, limit=10)
        assert len(notifications) == 3  # the two events, and the differing version
        for n in notifications:
            expected = library.to_stored_event(library.to_domain_event(n))
            assert (n.topic, n.state) == (expected.topic, expected.state)
            assert expected.originator_id == n.originator_id
    finally:
        store.close()


class StoreContract:
    """The event store and the bilan projection without HTTP, whatever the backend."""

    def test_each_event_is_its_own_stream_at_version_1_holding_the_payload(
            self, services: Services) -> None:
        extra = {**DELEGATION, "champ_futur": {"_type_": "x", "_data_": "y"}}
        append(services, extra)
        stored = services.store.recorder.select_events(stream_id(extra["id"]))
        assert [s.originator_version for s in stored] == [1]
        event = services.store.mapper.to_domain_event(stored[0])
        assert isinstance(event, DelegationRecue)
        assert event.evenement().payload == extra  # unknown fields kept, even the colliding ones
        assert event.recu_le.endswith("Z") and len(event.recu_le) == 24

    def test_duplicates_count_once(self, services: Services) -> None:
        assert append(services, DELEGATION, PILOTAGE, DELEGATION) == (2, 1)
        assert append(services, PILOTAGE) == (0, 1)
        assert clients(services)["claude-code"]["net"] == 2900

    def test_pilotage_before_its_delegation_gives_the_same_bilan(self, services: Services) -> None:
        append(services, PILOTAGE)
        assert clients(services)["claude-code"]["net"] == -2000
        append(services, DELEGATION)
        assert clients(services)["claude-code"] == {
            "delegations": 1, "evites": 4900, "pilotage": 2000, "corrections": 0, "net": 2900,
            "taux_reprise": 0.0, "anomalies": {}, "conflits": 0}

    def test_correction_before_anything_is_counted_then_joined(self, services: Services) -> None:
        append(services, CORRECTION)
        assert clients(services)["claude-code"]["corrections"] == 490
        append(services, DELEGATION, PILOTAGE)
        figures = clients(services)["claude-code"]
        assert figures["net"] == 4900 - 2000 - 490
        assert figures["taux_reprise"] == 490 / 4900

    def test_taux_reprise_is_null_when_evites_is_not_positive(self, services: Services) -> None:
        negative = copy.deepcopy(DELEGATION)
        negative["estimation"]["evites"] = -50
        append(services, negative, CORRECTION)
        figures = clients(services)["claude-code"]
        assert figures["evites"] == -50
        assert figures["taux_reprise"] is None

    def test_a_restart_resumes_from_the_tracking_position(self, settings: Settings) -> None:
        corpus = generate(1_200, seed=3)
        with open_services(settings, run_projections=False) as first:
            for i in range(0, len(corpus), 400):
                append(first, *corpus[i:i + 400])
            first.runner.fold_page()  # one page of 500 folded, the rest not yet
            assert first.projection.position() == 500
        with open_services(settings, run_projections=False) as second:
            assert second.projection.position() == 500
            assert second.runner.catch_up() == len(corpus) - 500
            bilan = bilan_answer(second.bilan())
        assert bilan["provenance"]["evenements"] == len(corpus)
        assert {k: bilan[k] for k in ("economies", "total")} == expected_bilan(corpus)

    def test_a_page_overlapping_an_already_folded_one_is_refused_whole(
            self, services: Services) -> None:
        corpus = generate(600, seed=6)[:500]
        append(services, *corpus)
        events = [value for _, value in services.store.read(1, 500)]
        projection = services.projection
        # Runner A read 1..300 and runner B read 1..500, both after position 0; A commits first.
        projection.process_page(events[:300], last_id=300, previous=0)
        with pytest.raises(IntegrityError):
            projection.process_page(events, last_id=500, previous=0)
        assert bilan_answer(services.bilan())["provenance"]["evenements"] == 300
        services.runner.catch_up()
        bilan = bilan_answer(services.bilan())
        assert bilan["provenance"]["evenements"] == 500
        assert {k: bilan[k] for k in ("economies", "total")} == expected_bilan(corpus)

    def test_runners_racing_with_appends_fold_each_event_exactly_once(
            self, settings: Settings) -> None:
        corpus = generate(4_000, seed=4)
        with open_services(settings, run_projections=False) as a, \
                open_services(settings, run_projections=False) as b:
            a.runner.page_size, b.runner.page_size = 7, 500  # pages of different lengths
            done = threading.Event()

            def follow(services: Services) -> None:
                while not done.is_set():
                    services.runner.catch_up()

            threads = [threading.Thread(target=follow, args=(s,)) for s in (a, b)]
            for t in threads:
                t.start()
            for i in range(0, len(corpus), 3):  # small batches, folded while they arrive
                append(a, *corpus[i:i + 3])
            done.set()
            for t in threads:
                t.join()
            b.runner.catch_up()
            bilan = bilan_answer(a.bilan())
        assert bilan["provenance"]["evenements"] == bilan["provenance"]["tete"] == len(corpus)
        assert {k: bilan[k] for k in ("economies", "total")} == expected_bilan(corpus)

    def test_racing_appends_store_each_id_once(self, settings: Settings) -> None:
        corpus = generate(2_000, seed=5)
        recus: list[int] = []
        with open_services(settings, run_projections=False) as a, \
                open_services(settings, run_projections=False) as b:

            def post_all(services: Services, offset: int) -> None:
                # Overlapping windows: every id is sent by both writers.
                for i in range(offset, len(corpus) + offset, 250):
                    window = [corpus[j % len(corpus)] for j in range(i, i + 250)]
                    recus.append(append(services, *window)[0])

            threads = [threading.Thread(target=post_all, args=(s, off))
                       for s, off in ((a, 0), (b, 125))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            a.runner.catch_up()
            # Counted, not read off the head: lost races leave gaps on PostgreSQL.
            head = a.store.head()
            assert a.store.count_up_to(head, head) == len(corpus)
            bilan = bilan_answer(a.bilan())
        assert sum(recus) == len({e["id"] for e in corpus}) == len(corpus)
        assert {k: bilan[k] for k in ("economies", "total")} == expected_bilan(corpus)

    def test_a_rolled_back_insert_leaves_stockes_equal_to_comptes(
            self, services: Services) -> None:
        # A lost race rolls an insert back; on PostgreSQL its sequence values are gone
        # for good (a gap in notification ids), so stockes must be counted, not assumed.
        append(services, DELEGATION)
        stored = services.store.recorder.select_events(stream_id(DELEGATION["id"]))
        with pytest.raises(IntegrityError):
            services.store.recorder.insert_events(stored)
        append(services, PILOTAGE, CORRECTION)
        services.runner.catch_up()
        conservation = bilan_answer(services.bilan())["conservation"]
        assert conservation["stockes"] == conservation["comptes"] == 3
        assert services.store.count_up_to(services.store.head(), services.store.head()) == 3


    def test_an_unknown_field_holding_a_huge_integer_is_stored_and_folded(
            self, services: Services) -> None:
        # Valid JSON the store accepts, which orjson cannot read back: the fold must not
        # stop.
        delegation = {**copy.deepcopy(DELEGATION), "extra": 10**400}
        assert append(services, delegation, PILOTAGE) == (2, 0)
        assert append(services, CORRECTION) == (1, 0)
        assert clients(services)["claude-code"]["net"] == 4900 - 2000 - 490
        assert bilan_answer(services.bilan())["provenance"]["evenements"] == 3

    def test_a_conflict_keeps_the_differing_version_as_it_was_received(
            self, services: Services) -> None:
        differing = {"cout": 491, **{k: v for k, v in CORRECTION.items() if k != "cout"}}
        append(services, CORRECTION)
        appended = services.store.append(accept_batch({"evenements": [differing]}))
        assert (appended.recus, appended.doublons, appended.conflits) == (0, 1, 1)
        notifications = services.store.recorder.select_notifications(start=1, limit=10)
        kept = services.store.mapper.to_domain_event(notifications[-1])
        assert list(json.loads(kept.payload)) == list(differing)  # the sender's key order


class TestStoreSQLite(StoreContract):
    """The store and projection contract on SQLite files."""

    backend = "sqlite"


class TestStorePostgres(StoreContract):
    """The store and projection contract on a PostgreSQL database."""

    backend = "postgresql"
