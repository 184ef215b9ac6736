"""The append that guesses a batch all new (ADR-0117), on real SQLite and PostgreSQL: after
an all-new batch the next is inserted without asking which ids are stored; where the guess
is wrong the store refuses the insert whole and the append asks, so doublons, conflicts
and notification ids come out as without the guess."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from miam_economies.api.service.services import Services
from miam_economies.api.store.sqlite import SQLiteEconomiesRecorder
from miam_economies.domain.acceptance import accept_batch
from tests.corpus import generate


def post(services: Services, events: list[dict[str, Any]]) -> tuple[int, int, int]:
    appended = services.store.append(accept_batch({"evenements": events}))
    return appended.recus, appended.doublons, appended.conflits


def notification_ids(services: Services) -> list[int]:
    recorder = services.store.recorder
    return [n.id for n in recorder.select_notifications(start=1, limit=10_000)]


class GuessContract:
    """What every backend keeps, guessing or not."""

    def test_a_resent_batch_after_a_new_one_is_all_doublons(self, services: Services) -> None:
        events = generate(300, seed=11)
        assert post(services, events[:100]) == (100, 0, 0)
        assert post(services, events[100:200]) == (100, 0, 0)  # guessed, right
        assert post(services, events[100:200]) == (0, 100, 0)  # guessed, refused, asked
        assert post(services, events[150:300]) == (100, 50, 0)  # asked: the last had none
        assert post(services, events[:10]) == (0, 10, 0)
        # Refused inserts left no gap: the log is 1..300, in order.
        assert notification_ids(services) == list(range(1, 301))

    def test_a_conflict_is_seen_when_the_guess_was_wrong(self, services: Services) -> None:
        events = generate(40, seed=12)
        post(services, events[:20])
        changed = copy.deepcopy(events[5])
        changed["cout"] = changed["cout"] + 1
        # The guess holds after an all-new batch: the store refuses it, and the append
        # finds the id stored with other content.
        assert post(services, [changed, *events[20:40]]) == (20, 1, 1)
        assert notification_ids(services)[-1] == 41  # the conflict's own stream


class TestGuessSQLite(GuessContract):
    backend = "sqlite"

    def test_an_all_new_batch_after_another_is_not_looked_up(
            self, services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
        events = generate(60, seed=13)
        recorder = services.store.economies_recorder
        assert isinstance(recorder, SQLiteEconomiesRecorder)
        asked: list[int] = []  # the ids of each existence query, which still runs
        real = recorder.stored_states_hex
        monkeypatch.setattr(recorder, "stored_states_hex",
                            lambda ids: asked.append(len(ids)) or real(ids))
        post(services, events[:20])  # asked: nothing was known of the store
        post(services, events[20:40])  # guessed
        assert asked == [20]
        assert post(services, events[:20] + events[40:60]) == (20, 20, 0)  # refused, asked
        assert asked == [20, 40]
        assert notification_ids(services) == list(range(1, 61))


class TestGuessPostgres(GuessContract):
    # A rolled-back COPY draws sequence values: PostgreSQL never guesses, and its ids stay
    # gap-free (the contract's test above).
    backend = "postgresql"
