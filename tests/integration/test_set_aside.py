"""Issue 34, items 1, 2 and 9: what the POST accepts, every backend folds; what it refuses,
it names; and a stored event no backend can fold is set aside, never a stop (ADR-0135).

Each contract class runs on SQLite and on the real PostgreSQL, where a U+0000 or a long
key of 4-byte characters used to stop the fold for every client for ever.
"""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from miam_economies.api.service.answers import bilan_answer
from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.services import Services
from miam_economies.api.service.settings import Settings
from miam_economies.domain.schema import MAX_NON_ASCII, MAX_STRING
from tests.conftest import EXAMPLE_BATCH, EXAMPLE_CORRECTION, LiveServer, fresh_postgres

SCRIPT = Path(sys.executable).with_name("miam-economies")
DELEGATION, PILOTAGE = EXAMPLE_BATCH["evenements"]
READ_FIELDS = {  # the strings the fold reads, by event (the schema's Text fields)
    "delegation": ["id", "client", "session_id", "demande_id", "agent_id",
                   "estimation.methode"],
    "pilotage": ["id", "client", "session_id", "agent_id", "turn_id", "modele",
                 "demande_ids.0"],
    "correction": ["id", "client", "session_id", "demande_id", "tool_use_id"],
}
EVENTS = {"delegation": DELEGATION, "pilotage": PILOTAGE, "correction": EXAMPLE_CORRECTION}


def widest(seed: int, prefix: str = "") -> str:
    """A string at the rule's edge: MAX_STRING characters, MAX_NON_ASCII of them 4-byte
    characters that do not compress (random CJK extension B), the rest ASCII: 704 bytes."""
    rng = random.Random(seed)
    wide = "".join(chr(rng.randrange(0x20000, 0x2A6DF)) for _ in range(MAX_NON_ASCII))
    ascii_part = "".join(rng.choice("abcdefghij") for _ in range(MAX_STRING - MAX_NON_ASCII))
    return (prefix + wide + ascii_part)[:MAX_STRING]


