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
from collections.abc import Callable
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
    """The per-client figures and total of ``events``, counting each id once (first wins);
    the corpus is built without anomalies or conflicts, so those are empty."""
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
        return {**row, "net": net, "taux_reprise": taux, "anomalies": {}, "conflits": 0}

    grand = {k: sum(r[k] for r in sums.values())
             for k in ("delegations", "evites", "pilotage", "corrections")}
    return {"economies": {c: finish(sums[c]) for c in sorted(sums)}, "total": finish(grand)}


def journal_lines(events: list[dict[str, Any]], seed: int = 0) -> list[str]:
    """MIAM's ``delegations.jsonl`` for the corpus: most demandes get a line with a preset
    and a format; some lines lack ``demande_id`` (older MIAM), some are malformed, some
    demandes have none; a few demandes have a second, later line (the first one wins)."""
    import json

    rng = random.Random(seed)
    lines = []
    for e in events:
        if e["type"] != "delegation" or rng.random() < 0.1:
            continue
        entry = {"demande_id": e["demande_id"], "preset": rng.choice(PRESETS),
                 "format": rng.choice(("md", "json", "diff")), "ok": True,
                 "duree_s": round(rng.random() * 9, 2), "details": {"ignored": 1}}
        lines.append(json.dumps(entry))
        if rng.random() < 0.02:
            lines.append(json.dumps({**entry, "preset": "doublon-ignore"}))
        if rng.random() < 0.02:
            lines.append(json.dumps({"preset": "ancien", "format": "md"}))  # no demande_id
        if rng.random() < 0.01:
            lines.append("{not json")
    return lines


def with_fields(lines: list[str], fields: Callable[[int], dict[str, Any]]) -> list[str]:
    """The journal ``lines`` with ``fields(k)`` added to the k-th line that has a
    ``demande_id`` (malformed lines and lines without one kept as they are): what MIAM's
    test runs write beside the preset (a ``test_id``...)."""
    import json

    out, k = [], 0
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            entry = None
        if not isinstance(entry, dict) or "demande_id" not in entry:
            out.append(line)
            continue
        out.append(json.dumps({**entry, **fields(k)}))
        k += 1
    return out


PRESETS = ("rapide", "precis", "code", "resume")


def expected_breakdowns(events: list[dict[str, Any]], journal: list[str],
                        zone: Any) -> dict[str, Any]:
    """Every breakdown of ``events`` (each id once), recomputed apart from ``domain/``.

    Returns ``{"jour": {day: {client: row}}, "modele": {...}, "demande": {...},
    "preset": {...}, "format": {...}, "valeurs": {demande_id: {field: value}}}`` where a
    row has the four sums; pilotage parts follow ADR-0006 (cout // n, remainder one each
    to the first demandes in sorted order).
    """
    import json
    from datetime import datetime

    first: dict[str, dict[str, Any]] = {}
    for e in events:
        first.setdefault(e["id"], e)

    def zero() -> dict[str, int]:
        return {"delegations": 0, "evites": 0, "pilotage": 0, "corrections": 0}

    def day(date: str) -> str:
        moment = datetime.fromisoformat(date.replace("Z", "+00:00"))
        return moment.astimezone(zone).date().isoformat()

    jours: dict[str, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(zero))
    modeles: dict[str, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(
        lambda: {"tours": 0, "input_tokens": 0, "output_tokens": 0,
                 "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0, "cout": 0}))
    demandes: dict[str, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(zero))
    for e in first.values():
        client, row = e["client"], jours[day(e["date"])][e["client"]]
        if e["type"] == "delegation":
            row["delegations"] += 1
            row["evites"] += e["estimation"]["evites"]
            d = demandes[e["demande_id"]][client]
            d["delegations"] += 1
            d["evites"] += e["estimation"]["evites"]
        elif e["type"] == "pilotage":
            row["pilotage"] += e["cout"]
            m = modeles[e["modele"]][client]
            m["tours"] += 1
            m["cout"] += e["cout"]
            for k, v in e["usage"].items():
                m[k] += v
            ids = sorted(set(e["demande_ids"]))  # each distinct demande once
            base, rest = divmod(e["cout"], len(ids))
            for i, demande_id in enumerate(ids):
                demandes[demande_id][client]["pilotage"] += base + (1 if i < rest else 0)
        else:
            row["corrections"] += e["cout"]
            demandes[e["demande_id"]][client]["corrections"] += e["cout"]

    values: dict[str, dict[str, str]] = {}
    for line in journal:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry.get("demande_id"), str):
            values.setdefault(entry["demande_id"], {
                k: v if isinstance(v, str) else json.dumps(v) for k, v in entry.items()
                if k != "demande_id" and not isinstance(v, (dict, list)) and v is not None})

    def by_field(champ: str) -> dict[str, dict[str, dict[str, int]]]:
        out: dict[str, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(zero))
        for demande_id, clients in demandes.items():
            key = values.get(demande_id, {}).get(champ, "(inconnu)")
            for client, row in clients.items():
                for k, v in row.items():
                    out[key][client][k] += v
        return out

    return {"jour": jours, "modele": modeles, "demande": demandes,
            "preset": by_field("preset"), "format": by_field("format"), "valeurs": values}


def with_derived(row: dict[str, int]) -> dict[str, Any]:
    """A row of the four sums with ``net`` and ``taux_reprise`` as the bilan derives them."""
    net = row["evites"] - row["pilotage"] - row["corrections"]
    return {**row, "net": net,
            "taux_reprise": row["corrections"] / row["evites"] if row["evites"] > 0 else None}
