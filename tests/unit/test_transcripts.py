"""The transcripts' reader (``api.service.transcripts``): which files it reads, a missing
PATH named before anything is read, unreadable files named and skipped, lines cut or too
long counted as ignored, memory bounded by a line, nothing written (SPEC, "Claude Code's
own record...", "What is read" and "Import")."""

from __future__ import annotations

import json
import os
import tracemalloc
from pathlib import Path

import pytest

from miam_economies.api.service import transcripts
from miam_economies.api.service.transcripts import (
    TranscriptPathMissing,
    default_roots,
    read_transcripts,
)
from miam_economies.domain.errors import MiamEconomiesError
from miam_economies.domain.releves import merge_replies

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "transcripts"


def reply(message_id: str, output: int = 5, session: str = "s-1", **extra: object) -> str:
    """One reply line (JSON text, no end of line)."""
    return json.dumps({"type": "assistant", "sessionId": session, "uuid": f"u-{message_id}",
                       "timestamp": "2026-11-20T09:00:00.000Z",
                       "message": {"id": message_id, "model": "m", "stop_reason": "end_turn",
                                   "usage": {"input_tokens": 1, "output_tokens": output}},
                       **extra}, ensure_ascii=False)


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_a_missing_path_is_named_before_anything_is_read(tmp_path: Path) -> None:
    good = write(tmp_path / "a.jsonl", reply("m1") + "\n")
    missing = tmp_path / "nowhere" / "b.jsonl"
    with pytest.raises(TranscriptPathMissing, match="nowhere/b.jsonl") as raised:
        read_transcripts([good, missing])
    assert raised.value.path == str(missing)
    assert isinstance(raised.value, MiamEconomiesError)
    assert isinstance(raised.value, FileNotFoundError)
    os.symlink(tmp_path / "gone", tmp_path / "broken.jsonl")
    with pytest.raises(TranscriptPathMissing, match="broken.jsonl"):
        read_transcripts([tmp_path / "broken.jsonl"])


def test_a_folder_is_searched_recursively_for_jsonl_files_in_name_order(
        tmp_path: Path) -> None:
    write(tmp_path / "p" / "b.jsonl", reply("m2") + "\n")
    write(tmp_path / "p" / "a.jsonl", reply("m1") + "\n")
    write(tmp_path / "p" / "s" / "subagents" / "agent-x1.jsonl", reply("m3") + "\n")
    write(tmp_path / "p" / "notes.txt", reply("m4") + "\n")
    write(tmp_path / "p" / "s" / "subagents" / "agent-x1.meta.json", "{}")
    reading = read_transcripts([tmp_path])
    seen = [(o.key.value, o.agent_id) for o in reading]
    assert seen == [("m1", None), ("m2", None), ("m3", "x1")]
    assert (reading.counts.fichiers, reading.counts.lignes, reading.counts.ignorees) == (3, 3, 0)


def test_a_file_given_is_read_whatever_its_name(tmp_path: Path) -> None:
    path = write(tmp_path / "session.log", reply("m1") + "\n")
    assert [o.key.value for o in read_transcripts([path])] == ["m1"]


def test_a_file_reached_twice_is_read_once(tmp_path: Path) -> None:
    path = write(tmp_path / "a.jsonl", reply("m1") + "\n")
    reading = read_transcripts([tmp_path, path, tmp_path])
    assert len(list(reading)) == 1
    assert (reading.counts.fichiers, reading.counts.lignes) == (1, 1)


def test_an_unreadable_file_is_named_and_skipped(tmp_path: Path) -> None:
    write(tmp_path / "a.jsonl", reply("m1") + "\n")
    os.symlink(tmp_path / "gone.jsonl", tmp_path / "b.jsonl")  # a dangling link
    os.mkfifo(tmp_path / "c.jsonl")  # never opened: it would block
    write(tmp_path / "d.jsonl", reply("m2") + "\n")
    reading = read_transcripts([tmp_path])
    assert [o.key.value for o in reading] == ["m1", "m2"]
    assert [(Path(u.path).name, bool(u.reason)) for u in reading.counts.unreadable] == [
        ("b.jsonl", True), ("c.jsonl", True)]
    assert "not a regular file" in str(reading.counts.unreadable[1])
    assert reading.counts.fichiers == 2


def test_an_unlistable_folder_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "a.jsonl", reply("m1") + "\n")

    def walk(top: object, onerror: object = None, **_: object) -> object:
        assert callable(onerror)
        onerror(PermissionError(13, "Permission denied", str(tmp_path / "locked")))
        yield str(tmp_path), [], ["a.jsonl"]

    monkeypatch.setattr(transcripts.os, "walk", walk)
    reading = read_transcripts([tmp_path])
    assert len(list(reading)) == 1
    assert [str(u) for u in reading.counts.unreadable] == [
        f"{tmp_path / 'locked'}: Permission denied"]


