"""The bench's own machinery (``bench/``; issue 22): the bare append stores the rows our
store stores, in a table of the store's shape; ``docs/performance.md``'s table (the
README's before ADR-0121) is rewritten between its markers only, by default; CPU deltas
over a process tree. No timing is asserted: the bench prints figures, it never tests
them."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from bench import proc
from bench.bare import FILE
from bench.report import MARKERS, markdown, replace_table
from bench.report_postgres import postgres_rows
from bench.servers import bodies, corpus, post_all, remove_tree, serving
from bench.transcripts import import_seconds, write_transcripts
from bench.transcripts import rows as transcript_rows
from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.settings import Settings
from miam_economies.api.store.mapper import payload_text
from miam_economies.api.store.transcoder import OrjsonTranscoder
from miam_economies.domain.acceptance import accept_batch
from miam_economies.domain.events import TOPICS, stream_id
from tests.conftest import TOKEN
from tests.corpus import journal_lines

ROOT = Path(__file__).parents[2]


def shape(path: Path) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """The ``stored_events`` table's columns and indexes in the SQLite file ``path``."""
    db = sqlite3.connect(path)
    try:
        columns = db.execute("PRAGMA table_info(stored_events)").fetchall()
        indexes = [row[2:] for row in db.execute("PRAGMA index_list(stored_events)")]
    finally:
        db.close()
    return columns, indexes


def test_bare_append_stores_our_rows(tmp_path: Path) -> None:
    events = corpus(600, seed=3)
    with serving(tmp_path / "bare", "bare") as server:
        posted = post_all(server, bodies(events), clients=2)
    assert (posted.events, posted.posts) == (600, 2)
    db = sqlite3.connect(tmp_path / "bare" / FILE)
    try:
        rows = {row[0]: row[1:] for row in db.execute("SELECT * FROM stored_events")}
    finally:
        db.close()
    assert len(rows) == len(events)
    for event in events:
        version, topic, state = rows[stream_id(event["id"]).hex]
        assert (version, topic) == (1, TOPICS[event["type"]])
        stored = OrjsonTranscoder().decode(state)  # our transcoder reads it as ours
        assert list(stored) == ["timestamp", "payload", "recu_le"]
        assert stored["payload"] == payload_text(event)
        assert stored["recu_le"].endswith("Z")


def test_bare_table_has_the_stores_shape(tmp_path: Path) -> None:
    with serving(tmp_path / "bare", "bare"):
        pass
    settings = Settings(data=tmp_path / "ours", token=TOKEN, fuseau="UTC")
    with open_services(settings, run_projections=False):
        pass
    assert shape(tmp_path / "bare" / FILE) == shape(settings.database.path)


def test_the_readme_table_is_replaced_between_its_markers_only() -> None:
    readme = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    block = markdown([["a measure", "1 ev/s", "", "1.00", ">= 1"]], "Measured now:")
    replaced = replace_table(readme, block)
    before, after = readme.split(MARKERS[0])[0], readme.split(MARKERS[1])[1]
    assert replaced == before + block + after
    assert "| a measure | 1 ev/s |  | 1.00 | >= 1 |" in replaced
    with pytest.raises(ValueError):
        replace_table(readme.replace(MARKERS[1], ""), block)


def test_make_bench_rewrites_the_performance_page_unless_told_not_to(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from bench import run

    monkeypatch.setattr(sys, "argv", ["bench.run"])
    assert run.arguments().readme == ROOT / "docs" / "performance.md"
    monkeypatch.setattr(sys, "argv", ["bench.run", "--no-readme", "--json", "out.json"])
    assert run.arguments().readme is None


def test_cpu_between_counts_each_process_once() -> None:
    before = proc.Snapshot(own=1.0, reaped=0.5, each={10: 2.0, 11: 1.0})
    # 11 exited and was waited for (its 1.5 s now in the root's cutime); 12 was born.
    after = proc.Snapshot(own=3.0, reaped=2.0, each={10: 2.5, 12: 0.25})
    assert proc.between(before, after) == (2.0, 1.25)


def test_a_snapshot_sees_the_live_descendants() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert child.pid in proc.snapshot(os.getpid()).each
    finally:
        child.kill()
        child.wait()


def test_waiting_for_processes_returns_once_they_exit_and_names_those_left() -> None:
    # Issue 35, item 5: a section's directory goes only once its processes are gone.
    quick = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3)"])
    slow = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        proc.wait_gone([quick.pid], timeout=30)  # gone: exited (a zombie holds no file)
        assert quick.poll() is not None
        with pytest.raises(TimeoutError, match=str(slow.pid)):
            proc.wait_gone([slow.pid], timeout=0.2)
    finally:
        for child in (quick, slow):
            child.kill()
            child.wait()


