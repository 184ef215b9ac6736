"""MIAM's journal rotated by ``logrotate`` is read again from its start, whatever its new
size (issue 13.2; ADR-0052): copied and truncated in place then refilled past the old
offset, renamed and replaced, deleted and created again. The first line of a demande
still wins, and no line is counted malformed."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from miam_economies.api.service.answers import bilan_answer
from miam_economies.api.service.services import Services
from miam_economies.domain.acceptance import accept_batch
from tests.conftest import EXAMPLE_BATCH

DELEGATION = EXAMPLE_BATCH["evenements"][0]


def delegation(demande: str, evites: int) -> dict[str, Any]:
    estimation = {**DELEGATION["estimation"], "evites": evites}
    return {**DELEGATION, "id": f"claude-code:{demande}", "demande_id": demande,
            "estimation": estimation}


def lines(demandes: list[str], preset: str) -> str:
    return "".join(json.dumps({"demande_id": d, "preset": preset, "format": "diff",
                               "note": "x" * 40}) + "\n" for d in demandes)


OLD = [f"dem-old-{i}" for i in range(8)]
NEW = [f"dem-new-{i}" for i in range(12)]  # written after the rotation: longer than OLD


def start(services: Services) -> Path:
    """Delegations for every demande, the old journal joined: about 900 bytes read."""
    events = [delegation(d, 100) for d in OLD] + [delegation(d, 10) for d in NEW]
    services.store.append(accept_batch({"evenements": events}))
    journal = services.settings.journal_path
    journal.write_text(lines(OLD, "ancien"))
    services.runner.catch_up()
    assert 900 < journal.stat().st_size < len(lines(NEW, "nouveau"))
    groupes = bilan_answer(services.bilan("preset"))["groupes"]
    assert groupes["ancien"]["claude-code"]["evites"] == 100 * len(OLD)
    return journal


def assert_new_lines_joined(services: Services) -> None:
    services.runner.catch_up()
    bilan = bilan_answer(services.bilan("preset"))
    groupes = bilan["groupes"]
    assert groupes["nouveau"]["claude-code"]["evites"] == 10 * len(NEW)
    # The first line of a demande wins: the old ones keep their group.
    assert groupes["ancien"]["claude-code"]["evites"] == 100 * len(OLD)
    assert "(inconnu)" not in groupes
    assert bilan["provenance"]["journal"]["malformees"] == 0


class JournalRotationContract:
    """The journal follower on one backend's view."""

    def test_copytruncate_then_refilled_past_the_old_offset(self, services: Services) -> None:
        journal = start(services)
        with journal.open("r+") as f:  # logrotate's copytruncate: same file, emptied
            f.truncate(0)
        with journal.open("a") as f:  # MIAM goes on appending before we look again
            f.write(lines(NEW, "nouveau"))
        assert_new_lines_joined(services)

    def test_renamed_and_replaced(self, services: Services) -> None:
        journal = start(services)
        journal.rename(journal.with_name(journal.name + ".1"))
        journal.write_text(lines(NEW, "nouveau"))
        assert_new_lines_joined(services)

    def test_deleted_then_created_again(self, services: Services) -> None:
        journal = start(services)
        journal.unlink()  # the new file may even get the same inode
        journal.write_text(lines(NEW, "nouveau"))
        assert_new_lines_joined(services)

    def test_an_appended_journal_is_not_read_again(self, services: Services) -> None:
        journal = start(services)
        with journal.open("a") as f:
            f.write(lines(NEW[:3], "nouveau"))
        services.runner.catch_up()
        journal_state = bilan_answer(services.bilan())["provenance"]["journal"]
        assert journal_state["lignes"] == len(OLD) + 3  # each line read once
        os.utime(journal)  # touched, not changed: still nothing to read again
        services.runner.catch_up()
        assert bilan_answer(services.bilan())["provenance"]["journal"]["lignes"] == len(OLD) + 3


class TestJournalRotationSQLite(JournalRotationContract):
    backend = "sqlite"


class TestJournalRotationPostgres(JournalRotationContract):
    backend = "postgresql"