def test_a_last_line_cut_mid_write_or_mid_character_is_ignored(tmp_path: Path) -> None:
    whole = reply("m2", output=9, note="\u00e9t\u00e9").encode()
    cut_in_character = whole[: whole.index("\u00e9".encode()) + 1]
    for tail in (whole[:-7], cut_in_character):
        path = write(tmp_path / "a.jsonl", (reply("m1") + "\n").encode() + tail)
        reading = read_transcripts([path])
        assert [o.key.value for o in reading] == ["m1"]
        assert (reading.counts.lignes, reading.counts.ignorees) == (2, 1)


def test_a_complete_last_line_without_its_end_is_read(tmp_path: Path) -> None:
    path = write(tmp_path / "a.jsonl", reply("m1") + "\n" + reply("m2"))
    assert [o.key.value for o in read_transcripts([path])] == ["m1", "m2"]


def test_an_over_long_line_is_skipped_and_counted(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transcripts, "MAX_LINE", 400)
    monkeypatch.setattr(transcripts, "_CHUNK", 64)
    long_line = reply("m2", padding="x" * 2000)
    path = write(tmp_path / "a.jsonl", "\n".join([reply("m1"), long_line, reply("m3"), ""]))
    reading = read_transcripts([path])
    assert [o.key.value for o in reading] == ["m1", "m3"]
    assert (reading.counts.lignes, reading.counts.ignorees) == (3, 1)


def test_the_files_memory_is_one_line_at_a_time(tmp_path: Path) -> None:
    filler = json.dumps({"type": "user", "message": {"content": "y" * 2000}})
    lines = [filler] * 4000 + [reply("m1")]
    path = write(tmp_path / "big.jsonl", "\n".join(lines) + "\n")  # about 8 MB
    tracemalloc.start()
    try:
        reading = read_transcripts([path])
        assert [o.key.value for o in reading] == ["m1"]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert path.stat().st_size > 8_000_000
    assert peak < 1_000_000
    assert (reading.counts.lignes, reading.counts.ignorees) == (4001, 4000)


def test_it_streams_observations_before_the_end_of_the_file(tmp_path: Path) -> None:
    path = write(tmp_path / "a.jsonl", reply("m1") + "\n" + reply("m2") + "\n")
    reading = iter(read_transcripts([path]))
    assert next(reading).key.value == "m1"
    with path.open("a", encoding="utf-8") as handle:  # appended while being read
        handle.write(reply("m3") + "\n")
    assert [o.key.value for o in reading] == ["m2", "m3"]


def snapshot(root: Path) -> dict[str, tuple[int, int, int]]:
    """Every entry under ``root``: its mode, size and modification time (ns)."""
    found = {}
    for folder, folders, names in os.walk(root):
        for name in folders + names:
            status = os.lstat(os.path.join(folder, name))
            found[os.path.join(folder, name)] = (status.st_mode, status.st_size,
                                                 status.st_mtime_ns)
    return found


def test_nothing_is_written_beside_the_transcripts() -> None:
    before = snapshot(FIXTURES)
    reading = read_transcripts([FIXTURES])
    assert len(merge_replies(reading)) == 26
    assert snapshot(FIXTURES) == before


def test_without_paths_the_projects_folders_of_claude_config_dir(tmp_path: Path) -> None:
    for name in ("one", "three"):
        write(tmp_path / name / "projects" / "p" / f"{name}.jsonl", reply(name) + "\n")
    (tmp_path / "two").mkdir()  # no projects folder: left
    environ = {"CLAUDE_CONFIG_DIR": f" {tmp_path / 'one'} ,{tmp_path / 'two'},,"
                                    f"{tmp_path / 'three'}"}
    assert default_roots(environ, tmp_path / "home") == [
        tmp_path / "one" / "projects", tmp_path / "three" / "projects"]
    reading = read_transcripts(environ=environ, home=tmp_path / "home")
    assert [o.key.value for o in reading] == ["one", "three"]


def test_without_paths_or_setting_the_home_folders_that_exist(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write(home / ".config" / "claude" / "projects" / "p" / "a.jsonl", reply("m1") + "\n")
    assert default_roots({}, home) == [home / ".config" / "claude" / "projects"]
    assert default_roots({"CLAUDE_CONFIG_DIR": " "}, home) == [
        home / ".config" / "claude" / "projects"]
    write(home / ".claude" / "projects" / "p" / "b.jsonl", reply("m2") + "\n")
    assert default_roots({}, home) == [home / ".claude" / "projects",
                                       home / ".config" / "claude" / "projects"]
    assert [o.key.value for o in read_transcripts(environ={}, home=home)] == ["m2", "m1"]


def test_without_any_folder_nothing_is_read(tmp_path: Path) -> None:
    reading = read_transcripts(environ={}, home=tmp_path)
    assert reading.roots == ()
    assert list(reading) == []
    assert (reading.counts.fichiers, reading.counts.lignes, reading.counts.unreadable) == (
        0, 0, [])
