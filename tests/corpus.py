"""A realistic generated corpus of schema-1 events, and an independent recomputation.

Shapes follow the contract (``000_*.txt``): sessions of a Claude Code client; delegations
by the main agent and by subagents, with figures from the plugin's ``estimer``; one
pilotage per subagent turn covering that turn's demandes; corrections by the main agent on
every tool. The recomputation below is deliberately written apart from ``domain/`` so the
tests compare two independent implementations.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from typing import Any

CLIENTS = ("claude-code", "claude-code-ci")
OUTILS = ("Read", "Edit", "Write", "NotebookEdit", "Bash")
MODELES = ("claude-haiku-5-5", "claude-sonnet-5", "claude-opus-5")


def _date(rng: random.Random) -> str:
    return (f"2026-{rng.randint(9, 11):02d}-{rng.randint(1, 28):02d}T"
            f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}."
            f"{rng.randint(0, 999):03d}Z")


def _delegation(rng: random.Random, client: str, session: str, demande: str,
                agent: str | None) -> dict[str, Any]:
    entree, sortie = rng.randint(0, 20_000), rng.randint(0, 6_000)
    consigne = math.ceil(rng.randint(0, 8_000) / 4)
    retour = rng.choice(("complet", "apercu"))
    lus = max(0, entree - consigne)
    rendus = math.ceil(rng.randint(0, 4_000) / 4) if retour == "apercu" else sortie
    evites = lus + sortie if agent else lus + sortie - (consigne + rendus)
    return {
        "schema": 1, "type": "delegation", "id": f"{client}:{demande}", "date": _date(rng),
        "client": client, "session_id": session, "demande_id": demande, "agent_id": agent,
        "par_subagent": agent is not None, "retour": retour, "tokens_entree": entree,
        "tokens_sortie": sortie,
        "estimation": {"lus": lus, "ecrits": sortie, "consigne": consigne, "rendus": rendus,
                       "evites": evites, "methode": "caracteres/4"},
        "preset": rng.choice(("rapide", "precis")),  # an unknown field: kept, ignored
    }


def _pilotage(rng: random.Random, client: str, session: str, agent: str, turn: str,
              demandes: list[str]) -> dict[str, Any]:
    usage = {"input_tokens": rng.randint(0, 5_000), "output_tokens": rng.randint(0, 2_000),
             "cache_read_input_tokens": rng.randint(0, 60_000),
             "cache_creation_input_tokens": rng.randint(0, 3_000)}
    cout = (usage["input_tokens"] + usage["cache_creation_input_tokens"]
            + usage["output_tokens"] + math.floor(usage["cache_read_input_tokens"] / 10 + 0.5))
    return {
        "schema": 1, "type": "pilotage", "id": f"{client}:{session}:{agent}:{turn}",
        "date": _date(rng), "client": client, "session_id": session, "agent_id": agent,
        "turn_id": turn, "demande_ids": demandes, "modele": rng.choice(MODELES),
        "usage": usage, "cout": cout,
    }


def _correction(rng: random.Random, client: str, session: str, demande: str,
                n: int) -> dict[str, Any]:
    outil = OUTILS[n % len(OUTILS)]
    lus = rng.randint(0, 3_000) if outil in ("Read", "Bash") else 0
    ecrits = rng.randint(1, 2_000) if outil != "Read" else 0
    tool_use_id = f"toolu_{n:08d}"
    return {
        "schema": 1, "type": "correction", "id": f"{client}:{session}:{tool_use_id}",
        "date": _date(rng), "client": client, "session_id": session, "demande_id": demande,
        "outil": outil, "tool_use_id": tool_use_id, "tokens_lus": lus,
        "tokens_ecrits": ecrits, "cout": lus + ecrits,
    }


def generate(n_events: int, seed: int = 0) -> list[dict[str, Any]]:
    """About ``n_events`` distinct events (each id once), in the plugin's natural order."""
    rng = random.Random(seed)
    events: list[dict[str, Any]] = []
    n = 0
    while len(events) < n_events:
        client = rng.choice(CLIENTS)
        session = f"{rng.getrandbits(128):032x}"
        for turn_no in range(rng.randint(1, 6)):
            agent = None if rng.random() < 0.3 else f"a{rng.randint(1, 9)}"
            demandes = [f"dem-{rng.getrandbits(40):010x}" for _ in range(rng.randint(1, 4))]
            for demande in demandes:
                events.append(_delegation(rng, client, session, demande, agent))
                for _ in range(rng.choice((0, 0, 1, 2, 3))):
                    events.append(_correction(rng, client, session, demande, n))
                    n += 1
            if agent is not None:
                events.append(_pilotage(rng, client, session, agent, f"t{turn_no}", demandes))
    return events


def batches(events: list[dict[str, Any]], rng: random.Random,
            largest: int = 500) -> list[list[dict[str, Any]]]:
    """Cut ``events`` into consecutive batches of 1 to ``largest`` events."""
    out, i = [], 0
    while i < len(events):
        size = rng.randint(1, largest)
        out.append(events[i:i + size])
        i += size
    return out


def expected_bilan(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The per-client figures and total of ``events``, counting each id once (first wins)."""
    first: dict[str, dict[str, Any]] = {}
    for e in events:
        first.setdefault(e["id"], e)
    sums: dict[str, dict[str, int]] = defaultdict(
        lambda: {"delegations": 0, "evites": 0, "pilotage": 0, "corrections": 0})
    for e in first.values():
        row = sums[e["client"]]
        if e["type"] == "delegation":
            row["delegations"] += 1
            row["evites"] += e["estimation"]["evites"]
        elif e["type"] == "pilotage":
            row["pilotage"] += e["cout"]
        else:
            row["corrections"] += e["cout"]

    def finish(row: dict[str, int]) -> dict[str, Any]:
        net = row["evites"] - row["pilotage"] - row["corrections"]
        taux = row["corrections"] / row["evites"] if row["evites"] > 0 else None
        return {**row, "net": net, "taux_reprise": taux}

    grand = {k: sum(r[k] for r in sums.values())
             for k in ("delegations", "evites", "pilotage", "corrections")}
    return {"economies": {c: finish(sums[c]) for c in sorted(sums)}, "total": finish(grand)}