def with_field(event: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``event`` with the dotted ``path`` (list indexes as numbers) set."""
    changed = copy.deepcopy(event)
    *parents, last = path.split(".")
    target: Any = changed
    for key in parents:
        target = target[int(key)] if isinstance(target, list) else target[key]
    if isinstance(target, list):
        target[int(last)] = value
    else:
        target[last] = value
    return changed


def store_unchecked(settings: Settings, events: list[dict[str, Any]]) -> None:
    """Append ``events`` as an earlier release (or a bug) might have stored them: through
    a second writer's store, past the POST's validation."""
    with open_services(settings, run_projections=False) as other:
        other.store.append(events)


class SetAsideContract:
    """Run on each backend (``backend``)."""

    backend: str

    @pytest.fixture
    def live(self, tmp_path: Path, database_url: str | None) -> Iterator[LiveServer]:
        server = LiveServer(tmp_path / "data", database_url=database_url)
        server.start()
        try:
            yield server
        finally:
            server.close()

    def settings_of(self, server: LiveServer) -> Settings:
        return Settings(data=server.data, database_url=server.database_url)

    def test_a_nul_in_any_field_the_fold_reads_is_a_422_naming_it(self, live: LiveServer
                                                                  ) -> None:
        for kind, paths in READ_FIELDS.items():
            for path in paths:
                event = with_field(EVENTS[kind], path, "a\u0000b")
                answer = live.post({"evenements": [DELEGATION, event]})
                assert answer.status_code == 422, (kind, path)
                [fault] = answer.json()["erreurs"]
                champ = path.replace(".0", "[0]")
                assert (fault["index"], fault["champ"]) == (1, champ)
                assert "U+0000" in fault["message"]
        assert live.stored_count() == 0  # every refusal left the store as it was

    def test_a_lone_surrogate_is_kept_where_unread_and_refused_where_read(
            self, live: LiveServer, tmp_path: Path) -> None:
        # JSON.stringify writes a lone surrogate as an escape (Claude Code's requests do).
        unread = with_field(DELEGATION, "titre", "avant \ud800 apr\u00e8s")
        body = json.dumps({"evenements": [unread, PILOTAGE]}).encode()
        assert b"\\ud800" in body
        answer = live.client.post("/economies", content=body,
                                  headers={"Content-Type": "application/json"})
        assert answer.json() == {"ok": True, "recus": 2, "doublons": 0}
        assert live.bilan()["economies"]["claude-code"]["net"] == 2900
        # Re-sent as it was: the same content, a doublon without conflict.
        assert live.client.post("/economies", content=body, headers={
            "Content-Type": "application/json"}).json() == {
            "ok": True, "recus": 0, "doublons": 2}
        read = with_field(EXAMPLE_CORRECTION, "tool_use_id", "t\udc00")
        refused = live.client.post("/economies", content=json.dumps(
            {"evenements": [read]}).encode(), headers={"Content-Type": "application/json"})
        assert refused.status_code == 422
        assert refused.json()["erreurs"][0]["champ"] == "tool_use_id"
        # Export writes the escape (UTF-8 text cannot hold the surrogate); import of that
        # line into another store gives the same event back.
        exported = live.cli("export").stdout
        assert "\\ud800" in exported and "apr\u00e8s" in exported
        line = next(json.loads(x) for x in exported.splitlines() if "titre" in x)
        assert line["titre"] == "avant \ud800 apr\u00e8s"
        copy_file = tmp_path / "economies.jsonl"
        copy_file.write_text(exported, encoding="utf-8")
        other = Settings(data=tmp_path / "other")
        done = subprocess.run([str(SCRIPT), "import", "--json", "--data", str(other.data),
                               str(copy_file)], capture_output=True, text=True, check=True)
        assert json.loads(done.stdout)["recus"] == 2
        with open_services(other, run_projections=False) as services:
            services.runner.catch_up()
            assert bilan_answer(services.bilan())["economies"]["claude-code"]["net"] == 2900

    def test_strings_at_the_edge_of_the_rule_are_folded_on_every_backend(
            self, live: LiveServer) -> None:
        # A pilotage and a correction before their delegation, each key at its widest:
        # on PostgreSQL these rows' index entries are the widest the view writes.
        demande, client = widest(1), widest(2)
        pilotage = {**PILOTAGE, "id": widest(3), "client": client,
                    "demande_ids": [demande], "modele": widest(4), "session_id": widest(5)}
        correction = {**EXAMPLE_CORRECTION, "id": widest(6), "client": client,
                      "demande_id": demande, "tool_use_id": widest(7)}
        assert live.post({"evenements": [pilotage, correction]}).status_code == 200
        delegation = {**DELEGATION, "id": widest(8), "client": client,
                      "demande_id": demande, "agent_id": widest(9),
                      "estimation": {**DELEGATION["estimation"], "methode": widest(10)}}
        assert live.post({"evenements": [delegation]}).status_code == 200
        bilan = live.bilan()
        assert bilan["economies"][client]["net"] == 4900 - 2000 - 490
        assert bilan["conservation"]["comptes"] == 3 == bilan["conservation"]["stockes"]
        assert bilan["conservation"]["ecartes"] == 0
        found = live.client.get(f"/economies/demandes/{demande}").json()
        assert found["pilotage"]["part"] == 2000 and found["corrections"]["cout"] == 490
        # One character more beyond ASCII is refused, naming the field.
        over = {**DELEGATION, "client": "\u00e9" * (MAX_NON_ASCII + 1)}
        refused = live.post({"evenements": [over]})
        assert refused.status_code == 422 and refused.json()["erreurs"][0]["champ"] == \
            "client"

    def test_a_stored_event_no_backend_can_keep_is_set_aside_and_the_fold_goes_on(
            self, live: LiveServer) -> None:
        # Stored past the door (an earlier release took a NUL): every backend sets it
        # aside alike, counts it, and folds what comes after, for every client.
        poison = with_field(DELEGATION, "client", "evil\u0000client")
        poison["id"] = "claude-code:poison"
        long_key = with_field(PILOTAGE, "demande_ids.0", widest(11) * 2)
        long_key["id"] = "claude-code:long-key"
        broken = {k: v for k, v in DELEGATION.items() if k != "estimation"}
        broken["id"] = "claude-code:no-estimation"  # no event of schema 1 at all
        store_unchecked(self.settings_of(live), [poison, long_key, broken])
        assert live.post(EXAMPLE_BATCH).status_code == 200
        bilan = live.bilan()
        assert bilan["economies"]["claude-code"]["net"] == 2900
        conservation = bilan["conservation"]
        assert conservation["ecartes"] == 3
        assert conservation["stockes"] == conservation["comptes"] + 3 == 5
        health = live.client.get("/healthz").json()
        assert health["ok"] is True and health["ecartes"] == 3 and health["retard"] == 0
        metrics = live.client.get("/metrics").text
        assert "miam_economies_projection_set_aside_events 3.0" in metrics
        assert "3 events set aside" in live.cli("bilan").stdout
        live.cli("anomalies")  # reads every stored event: the broken one is passed over
        # A replay under another formula sets them aside again, alike.
        live.cli("replay", "--formule", "pondere-v2")
        assert live.bilan()["conservation"]["ecartes"] == 3

    def test_journal_values_no_backend_can_keep_are_left_out_never_a_stop(
            self, live: LiveServer) -> None:
        journal = live.data / "delegations.jsonl"
        cjk = "".join(chr(0x4E00 + i) for i in range(900))
        lines = [
            {"demande_id": DELEGATION["demande_id"], "preset": "rapide", "erreur": cjk,
             "trace": "x" * 300_000, "note": "a\u0000b"},
            {"demande_id": "dem-\u0000", "preset": "lent"},
            {"demande_id": "dem-later", "preset": "code"},
        ]
        # Written in pieces, as MIAM's logger may: the fold joins only whole lines.
        text = "".join(json.dumps(line) + "\n" for line in lines).encode()
        with journal.open("wb") as f:
            for start in range(0, len(text), 65_536):
                f.write(text[start:start + 65_536])
                f.flush()
        later = with_field(DELEGATION, "demande_id", "dem-later")
        later["id"] = "claude-code:dem-later"
        assert live.post({"evenements": [DELEGATION, later]}).status_code == 200
        bilan = live.client.get("/economies/bilan", params={"par": "preset",
                                                            "attendre": "1"}).json()
        assert set(bilan["groupes"]) == {"rapide", "code"}
        journal_state = bilan["provenance"]["journal"]
        assert journal_state["valeurs_ecartees"] == 4  # erreur, trace, note; the NUL id
        assert journal_state["sans_demande"] == 1 and journal_state["lignes"] == 2


class TestSetAsideSQLite(SetAsideContract):
    """On SQLite."""

    backend = "sqlite"


class TestSetAsidePostgres(SetAsideContract):
    """On PostgreSQL, where these cases used to stop the fold for ever."""

    backend = "postgresql"


def test_a_page_the_view_refuses_is_folded_event_by_event_past_the_one_it_refuses(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The net under the fold's own check (``projections.set_aside``): with that check
    switched off, PostgreSQL itself refuses the NUL; the page is folded again one event
    at a time and only that event is set aside."""
    from miam_economies.api.store import mapper

    monkeypatch.setattr(mapper, "stored_fault", lambda value: None)
    with fresh_postgres() as url:
        settings = Settings(data=tmp_path / "data", database_url=url)
        poison = with_field(DELEGATION, "client", "evil\u0000client")
        poison["id"] = "claude-code:poison"
        with open_services(settings, run_projections=False) as services:
            services.store.append([EXAMPLE_CORRECTION, poison, *EXAMPLE_BATCH["evenements"]])
            services.runner.catch_up()
            bilan = bilan_answer(services.bilan())
            health = services.fold_health()
        assert bilan["economies"]["claude-code"]["net"] == 2410
        assert bilan["conservation"]["ecartes"] == 1 == health.ecartes
        assert health.retard == 0 and bilan["position"] == 4


def test_the_fold_has_stopped_only_once_the_waiting_event_has_waited(tmp_path: Path) -> None:
    """ADR-0136: stopped means events wait and nothing moved for the bound since the
    oldest of them was stored; a fold quiet for longer than the bound, then given an
    event, has not stopped."""
    settings = Settings(data=tmp_path / "data", fold_stall_after=1.0)
    with open_services(settings, run_projections=False) as opened:
        services = Services(**{**opened.__dict__, "opened": 0.0})  # opened long ago
        services.store.append([DELEGATION])
        health = services.fold_health()
        assert (health.tete, health.position, health.retard) == (1, 0, 1)
        assert health.arrete_depuis is None  # stored just now
        time.sleep(1.2)
        assert (services.fold_health().arrete_depuis or 0) >= 1  # waited past the bound
        services.runner.catch_up()
        assert services.fold_health().arrete_depuis is None  # nothing waits
        time.sleep(1.2)  # a quiet spell longer than the bound...
        services.store.append([PILOTAGE])
        quiet = services.fold_health()
        assert quiet.retard == 1 and quiet.arrete_depuis is None  # ...then an event
        time.sleep(1.2)
        assert services.fold_health().arrete_depuis is not None


def test_the_export_of_any_accepted_event_is_accepted_by_import(
        server: LiveServer, tmp_path: Path) -> None:
    """Item 7: a body of exactly 1 MiB, its one event's unknown field all numbers the
    store writes back longer (``9e15`` is ``9000000000000000.0``): its exported line,
    4 MiB, is imported again."""
    limit = 1_048_576
    event = with_field(DELEGATION, "mesures", [])
    skeleton = json.dumps({"evenements": [event]}, separators=(",", ":")).encode()
    count = (limit - len(skeleton) + 1) // 5  # "9e15," per number, the last without ","
    event["mesures"] = [9e15] * count
    body = json.dumps({"evenements": [event]}, separators=(",", ":")).replace(
        "9000000000000000.0", "9e15").encode()
    body += b" " * (limit - len(body))  # JSON allows trailing whitespace: exactly 1 MiB
    assert len(body) == limit
    answer = server.client.post("/economies", content=body,
                                headers={"Content-Type": "application/json"})
    assert answer.json() == {"ok": True, "recus": 1, "doublons": 0}
    out = tmp_path / "economies.jsonl"
    server.cli("export", "--out", str(out))
    assert out.stat().st_size > 3 * limit
    done = subprocess.run([str(SCRIPT), "import", "--json", "--data", str(tmp_path / "b"),
                           str(out)], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout)["recus"] == 1


def test_a_server_with_a_larger_body_limit_exports_what_its_import_takes(
        tmp_path: Path) -> None:
    # The line limit follows the body limit given to import (--max-body, as serve's).
    line = json.dumps({**DELEGATION, "mesures": "x" * (9 * 1_048_576)}) + "\n"
    source = tmp_path / "big.jsonl"
    source.write_text(line)
    base = [str(SCRIPT), "import", "--json", "--data", str(tmp_path / "d"), str(source)]
    refused = subprocess.run(base, capture_output=True, text=True)
    assert refused.returncode == 1 and "over 8388608 bytes" in refused.stdout
    taken = subprocess.run([*base, "--max-body", str(2 * 1_048_576)], capture_output=True,
                           text=True, check=True)
    assert json.loads(taken.stdout)["recus"] == 1
