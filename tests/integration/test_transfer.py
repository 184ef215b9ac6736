"""Issue 8, "The contract's file, both ways": ``export`` writes economies.jsonl from the
store, ``import`` ingests such files through the validation and dedup of HTTP, on real
SQLite files and, where a server is involved, a real uvicorn."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from itertools import groupby
from pathlib import Path
from typing import Any

from miam_economies.api.service.export import stored_events
from miam_economies.api.service.importing import import_files
from miam_economies.api.store.application import EventStore
from miam_economies.api.store.backends import SQLITE, Database
from tests.conftest import EXAMPLE_BATCH, EXAMPLE_CORRECTION, LiveServer
from tests.corpus import generate

SCRIPT = Path(sys.executable).with_name("miam-economies")


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``miam-economies ARGS`` in a subprocess (standard output is a pipe: no progress)."""
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True,
                          check=check, timeout=300)


def lines_of(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def test_export_writes_each_event_as_received_plus_recu_le(server: LiveServer) -> None:
    server.post(EXAMPLE_BATCH)
    done = run("export", "--data", str(server.data))
    exported = lines_of(done.stdout)
    assert [{k: v for k, v in e.items() if k != "recu_le"} for e in exported] == \
        EXAMPLE_BATCH["evenements"]
    assert list(exported[0])[-1] == "recu_le"  # added after the fields as received
    assert all(e["recu_le"].endswith("Z") for e in exported)
    assert done.stderr == ""  # a pipe: no progress bar


def test_export_to_a_file_gives_the_same_lines(server: LiveServer, tmp_path: Path) -> None:
    server.post(EXAMPLE_BATCH)
    out = tmp_path / "economies.jsonl"
    run("export", "--data", str(server.data), "--out", str(out))
    assert out.read_text() == run("export", "--data", str(server.data)).stdout
    assert out.stat().st_mode & 0o777 == 0o600  # session ids: owner only, as the store
    assert not list(tmp_path.glob("*.partiel"))


def test_import_refuses_bad_lines_by_number_and_stores_the_rest(tmp_path: Path) -> None:
    delegation, pilotage = EXAMPLE_BATCH["evenements"]
    bad_cout = {**pilotage, "id": "claude-code:s:a1:t2", "cout": 3.0}
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join([
        json.dumps(delegation),
        "",                                       # line 2: blank, skipped silently
        "{not json",                              # line 3
        json.dumps(bad_cout),                     # line 4: 3.0 is not a JSON integer
        json.dumps({**pilotage, "recu_le": "yesterday"}),  # line 5: recu_le unusable
        '{"a": 1, "a": 2}',                       # line 6: a repeated key, as HTTP refuses
        json.dumps([delegation]),                 # line 7: an array, not one event
        json.dumps(pilotage),
    ]) + "\n")
    data = tmp_path / "data"
    done = run("import", "--data", str(data), str(source), check=False)
    assert done.returncode == 1
    refused = [line for line in done.stderr.splitlines() if line.startswith("refused: ")]
    assert [line.split(":")[2] for line in refused] == ["3", "4", "5", "6", "7"]
    assert "cout: must be a JSON integer" in refused[1]
    assert "recu_le: must be ISO 8601" in refused[2]
    assert "the line is a JSON array: a file holds one event" in refused[4]
    assert "recus 2, doublons 0, conflits 0, refused lines 5 (of 7)" in done.stdout
    again = run("import", "--data", str(data), str(source), "--json", check=False)
    counts = json.loads(again.stdout)
    assert (counts["recus"], counts["doublons"], len(counts["refusees"])) == (0, 2, 5)
    bilan = json.loads(run("bilan", "--data", str(data), "--json").stdout)
    assert bilan["economies"]["claude-code"]["net"] == 2900


