"""The bench's replay-side measures, each in a process of its own: a replay of every
projection (its rate and peak memory), ``compare`` of two formulas, and the raw read of the
notification log they are read against (issue 22, item 4; issue 35, items 1 and 2).

The children import only the package, so that another checkout's python runs them as well
(``servers.OURS_BIN``, ``--ours-bin``).
"""

from __future__ import annotations

import json
import subprocess
import time
from contextlib import closing
from pathlib import Path

from bench import servers
from bench.servers import BATCH
from miam_economies.api.service.bootstrap import open_store
from miam_economies.api.service.settings import Settings
from tests.conftest import TOKEN

REPLAY_CHILD = """
import json, sys, time
from pathlib import Path
from miam_economies.api.service.replay import replay
from miam_economies.api.service.settings import Settings

started = time.perf_counter()
result = replay(Settings(data=Path(sys.argv[1]), token=sys.argv[2]), sys.argv[3], fuseau="UTC")
seconds = time.perf_counter() - started
events = int(result["evenements"])
# VmHWM, not ru_maxrss: Linux carries ru_maxrss across fork and exec, so a child of the
# bench (which holds the 1M-event corpus) would report its parent's peak.
line = next(x for x in Path("/proc/self/status").read_text().splitlines()
            if x.startswith("VmHWM:"))
print(json.dumps({"events": events, "seconds": seconds, "rate": events / seconds,
                  "peak_rss_mb": int(line.split()[1]) / 1024}))
"""
"""The replay's own process: ``python -c REPLAY_CHILD DATA TOKEN FORMULA`` prints one JSON
line.
It imports only the package, so that another checkout's python runs it as well
(``servers.OURS_BIN``)."""


def replay_apart(data: Path, formule: str = "v1") -> dict[str, float]:
    """Replay every projection of ``data`` under ``formule`` in UTC in a process of its
    own, ``OURS_BIN``'s python (run from ``data``, so that this checkout's folders do not
    shadow its package); return ``{"events", "seconds", "rate" (events/s),
    "peak_rss_mb"}``, the peak being that process's alone. Under ``v1`` (the default) it
    builds the one that serves, at its first event, from scratch, joining MIAM's journal
    for the first time; under another formula it builds beside it, the journal's tables
    already written, then serves it (a user's formula change; ADR-0182)."""
    done = subprocess.run([str(servers.OURS_BIN / "python"), "-c", REPLAY_CHILD, str(data),
                           TOKEN, formule], check=True, capture_output=True, text=True,
                          cwd=data)
    measured: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return measured


BESIDE_FORMULA = "pondere-v2"
"""The formula of the replay beside the serving projection, at the largest history (a
user's formula change: the case where ADR-0182's floor leaves 0.35x within reach)."""

COMPARE_FORMULAS = ("v1", "pondere-v2")
"""The two formulas ``compare_apart`` shows side by side (issue 35, item 2)."""

COMPARE_CHILD = """
import json, sys, time
from pathlib import Path
from miam_economies.api.service.replay import compare
from miam_economies.api.service.settings import Settings

started = time.perf_counter()
result = compare(Settings(data=Path(sys.argv[1]), token=sys.argv[2]), sys.argv[3:], "jour")
seconds = time.perf_counter() - started
line = next(x for x in Path("/proc/self/status").read_text().splitlines()
            if x.startswith("VmHWM:"))
print(json.dumps({"seconds": seconds, "cells": len(result["groupes"]),
                  "peak_rss_mb": int(line.split()[1]) / 1024}))
"""
"""``python -c COMPARE_CHILD DATA TOKEN FORMULA...`` prints one JSON line: ``compare``
by day, its seconds and its process's peak RSS (VmHWM, as ``REPLAY_CHILD``)."""


def compare_apart(data: Path, events: int) -> dict[str, float]:
    """``compare`` of ``COMPARE_FORMULAS`` by day over ``data``'s store of ``events``
    events, in a process of its own (``OURS_BIN``'s python, run from ``data``); return
    ``{"events", "seconds", "rate" (events of the store per second, each folded under
    both formulas), "peak_rss_mb", "cells"}``."""
    done = subprocess.run([str(servers.OURS_BIN / "python"), "-c", COMPARE_CHILD, str(data),
                           TOKEN, *COMPARE_FORMULAS],
                          check=True, capture_output=True, text=True, cwd=data)
    measured: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return {**measured, "events": events, "rate": events / measured["seconds"]}


def raw_log_read(data: Path) -> float:
    """Events/s reading the whole notification log through the recorder, 500 a page (the
    library's ``select_notifications``: the replay's own source)."""
    settings = Settings(data=data, token=TOKEN)
    with closing(open_store(settings.database, read_only=True)) as store:
        recorder = store.recorder
        started, position, read = time.perf_counter(), 0, 0
        while page := recorder.select_notifications(start=position + 1, limit=BATCH):
            read += len(page)
            position = page[-1].id
        return read / (time.perf_counter() - started)
