"""What the relevés' integration and property tests share: the transcript fixtures and
their hand counts (``tests/unit/test_releves_fixtures.py``), the ``releves`` command run
as a user runs it, and the replies a projection folded from the store."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.settings import Settings
from miam_economies.domain.releves import Observation
from tests.unit.test_releves_fixtures import EXPECTED, FIXTURES

SCRIPT = Path(sys.executable).with_name("miam-economies")

__all__ = ["EXPECTED", "FIXTURES", "counts_of", "hand_counts", "releves_cli", "replies_of"]


def hand_counts(*names: str) -> dict[str, int]:
    """The ``--json`` counts a first import of the fixture folders ``names`` gives, from
    the hand counts of their files (every reply new; no folder shares a session)."""
    chosen = [EXPECTED[name] for name in names]
    replies = [reply for e in chosen for reply in e.replies.values()]
    return {"fichiers": sum(e.fichiers for e in chosen),
            "lignes": sum(e.lignes for e in chosen), "reponses": len(replies),
            "nouvelles": len(replies), "doublons": 0,
            "incompletes": sum(reply.stop_reason is None for reply in replies),
            "ignorees": sum(e.ignorees for e in chosen)}


def releves_cli(data: Path, database_url: str | None, *args: str | Path,
                check: bool = True, env: dict[str, str] | None = None
                ) -> subprocess.CompletedProcess[str]:
    """``miam-economies releves --data DATA [--database-url URL] ARGS`` in a subprocess
    (its output a pipe; ``env``: its environment, default this one's), as a user runs
    it."""
    where = ["--data", str(data)] + ([] if database_url is None
                                     else ["--database-url", database_url])
    return subprocess.run([str(SCRIPT), "releves", *where, *map(str, args)],
                          capture_output=True, text=True, check=check, timeout=300,
                          env=env)


def counts_of(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The counts a ``releves --json`` run printed."""
    counts: dict[str, Any] = json.loads(done.stdout)
    return counts


def replies_of(settings: Settings, projection: str | None = None) -> list[Observation]:
    """The replies projection ``projection`` (default: the one that serves) holds once
    it has folded everything stored, in key order."""
    with open_services(settings, run_projections=False) as services:
        services.runner.catch_up()
        name = projection or services.projection.tracking_name
        return services.projection.view.releves(name)
