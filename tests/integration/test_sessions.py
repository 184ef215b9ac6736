"""A Claude Code session read over a real server, from Python and from the command line, on
SQLite and PostgreSQL (SPEC, "Claude Code's own record: relevés, sessions, and the share
saved", items "A session", "Rapprochement", "In the bilan"; ADR-0176, ADR-0177): its
figures, ``part_economisee`` and every verdict equal to an independent recomputation of
the story in ``tests/session_support.py``; the bilan's summary; ``?par=session``; and the
refusals (404, 400, 401), never a 500."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from miam_economies import read_session
from tests.conftest import LiveServer
from tests.session_support import (
    BOTH,
    CLAUDE_ONLY,
    PLUGIN_ONLY,
    expected_figures,
    expected_session,
    expected_summary,
    plugin_events,
    write_transcripts,
)


def loaded(server: LiveServer, tmp_path: Path) -> None:
    """The story's plugin events POSTed and its transcripts imported as a user does."""
    response = server.post({"evenements": plugin_events()})
    assert response.status_code == 200, response.text
    assert server.bilan()["rapprochement"] is None  # no relevé yet
    done = server.cli("releves", str(write_transcripts(tmp_path / "claude")), "--json")
    counts = json.loads(done.stdout)
    assert counts["reponses"] == counts["nouvelles"] == 9 and counts["incompletes"] == 1


def session(server: LiveServer, session_id: str, **params: str) -> object:
    response = server.client.get(f"/economies/sessions/{session_id}",
                                 params={"attendre": "1", **params})
    assert response.status_code == 200, response.text
    return response.json()