def test_strict_import_with_one_bad_line_imports_nothing(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    good.write_text("".join(json.dumps(e) + "\n" for e in EXAMPLE_BATCH["evenements"]))
    bad.write_text(json.dumps(EXAMPLE_CORRECTION) + "\n" + '{"schema": 2}\n')
    data = tmp_path / "data"
    done = run("import", "--strict", "--data", str(data), str(good), str(bad), check=False)
    assert done.returncode == 1
    assert f"refused: {bad}:2: schema: must be the number 1" in done.stderr
    assert "nothing imported" in done.stderr
    assert not (data / "economies.sqlite").exists()  # not even a store was created
    ok = run("import", "--strict", "--data", str(data), str(good))
    assert "recus 2, doublons 0" in ok.stdout


def test_recu_le_is_kept_and_given_in_the_stores_form(tmp_path: Path) -> None:
    delegation, pilotage = EXAMPLE_BATCH["evenements"]
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({**delegation, "recu_le": "2026-10-30T09:12:05.001Z"}) + "\n"
                      + json.dumps({**pilotage, "recu_le": "2026-10-30T11:12:06+02:00"}) + "\n"
                      + json.dumps(EXAMPLE_CORRECTION) + "\n")  # none: the import's time
    data = tmp_path / "data"
    before = datetime.now(UTC) - timedelta(seconds=1)
    run("import", "--data", str(data), str(source))
    exported = lines_of(run("export", "--data", str(data)).stdout)
    assert [e["recu_le"] for e in exported[:2]] == ["2026-10-30T09:12:05.001Z",
                                                    "2026-10-30T09:12:06.000Z"]
    assert datetime.fromisoformat(exported[2]["recu_le"].replace("Z", "+00:00")) >= before
    assert [{k: v for k, v in e.items() if k != "recu_le"} for e in exported] == [
        delegation, pilotage, EXAMPLE_CORRECTION]


def test_import_appends_in_batches_of_500(tmp_path: Path) -> None:
    events = generate(1_200, seed=11)[:1_200]
    source = tmp_path / "plain.jsonl"
    source.write_text("".join(json.dumps(e) + "\n" for e in events))
    ticks: Iterator[int] = iter(range(1, 100))
    # A clock that moves one second per append: each batch's events share one recu_le.
    store = EventStore(env=Database(SQLITE, path=tmp_path / "economies.sqlite").store_env(),
                       clock=lambda: datetime(2026, 1, 1, tzinfo=UTC) + timedelta(
                           seconds=next(ticks)))
    try:
        report = import_files(store, [source])
        runs = [len(list(group)) for _, group in
                groupby(e.recu_le for e in stored_events(store))]
    finally:
        store.close()
    assert (report.recus, report.doublons, report.refusees) == (1_200, 0, [])
    assert runs == [500, 500, 200]


def test_an_import_reaches_a_running_server_and_http_then_sees_doublons(
        server: LiveServer, tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(e) + "\n" for e in EXAMPLE_BATCH["evenements"]))
    run("import", "--data", str(server.data), str(source))
    assert server.bilan()["economies"]["claude-code"]["net"] == 2900
    assert server.post(EXAMPLE_BATCH).json() == {"ok": True, "recus": 0, "doublons": 2}


def test_conflicts_are_exported_on_request_and_imported_as_conflicts(
        server: LiveServer, tmp_path: Path) -> None:
    server.post(EXAMPLE_BATCH)
    changed = copy.deepcopy(EXAMPLE_BATCH)
    changed["evenements"][1]["cout"] = 999_999
    assert server.post(changed).json()["conflits"] == 1
    contract_file = lines_of(run("export", "--data", str(server.data)).stdout)
    assert len(contract_file) == 2  # one line per id: the contract's file
    full = tmp_path / "full.jsonl"
    run("export", "--data", str(server.data), "--conflits", "--out", str(full))
    assert [e["id"] for e in lines_of(full.read_text())] == [
        e["id"] for e in EXAMPLE_BATCH["evenements"]] + [EXAMPLE_BATCH["evenements"][1]["id"]]
    copy_dir = tmp_path / "copy"
    done = run("import", "--data", str(copy_dir), str(full))
    assert "recus 2, doublons 1, conflits 1" in done.stdout
    imported = json.loads(run("bilan", "--data", str(copy_dir), "--json").stdout)
    assert imported["economies"] == server.bilan()["economies"]  # conflits 1 on both
    again = run("export", "--data", str(copy_dir), "--conflits").stdout
    assert again == full.read_text()  # ids, versions and recu_le, byte for byte