def test_a_stopped_server_leaves_no_process_and_its_directory_goes(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with serving(data) as server:
        family = [server.process.pid, *proc.descendants(server.process.pid)]
        post_all(server, bodies(corpus(1_000, seed=5)), 1)
    assert not [pid for pid in family if proc.alive(pid)]
    remove_tree(data)
    remove_tree(data)  # already gone: no error
    assert not data.exists()


def stored(data: Path, events: int = 1_000) -> Path:
    """``data``, a data directory whose store holds ``events`` events of the bench's corpus
    (a multiple of 500), its projection at no event."""
    with open_services(Settings(data=data, token=TOKEN), run_projections=False) as services:
        batch = corpus(events, seed=4)
        for start in range(0, events, 500):  # at most 500 events a batch
            services.store.append(accept_batch({"evenements": batch[start:start + 500]}))
    return data


def test_the_write_floor_writes_every_row_of_the_built_view_twice(tmp_path: Path) -> None:
    # ADR-0182: every table's rows, the journal's apart, through the driver and in SQL;
    # the scratch file goes.
    from bench import replays
    from bench.write_floor import floor_rows, write_floor

    data = stored(tmp_path / "data")
    (data / "delegations.jsonl").write_text(
        "\n".join(journal_lines(corpus(1_000, seed=4))) + "\n")
    replays.replay_apart(data)
    built = Settings(data=data, token=TOKEN).projections_path
    with closing(sqlite3.connect(built)) as db:
        tables = [n for (n,) in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")]
        counts = {n: db.execute(f'SELECT count(*) FROM "{n}"').fetchone()[0] for n in tables}
    journal = sum(c for n, c in counts.items() if n.startswith("journal_"))
    assert journal > 0 and counts["bilan_demandes"] > 0
    floor = write_floor(built, tmp_path)
    for way in ("driver", "sql"):
        assert floor[way]["rows"] == sum(counts.values()), way
        assert floor[way]["journal_rows"] == journal, way
        assert floor[way]["seconds"] > floor[way]["journal_seconds"] > 0, way
    assert not list(tmp_path.glob("write-floor*"))
    rows = floor_rows(floor, 1_000, 100_000.0)
    assert len(rows) == 4 and all(len(row) == 5 for row in rows)


def test_the_replay_and_compare_children_run_the_measured_checkouts_python(
        tmp_path: Path) -> None:
    # --ours-bin: the replay and compare are that checkout's, run from the data directory
    # so that this checkout's folders do not shadow its package; here, this venv's, on a
    # real store.
    from bench import replays

    data = stored(tmp_path / "data")
    measured = replays.replay_apart(data)
    assert measured["events"] == 1_000 and 0 < measured["peak_rss_mb"] < 1_000
    beside = replays.replay_apart(data, replays.BESIDE_FORMULA)  # switches to it
    assert beside["events"] == 1_000
    with open_services(Settings(data=data, token=TOKEN), run_projections=False) as services:
        assert replays.BESIDE_FORMULA in services.projection.tracking_name
    compared = replays.compare_apart(data, 1_000)
    assert compared["cells"] > 1 and 0 < compared["peak_rss_mb"] < 1_000


def test_alternating_measures_each_server_once_a_round(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # bench.alternate (ADR-0183): the other checkout is this venv's here, reached through
    # a link of another name, so that the checkout each section ran is seen.
    from bench import alternate as alternating
    from bench import servers

    own = servers.OURS_BIN
    (tmp_path / "venv").symlink_to(own.parent, target_is_directory=True)
    other = tmp_path / "venv" / own.name
    ran: list[tuple[str, str, Path]] = []
    section = alternating._section

    def recorded(kind: str, batches: list[bytes], clients: int, data: Path) -> object:
        ran.append((data.name, kind, servers.OURS_BIN))
        return section(kind, batches, clients, data)

    monkeypatch.setattr(alternating, "_section", recorded)
    measured = alternating.alternate(other, rounds=2, clients=1, events=1_000)
    assert sorted(measured) == ["bare", "other", "this"]
    # Two 500-event POSTs: the CPU, read in clock ticks, may round to 0.
    assert all(len(runs) == 2 and all(cpu >= 0 and rate > 0 for cpu, rate in runs)
               for runs in measured.values())
    assert sorted(ran) == sorted([(f"{name}-{r}", "bare" if name == "bare" else "ours",
                                   other if name == "other" else own)
                                  for r in range(2) for name in ("this", "other", "bare")])
    orders = [[name.rsplit("-", 1)[0] for name, _, _ in ran[k:k + 3]] for k in (0, 3)]
    assert orders[0] != orders[1]  # the order rotates from one round to the next
    assert own == servers.OURS_BIN


def test_the_pieces_time_every_piece_of_both_appends(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # bench.pieces: each side appends every body (its own file), each piece timed.
    from bench import pieces

    monkeypatch.setattr(pieces, "WARM_UP", 1)
    medians = pieces.measure(posts=2)
    assert list(medians["ours"]) == [*pieces.OURS, "total"]
    assert list(medians["bare"]) == [*pieces.BARE, "total"]
    for side in medians.values():
        assert all(ms >= 0 for ms in side.values())
        assert side["total"] > 0


def test_postgres_rows_read_against_an_earlier_run_of_this_bench() -> None:
    def runs(rate: float) -> dict[str, object]:
        return {f"pg-{w}": {"rates": [rate * w], "until_current": [rate / 2],
                            "cpu_server_ms": [10.0], "cpu_descendants_ms": [0.0],
                            "latencies": [0.1, 0.2, 0.3]} for w in (1, 4)}

    now = {"events": 20_000, "runs": runs(2_000.0)}
    earlier = {"commit": "abc1234 (ours; bench at def5678)", "date": "2026-12-02T17:00:00",
               "raw": {"postgres": {"events": 20_000, "runs": runs(1_000.0)}}}
    rows = postgres_rows(now, earlier)
    # Issue 22's targets are gains over 23c14db: against another commit, stated only.
    assert rows[0][2:5] == ["abc1234 (2026-12-02): 1,000", "2.00", "stated"]
    assert rows[3][1:3] == ["10.0 ms", "0.04 cores busy"]  # 10 ms x 2,000/500 POSTs/s
    before_issue_22 = {**earlier, "commit": "23c14db (ours; bench at 3fe9106)"}
    targets = [row[4] for row in postgres_rows(now, before_issue_22) if row[3]]
    assert targets == [">= 1.7", "", ">= 1.3", ""]  # ingest rows, then until the bilan
    fixed = postgres_rows(now)  # no earlier run: 6e225cd's figures, fixed here
    assert fixed[0][2].startswith("6e225cd: ") and fixed[0][4] == "stated"


def test_the_bench_transcripts_are_read_as_they_were_written(tmp_path: Path) -> None:
    # The section's lines per second mean something only if the command reads the made-up
    # transcripts as the generator wrote them: every reply merged once, none summed.
    written = write_transcripts(tmp_path, reply_lines=3_000)
    _, printed = import_seconds(tmp_path, tmp_path / "data")
    assert printed == {"fichiers": written["files"], "lignes": written["lines"],
                       "reponses": written["replies"], "nouvelles": written["replies"],
                       "doublons": 0, "incompletes": written["incompletes"],
                       "ignorees": written["lines"] - written["reply_lines"]}
    assert written["reply_lines"] > written["replies"] > 0 < written["incompletes"]
    _, again = import_seconds(tmp_path, tmp_path / "data")
    assert (again["nouvelles"], again["doublons"]) == (0, written["replies"])
    assert transcript_rows(None) == []
