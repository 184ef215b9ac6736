"""Write the classement example of ``docs/formulas.md``:
``examples/classement/evenements.jsonl`` (the plugin's events, one a line, as
``miam-economies import`` reads them) and ``examples/classement/delegations.jsonl``
(MIAM's journal: a preset, and a ``test_id`` for the demandes of MIAM's test runs).

The story (ADR-0081): MIAM's tests run the same 60 tasks under three presets. ``precis``
is truly better (its reworks are small); ``rapide`` and ``code`` rework alike on the
tests, ``code`` a little more. ``code`` is also the everyday preset, given 240 easy
demandes with little rework, so its own taux looks better than it is: unpaired, it ranks
above ``rapide``; paired on ``test_id``, the tasks both ran show it behind. Deterministic
(``random.Random(19)``); ``tests/integration/test_readme_classement.py`` checks the files
are what this writes and that the page shows what the commands print.

``python -m scripts.classement_demo`` rewrites the two files.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "examples" / "classement"
SESSION = "5e1f0c2a-7d3b-4c8e-9a61-{:012x}"
"""The sessions' ids: a test session runs ``PER_SESSION`` tasks under each preset in turn
(interleaved, as ADR-0166 advises); the everyday demandes come in sessions of 4 to 12."""
PER_SESSION = 3
TASKS = [f"t{i:02d}" for i in range(1, 61)]

# preset -> (share of demandes corrected, correction as a share of the task's size)
ON_TESTS = {"precis": (0.35, 0.05), "rapide": (0.5, 0.35), "code": (0.6, 0.6)}
EVERYDAY = ("code", 240, (0.08, 0.15))


def _events(rng: random.Random, n: int, session: str, demande: str, size: int,
            corrected: float, share: float) -> list[dict[str, object]]:
    # A session's demandes on its day (the day of session k: 1 + k % 28 November).
    day = 1 + int(session.rsplit("-", 1)[1], 16) % 28
    date = f"2026-11-{day:02d}T{8 + n % 10:02d}:{n % 60:02d}:00.000Z"  # same day in most zones
    consigne, sortie = 100, size // 5
    common = {"schema": 1, "date": date, "client": "claude-code", "session_id": session}
    out: list[dict[str, object]] = [{
        **common, "type": "delegation", "id": f"claude-code:{demande}",
        "demande_id": demande, "agent_id": f"a{n}", "par_subagent": True,
        "retour": "complet", "tokens_entree": size - sortie + consigne,
        "tokens_sortie": sortie,
        "estimation": {"lus": size - sortie, "ecrits": sortie, "consigne": consigne,
                       "rendus": sortie, "evites": size, "methode": "caracteres/4"}}]
    entree, cout_sortie = rng.randint(500, 2_500), rng.randint(100, 600)
    out.append({**common, "type": "pilotage", "id": f"claude-code:{session}:a{n}:t",
                "agent_id": f"a{n}", "turn_id": "t", "demande_ids": [demande],
                "modele": "claude-haiku-5-5",
                "usage": {"input_tokens": entree, "output_tokens": cout_sortie,
                          "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
                "cout": entree + cout_sortie})
    if rng.random() < corrected:
        ecrits = max(1, round(size * share * rng.lognormvariate(0, 0.6)))
        out.append({**common, "type": "correction", "id": f"claude-code:{session}:toolu_{n:05d}",
                    "demande_id": demande, "outil": "Edit", "tool_use_id": f"toolu_{n:05d}",
                    "tokens_lus": 0, "tokens_ecrits": ecrits, "cout": ecrits})
    return out


def build() -> tuple[list[str], list[str]]:
    """The two files' lines: events, journal."""
    rng = random.Random(19)
    events, journal = [], []
    sizes = {task: round(rng.lognormvariate(math.log(6_000), 0.8)) for task in TASKS}
    n = sessions = 0
    for i, task in enumerate(TASKS):
        if i % PER_SESSION == 0:
            sessions += 1
        for preset, (corrected, share) in ON_TESTS.items():
            n += 1
            demande = f"dem-{n:05d}"
            events += _events(rng, n, SESSION.format(sessions), demande, sizes[task],
                              corrected, share)
            journal.append({"demande_id": demande, "preset": preset, "test_id": task})
    preset, count, (corrected, share) = EVERYDAY
    left = 0
    for _ in range(count):
        if left == 0:
            sessions, left = sessions + 1, rng.randint(4, 12)
        left -= 1
        n += 1
        demande = f"dem-{n:05d}"
        size = round(rng.lognormvariate(math.log(3_000), 0.6))
        events += _events(rng, n, SESSION.format(sessions), demande, size, corrected, share)
        journal.append({"demande_id": demande, "preset": preset})
    return ([json.dumps(e, separators=(",", ":")) for e in events],
            [json.dumps(j, separators=(",", ":")) for j in journal])


def main() -> None:
    """Rewrite ``examples/classement/``."""
    events, journal = build()
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "evenements.jsonl").write_text("\n".join(events) + "\n", encoding="utf-8")
    (OUT / "delegations.jsonl").write_text("\n".join(journal) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
