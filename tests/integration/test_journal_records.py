"""A record of MIAM's journal ends at ``\\n`` only, as JSON lines are defined (issue 21.5):
a carriage return inside a record (JSON whitespace between two tokens) does not split it,
and a ``\\r\\n`` ending is a record's end like ``\\n``."""

from __future__ import annotations

from miam_economies.api.service.answers import bilan_answer
from miam_economies.api.service.services import Services
from miam_economies.domain.acceptance import accept_batch
from tests.integration.test_journal_rotation import delegation


class JournalRecordsContract:
    """The journal follower on one backend's view."""

    def test_a_bare_cr_between_two_tokens_stays_inside_its_record(
            self, services: Services) -> None:
        services.store.append(accept_batch({"evenements": [
            delegation("dem-cr", 7), delegation("dem-crlf", 5)]}))
        services.settings.journal_path.write_bytes(
            b'{"demande_id": "dem-cr",\r "preset": "rapide"}\n'
            b'{"demande_id": "dem-crlf", "preset": "precis"}\r\n')
        services.runner.catch_up()
        bilan = bilan_answer(services.bilan("preset"))
        assert bilan["provenance"]["journal"] == {"lignes": 2, "malformees": 0,
                                                  "sans_demande": 0, "valeurs_ecartees": 0}
        assert bilan["groupes"]["rapide"]["claude-code"]["evites"] == 7
        assert bilan["groupes"]["precis"]["claude-code"]["evites"] == 5
        assert "(inconnu)" not in bilan["groupes"]


class TestJournalRecordsSQLite(JournalRecordsContract):
    backend = "sqlite"


class TestJournalRecordsPostgres(JournalRecordsContract):
    backend = "postgresql"