EXAMPLES = Path(__file__).parents[2] / "examples"


def test_import_reads_the_contracts_example_batch_document(tmp_path: Path) -> None:
    # Issue 13.4: the first file a user tries, pretty-printed, as the contract gives it.
    data = str(tmp_path / "data")
    first = run("import", "--data", data, str(EXAMPLES / "contract-batch.json"), "--json")
    assert json.loads(first.stdout) == {"recus": 2, "doublons": 0, "conflits": 0,
                                        "lignes": 2, "refusees": []}
    again = run("import", "--data", data, str(EXAMPLES / "contract-batch.json"))
    assert "recus 0, doublons 2" in again.stdout
    bilan = json.loads(run("bilan", "--data", data, "--json").stdout)
    assert bilan["economies"]["claude-code"]["net"] == 2900


def test_import_builds_in_the_zone_the_next_command_reads(tmp_path: Path) -> None:
    # The independent audit of issue 30: import built a new bilan in the machine's zone,
    # so the next command under MIAM_ECONOMIES_TZ rebuilt it ("moves to zone").
    data = str(tmp_path / "data")
    env = {**os.environ, "MIAM_ECONOMIES_TZ": "Pacific/Chatham"}
    subprocess.run([str(SCRIPT), "import", "--data", data, str(EXAMPLES / "contract-batch.json")],
                   capture_output=True, text=True, check=True, env=env, timeout=300)
    read = subprocess.run([str(SCRIPT), "bilan", "--data", data, "--json"],
                          capture_output=True, text=True, check=True, env=env, timeout=300)
    assert "moves to zone" not in read.stderr
    assert json.loads(read.stdout)["provenance"]["fuseau"] == "Pacific/Chatham"
    bad = run("import", "--data", data, "--fuseau", "Mars/Olympus",
              str(EXAMPLES / "contract-batch.json"), check=False)
    assert bad.returncode == 2 and "--fuseau" in bad.stderr


def test_a_documents_refused_events_are_reported_by_their_index(tmp_path: Path) -> None:
    bad = {**EXAMPLE_CORRECTION, "outil": "Grep"}
    document = tmp_path / "batch.json"  # compact, on one line, with an unknown key
    document.write_text(json.dumps({"evenements": [*EXAMPLE_BATCH["evenements"], bad, 3],
                                    "envoye_le": "2026-10-30T09:12:10.000Z"}))
    done = run("import", "--data", str(tmp_path / "data"), str(document), "--json",
               check=False)
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert (report["recus"], report["lignes"]) == (2, 4)
    assert [(r["ligne"], r["index"]) for r in report["refusees"]] == [(None, 2), (None, 3)]
    assert report["refusees"][0]["erreurs"][0].startswith("outil: must be one of")
    plain = run("import", "--data", str(tmp_path / "data"), str(document), check=False)
    assert f"refused: {document}: evenements[2]: outil:" in plain.stderr


def test_a_json_lines_file_is_still_read_line_by_line(tmp_path: Path) -> None:
    # A JSON lines file whose first line is an event never goes down the document path.
    lines = tmp_path / "events.jsonl"
    lines.write_text("".join(json.dumps(e) + "\n" for e in EXAMPLE_BATCH["evenements"])
                     + '{"evenements": "not an event"}\n')
    report = json.loads(run("import", "--data", str(tmp_path / "data"), str(lines),
                            "--json", check=False).stdout)
    assert (report["recus"], [r["ligne"] for r in report["refusees"]]) == (2, [3])