class Sessions:
    """The contract, run on each backend."""

    backend = "sqlite"

    def test_each_session_is_its_independent_recomputation(
            self, server: LiveServer, tmp_path: Path) -> None:
        loaded(server, tmp_path)
        for session_id in (BOTH, CLAUDE_ONLY, PLUGIN_ONLY):
            assert session(server, session_id) == expected_session(session_id)
        both = expected_session(BOTH)
        # Every verdict is met once, and the share is a fraction of the whole spend.
        assert sorted(e["verdict"] for e in both["rapprochement"]) == sorted(
            ["concorde", "plugin_sous_releve", "plugin_au_dessus", "releve_incomplet",
             "non_observe"])
        assert 0 < both["part_economisee"] < 1
        assert expected_session(CLAUDE_ONLY)["economies"]["net"] == 0
        assert expected_session(PLUGIN_ONLY)["claude"] is None
        assert expected_session(PLUGIN_ONLY)["part_economisee"] is None

    def test_the_bilan_summarises_the_sessions_both_sources_saw(
            self, server: LiveServer, tmp_path: Path) -> None:
        loaded(server, tmp_path)
        bilan = server.bilan()
        assert bilan["rapprochement"] == expected_summary()
        by_session = server.client.get("/economies/bilan", params={"par": "session"})
        assert by_session.status_code == 200
        groupes = by_session.json()["groupes"]
        assert list(groupes) == sorted([BOTH, PLUGIN_ONLY])
        for session_id, clients in groupes.items():
            assert clients["claude-code"] == expected_figures(session_id)

    def test_python_and_the_command_line_read_what_the_route_gives(
            self, server: LiveServer, tmp_path: Path) -> None:
        loaded(server, tmp_path)
        route = session(server, BOTH)
        assert read_session(BOTH, server.data, database_url=server.database_url) == route
        printed = server.cli("session", BOTH, "--json")
        assert json.loads(printed.stdout) == route
        words = server.cli("session", BOTH).stdout
        assert "releve_incomplet" in words and f"{route['part_economisee']:.1%}" in words
        assert read_session("never-seen", server.data,
                            database_url=server.database_url) is None

    def test_a_bad_request_is_refused_and_never_answered_with_figures(
            self, server: LiveServer, tmp_path: Path) -> None:
        loaded(server, tmp_path)
        client = server.client
        missing = client.get("/economies/sessions/never-seen")
        assert missing.status_code == 404
        assert missing.json() == {"ok": False, "erreur":
                                  "no event and no reply for session 'never-seen'"}
        for params, word in (({"format": "xml"}, "format"), ({"formt": "ligne"}, "formt"),
                             ({"attendre": "oui"}, "attendre")):
            refused = client.get(f"/economies/sessions/{BOTH}", params=params)
            assert refused.status_code == 400, params
            assert word in refused.json()["erreur"]
        for params in ({"par": "session", "puis": "jour"}, {"par": "jour", "puis": "session"},
                       {"par": "session", "depuis": "2026-11-20"}):
            assert client.get("/economies/bilan", params=params).status_code == 400
        anonymous = client.get(f"/economies/sessions/{BOTH}", headers={"Authorization": ""})
        assert anonymous.status_code == 401

    def test_the_status_line_is_one_line_of_text(
            self, server: LiveServer, tmp_path: Path) -> None:
        loaded(server, tmp_path)
        response = server.client.get(f"/economies/sessions/{BOTH}",
                                     params={"format": "ligne", "attendre": "1"})
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/plain")
        expected = expected_session(BOTH)
        net = expected["economies"]["net"]
        assert response.text == (f"MIAM net {net:,} tokens · "
                                 f"{expected['part_economisee']:.1%} saved · "
                                 "4 delegations\n")
        plugin_only = server.client.get(f"/economies/sessions/{PLUGIN_ONLY}",
                                        params={"format": "ligne"}).text
        assert "saved" not in plugin_only and "1 delegation\n" in plugin_only


    def test_a_session_read_while_its_replies_stream_then_once_they_end(
            self, server: LiveServer, tmp_path: Path) -> None:
        # The files as a live session left them (each reply's first lines: smaller,
        # no stop_reason), then as it ended: the replies grow, their rows and the
        # bilan's per-agent sums follow, and the whole equals the recomputation.
        assert server.post({"evenements": plugin_events()}).status_code == 200
        server.cli("releves", str(write_transcripts(tmp_path / "early", partial=True)))
        early = session(server, BOTH)
        assert {e["verdict"] for e in early["rapprochement"]} == {"releve_incomplet",
                                                                  "non_observe"}
        assert server.bilan()["rapprochement"]["releve_incomplet"] == 4
        server.cli("releves", str(write_transcripts(tmp_path / "claude")))
        assert session(server, BOTH) == expected_session(BOTH)
        assert server.bilan()["rapprochement"] == expected_summary()


    def test_the_report_shows_the_share_saved_and_the_verdicts(
            self, server: LiveServer, tmp_path: Path) -> None:
        before = server.client.get("/economies/rapport")
        assert before.status_code == 200 and "No transcript imported yet" in before.text
        loaded(server, tmp_path)
        server.bilan()
        page = server.client.get("/economies/rapport").text
        summary = expected_summary()
        section = page[page.index('id="part-economisee"'):page.index("Anomalies and")]
        text = " ".join(re.sub(r"<[^>]+>", " ", section).split())
        assert (f"spent {summary['depense_claude']:,} tokens" in text
                and f"saved {summary['part_economisee']:.1%}" in text)
        for verdict in ("concorde", "plugin_sous_releve", "plugin_au_dessus",
                        "releve_incomplet", "non_observe"):
            assert f"{verdict} {summary[verdict]}" in text


class TestSessionsSQLite(Sessions):
    backend = "sqlite"


class TestSessionsPostgres(Sessions):
    backend = "postgresql"


@pytest.mark.parametrize("session_id", [BOTH, CLAUDE_ONLY])
def test_a_replay_under_a_weighted_formula_keeps_the_session(
        tmp_path: Path, session_id: str) -> None:
    # The figures move to the formula's weighted tokens, each with its en_usd; the
    # replies and the verdicts' inputs come from the same rows, rebuilt by the replay.
    server = LiveServer(tmp_path / "data")
    try:
        server.start()
        loaded(server, tmp_path)
        before = session(server, session_id)
        server.stop()
        server.cli("replay", "--formule", "pondere-v1")
        server.start()
        after = session(server, session_id)
        # The fold's per-agent sums of replies are the session's, under the new formula.
        summary = server.bilan()["rapprochement"]
        both = session(server, BOTH)
        assert summary["depense_claude"] == both["claude"]["cout"]
        assert summary["ecart"] == sum(e["ecart"] for e in both["rapprochement"]
                                       if e["verdict"] != "releve_incomplet"
                                       and e["ecart"] is not None)
    finally:
        server.close()
    assert after["claude"]["reponses"] == before["claude"]["reponses"]
    assert "en_usd" in after["economies"] and "en_usd" in after["claude"]
    assert after["claude"]["cout"] != before["claude"]["cout"]
