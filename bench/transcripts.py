"""Importing Claude Code's transcripts (``miam-economies releves``), against a plain
``json.loads`` pass over the same files (issue 31: >= 20,000 lines/s).

The transcripts are made up in the public format (SPEC, "Claude Code's own record"):
sessions of about 100 replies in a main agent's file and, for one session in three, a
subagent's own ``subagents/agent-<id>.jsonl``; a reply streams on 1 to 4 lines that
repeat its usage, growing, only the last with a ``stop_reason`` (one reply in fifty never
gets it: a placeholder left); a user line before each reply. Lines are about a kilobyte,
as Claude Code writes them (content, ids, version, working directory).

Measured: the command in a process of its own on a fresh data directory, as a user runs
it (start-up included), then the same files again (everything a doublon); the reference
reads every line of the same files and ``json.loads`` it, in this process.
"""

from __future__ import annotations

import json
import random
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

from bench import servers

REPLY_LINES = 100_000
"""The reply lines of the bench's transcripts (issue 31); user lines come beside them."""

_MODELS = ("claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001")


def write_transcripts(root: Path, reply_lines: int = REPLY_LINES, seed: int = 31
                      ) -> dict[str, int]:
    """Write made-up transcripts under ``root/projects`` until they hold ``reply_lines``
    reply lines; return ``{"files", "lines", "reply_lines", "replies", "incompletes"}``
    (replies without a ``stop_reason``)."""
    rng = random.Random(seed)
    counts = {"files": 0, "lines": 0, "reply_lines": 0, "replies": 0, "incompletes": 0}
    session = 0
    while counts["reply_lines"] < reply_lines:
        session += 1
        sid = f"{session:08x}-3f0e-4c1a-9d56-{rng.getrandbits(48):012x}"
        project = root / "projects" / f"-home-dev-repo{session % 7}"
        project.mkdir(parents=True, exist_ok=True)
        files = [(project / f"{sid}.jsonl", None)]
        if session % 3 == 0:
            agent = f"{rng.getrandbits(32):08x}"
            files.append((project / sid / "subagents" / f"agent-{agent}.jsonl", agent))
        for path, agent in files:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("w", encoding="utf-8") as out:
                for reply in range(rng.randint(60, 140)):
                    _write_reply(out, rng, sid, agent, session, reply, counts)
            counts["files"] += 1
    return counts


def _write_reply(out: Any, rng: random.Random, sid: str, agent: str | None, session: int,
                 reply: int, counts: dict[str, int]) -> None:
    stamp = f"2026-11-{1 + session % 28:02d}T{reply % 24:02d}:{reply % 60:02d}:01.137Z"
    common = {"parentUuid": None, "isSidechain": agent is not None, "userType": "external",
              "cwd": f"/home/dev/repo{session % 7}", "sessionId": sid,
              "version": "2.1.29", "gitBranch": "main"}
    if agent is not None:
        common["agentId"] = agent
    out.write(json.dumps({**common, "type": "user", "message": {
        "role": "user", "content": "Look at the failing test and fix the rounding. " * 4},
        "uuid": f"{session:08x}-u-{reply:06d}", "timestamp": stamp}) + "\n")
    counts["lines"] += 1
    pieces = rng.choice((1, 2, 2, 3, 3, 4))
    final = rng.random() >= 0.02
    usage = {"input_tokens": rng.randint(1, 50),
             "cache_creation_input_tokens": rng.randint(0, 5_000),
             "cache_read_input_tokens": rng.randint(0, 80_000)}
    output = rng.randint(20, 2_000)
    model = rng.choice(_MODELS)
    for piece in range(pieces):
        last = piece == pieces - 1
        key = f"{session:08x}{agent or ''}{reply:06d}"
        message = {"model": model, "id": f"msg_{key}", "type": "message",
                   "role": "assistant",
                   "content": [{"type": "text", "text": "Reading the module first. " * 6}],
                   "stop_reason": "end_turn" if last and final else None,
                   "stop_sequence": None,
                   "usage": {**usage, "output_tokens": output * (piece + 1) // pieces,
                             "service_tier": "standard"}}
        out.write(json.dumps({**common, "message": message,
                              "requestId": f"req_{key}",
                              "type": "assistant",
                              "uuid": f"{session:08x}-a-{reply:06d}-{piece}",
                              "timestamp": stamp}) + "\n")
        counts["lines"] += 1
        counts["reply_lines"] += 1
    counts["replies"] += 1
    counts["incompletes"] += not final


def json_pass(root: Path) -> float:
    """Seconds to read every ``*.jsonl`` line under ``root`` and ``json.loads`` it."""
    started = time.perf_counter()
    for path in sorted(root.rglob("*.jsonl")):
        with path.open("rb") as lines:
            for line in lines:
                json.loads(line)
    return time.perf_counter() - started


def import_seconds(root: Path, data: Path) -> tuple[float, dict[str, int]]:
    """Seconds of ``miam-economies releves --data data --json root/projects`` in a process
    of its own (``servers.OURS_BIN``'s), and its printed counts. Raises
    ``CalledProcessError`` if the command fails."""
    started = time.perf_counter()
    done = subprocess.run([str(servers.OURS_BIN / "miam-economies"), "releves", "--data",
                           str(data), "--json", str(root / "projects")],
                          capture_output=True, text=True, check=True)
    return time.perf_counter() - started, json.loads(done.stdout)


def transcripts(work: Path, repeat: int, reply_lines: int = REPLY_LINES
                ) -> dict[str, Any] | None:
    """The section: ``repeat`` rounds, each a fresh import, the same files again, and the
    ``json.loads`` pass, interleaved; raw seconds and counts (``rows``). None when the
    command under test has no ``releves`` (an older release's, ``--ours-bin``)."""
    root = work / "transcripts"
    counts = write_transcripts(root, reply_lines)
    first, again, plain = [], [], []
    printed: dict[str, int] = {}
    for run in range(repeat):
        data = work / f"releves-{run}"
        try:
            seconds, printed = import_seconds(root, data)
        except subprocess.CalledProcessError as failed:
            if "No such command" in failed.stderr:
                return None
            raise
        first.append(seconds)
        again.append(import_seconds(root, data)[0])
        plain.append(json_pass(root))
    return {"counts": counts, "printed": printed, "first": first, "again": again,
            "json": plain}


def rows(measured: dict[str, Any] | None) -> list[list[str]]:
    """The section's rows (``report.COLUMNS``): lines per second of a first import and of
    the same files again, against the ``json.loads`` pass; medians of the rounds (none
    for a release without the command)."""
    if measured is None:
        return []
    counts = measured["counts"]
    lines, plain = counts["lines"], statistics.median(measured["json"])
    what = (f"{lines:,} lines ({counts['reply_lines']:,} reply lines, "
            f"{counts['replies']:,} replies, {counts['files']} files)")
    out = []
    for key, label in (("first", "releves: a first import of"),
                       ("again", "releves: the same files again (every relevé a doublon),")):
        seconds = statistics.median(measured[key])
        out.append([f"{label} {what}", f"{lines / seconds:,.0f} lines/s",
                    f"json.loads pass {lines / plain:,.0f} lines/s",
                    f"{plain / seconds:.2f}", ">= 20,000 lines/s"])
    return out
