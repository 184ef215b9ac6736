"""A Claude Code story for the session tests, written from the SPEC and the contract alone
(SPEC, "Claude Code's own record: relevés, sessions, and the share saved"; contract
``000_*.txt``), and its figures recomputed independently of the product's code: the
transcripts' replies merged by hand (the largest of each counter per ``message.id``), the
cost rule with fractions, the plugin's figures summed from the events, each verdict by
the SPEC's words.

Sessions: ``BOTH`` (plugin events and replies: one agent per verdict), ``CLAUDE_ONLY``
(replies, no plugin event), ``PLUGIN_ONLY`` (plugin events, no reply).
"""

from __future__ import annotations

import json
from fractions import Fraction
from math import floor
from pathlib import Path
from typing import Any

BOTH = "5e551011-0000-4000-8000-000000000001"
CLAUDE_ONLY = "5e551011-0000-4000-8000-000000000002"
PLUGIN_ONLY = "5e551011-0000-4000-8000-000000000003"
COUNTERS = ("input_tokens", "output_tokens", "cache_read_input_tokens",
            "cache_creation_input_tokens")

# Replies by session and agent (None: the main agent): (message id, final counters
# (input, output, cache_read, cache_creation), complete?). Each is written on 3 lines
# whose output grows while it streams; an incomplete one has no stop_reason anywhere.
REPLIES: dict[str, dict[str | None, list[tuple[str, tuple[int, int, int, int], bool]]]] = {
    BOTH: {
        None: [("msg_m1", (6, 240, 27_000, 3_400), True),
               ("msg_m2", (12, 900, 41_005, 0), True)],
        "a1": [("msg_a1", (800, 200, 10_000, 0), True)],          # 2,000: concorde
        "b2": [("msg_b2a", (3, 500, 9_000, 1_500), True),
               ("msg_b2b", (4, 700, 15_000, 2_000), True)],       # plugin lower
        "e5": [("msg_e5", (100, 100, 0, 0), True)],               # plugin higher
        "d4": [("msg_d4a", (50, 10, 0, 0), True),
               ("msg_d4b", (1, 1, 0, 0), False)],                 # incomplete
    },
    CLAUDE_ONLY: {None: [("msg_c1", (10, 20, 35, 0), True)]},
}

# The plugin's pilotages: (session, agent, turn, usage, cout as sent).
PILOTAGES = [
    (BOTH, "a1", "t1", (500, 100, 6_000, 0), 1_200),
    (BOTH, "a1", "t2", (300, 100, 4_000, 0), 805),   # a1: 2,005 against 2,000
    (BOTH, "b2", "t1", (7, 1_200, 24_000, 3_500), 3_000),
    (BOTH, "e5", "t1", (100, 100, 0, 0), 900),
    (BOTH, "d4", "t1", (51, 11, 0, 0), 62),
    (BOTH, "c3", "t1", (10, 10, 0, 0), 20),          # no transcript: non_observe
    (PLUGIN_ONLY, "a1", "t1", (10, 10, 0, 0), 20),
]
# Delegations: (session, demande, agent, evites); corrections: (session, demande, cout).
DELEGATIONS = [(BOTH, "dem-1", "a1", 9_000), (BOTH, "dem-2", "b2", 7_000),
               (BOTH, "dem-3", None, 1_500), (BOTH, "dem-4", "e5", -300),
               (PLUGIN_ONLY, "dem-9", "a1", 4_000)]
CORRECTIONS = [(BOTH, "dem-1", 490), (PLUGIN_ONLY, "dem-9", 100)]


def _event(kind: str, event_id: str, session: str, **fields: Any) -> dict[str, Any]:
    return {"schema": 1, "type": kind, "id": event_id, "date": "2026-11-20T10:00:00.000Z",
            "client": "claude-code", "session_id": session, **fields}


def plugin_events() -> list[dict[str, Any]]:
    """The plugin's events of the story, as the contract writes them."""
    events = []
    for session, demande, agent, evites in DELEGATIONS:
        events.append(_event(
            "delegation", f"claude-code:{demande}", session, demande_id=demande,
            agent_id=agent, par_subagent=agent is not None, retour="complet",
            tokens_entree=100, tokens_sortie=50,
            estimation={"lus": 90, "ecrits": 50, "consigne": 10, "rendus": 50,
                        "evites": evites, "methode": "caracteres/4"}))
    for session, agent, turn, usage, cout in PILOTAGES:
        demandes = [d for s, d, a, _ in DELEGATIONS if s == session and a == agent]
        events.append(_event(
            "pilotage", f"claude-code:{session}:{agent}:{turn}", session, agent_id=agent,
            turn_id=turn, demande_ids=demandes or ["dem-x"], modele="claude-haiku-4-5",
            usage=dict(zip(COUNTERS, usage, strict=True)), cout=cout))
    for n, (session, demande, cout) in enumerate(CORRECTIONS):
        events.append(_event(
            "correction", f"claude-code:{session}:toolu_{n}", session, demande_id=demande,
            outil="Read", tool_use_id=f"toolu_{n}", tokens_lus=cout, tokens_ecrits=0,
            cout=cout))
    return events


def _lines(session: str, agent: str | None, message: str,
           counters: tuple[int, int, int, int], complete: bool,
           steps: tuple[int, ...] = (1, 2, 3)) -> list[str]:
    out = []
    for step in steps:  # the output grows while the reply streams
        i, o, cr, cc = counters
        usage = {"input_tokens": i, "output_tokens": o * step // 3,
                 "cache_read_input_tokens": cr, "cache_creation_input_tokens": cc}
        line: dict[str, Any] = {
            "type": "assistant", "sessionId": session, "uuid": f"{message}-{step}",
            "timestamp": f"2026-11-20T10:00:0{step}.000Z",
            "isSidechain": agent is not None,
            "message": {"id": message, "model": "claude-haiku-4-5", "role": "assistant",
                        "usage": usage,
                        "stop_reason": "end_turn" if complete and step == 3 else None}}
        if agent is not None:
            line["agentId"] = agent
        out.append(json.dumps(line))
        out.append(json.dumps({"type": "user", "sessionId": session, "uuid": f"u{step}",
                               "timestamp": "2026-11-20T10:00:00.000Z"}))
    return out


def write_transcripts(root: Path, partial: bool = False) -> Path:
    """The story's transcripts under ``root/projects/-home-dev-app/``, a main file per
    session and a ``subagents/agent-<id>.jsonl`` per subagent; returns ``root``. With
    ``partial``, each reply's first two lines only: the files as a live session left them
    while its replies streamed (smaller output, no ``stop_reason`` yet)."""
    project = root / "projects" / "-home-dev-app"
    for session, agents in REPLIES.items():
        for agent, replies in agents.items():
            path = (project / f"{session}.jsonl" if agent is None
                    else project / session / "subagents" / f"agent-{agent}.jsonl")
            path.parent.mkdir(parents=True, exist_ok=True)
            steps = (1, 2) if partial else (1, 2, 3)
            lines = [line for r in replies
                     for line in _lines(session, agent, *r, steps=steps)]
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def cost(counters: tuple[int, int, int, int]) -> int:
    """The contract's cost rule: input + cache_creation + output + round(cache_read /
    10), halves up, with fractions."""
    i, o, cr, cc = counters
    return i + cc + o + floor(Fraction(cr, 10) + Fraction(1, 2))


def expected_claude(session: str) -> dict[str, Any] | None:
    """``claude`` of ``session`` recomputed from ``REPLIES``."""
    agents = REPLIES.get(session)
    if agents is None:
        return None

    def of(replies: list[tuple[str, tuple[int, int, int, int], bool]]) -> dict[str, Any]:
        return {"reponses": len(replies),
                "incompletes": sum(not complete for _, _, complete in replies),
                "usage": {name: sum(c[k] for _, c, _ in replies)
                          for k, name in enumerate(COUNTERS)},
                "cout": sum(cost(c) for _, c, _ in replies)}

    every = [r for replies in agents.values() for r in replies]
    return {**of(every), "par_agent": {("(principal)" if a is None else a): of(r)
                                       for a, r in sorted(agents.items(),
                                                          key=lambda kv: kv[0] or "(")}}


def expected_figures(session: str) -> dict[str, Any]:
    """The plugin's figures of ``session`` summed from the story's events."""
    evites = sum(e for s, _, _, e in DELEGATIONS if s == session)
    pilotage = sum(c for s, _, _, _, c in PILOTAGES if s == session)
    corrections = sum(c for s, _, c in CORRECTIONS if s == session)
    return {"delegations": sum(s == session for s, *_ in DELEGATIONS), "evites": evites,
            "pilotage": pilotage, "corrections": corrections,
            "net": evites - pilotage - corrections,
            "taux_reprise": corrections / evites if evites > 0 else None}


def expected_rapprochement(session: str) -> list[dict[str, Any]]:
    """The rapprochement of ``session`` by the SPEC's words."""
    claude = expected_claude(session)
    agents = sorted({a for s, a, *_ in PILOTAGES if s == session})
    out = []
    for agent in agents:
        turns = [p for p in PILOTAGES if p[0] == session and p[1] == agent]
        plugin = {"tours": len(turns),
                  "usage": {name: sum(p[3][k] for p in turns)
                            for k, name in enumerate(COUNTERS)},
                  "cout": sum(p[4] for p in turns)}
        releve = None if claude is None else claude["par_agent"].get(agent)
        ecart = None if releve is None else plugin["cout"] - releve["cout"]
        if releve is None:
            verdict = "non_observe"
        elif releve["incompletes"]:
            verdict = "releve_incomplet"
        elif abs(ecart) <= max(10, Fraction(releve["cout"], 100)):  # type: ignore[arg-type]
            verdict = "concorde"
        else:
            verdict = "plugin_sous_releve" if ecart < 0 else "plugin_au_dessus"  # type: ignore[operator]
        out.append({"agent_id": agent, "plugin": plugin, "releve": releve,
                    "ecart": ecart, "verdict": verdict})
    return out


def expected_session(session: str) -> dict[str, Any]:
    """The whole document of ``session``."""
    figures, claude = expected_figures(session), expected_claude(session)
    share = None
    if claude is not None and claude["cout"] + figures["net"] > 0:
        share = figures["net"] / (claude["cout"] + figures["net"])
    return {"session_id": session, "economies": figures, "claude": claude,
            "part_economisee": share, "rapprochement": expected_rapprochement(session)}


def expected_summary() -> dict[str, Any]:
    """The bilan's ``rapprochement``: only ``BOTH`` has plugin events and replies."""
    entries = expected_rapprochement(BOTH)
    verdicts = ("concorde", "plugin_sous_releve", "plugin_au_dessus", "releve_incomplet",
                "non_observe")
    claude, net = expected_claude(BOTH), expected_figures(BOTH)["net"]
    assert claude is not None
    return {"sessions": 1, "agents": len(entries),
            **{v: sum(e["verdict"] == v for e in entries) for v in verdicts},
            "ecart": sum(e["ecart"] for e in entries if e["verdict"] in verdicts[:3]),
            "depense_claude": claude["cout"],
            "part_economisee": net / (claude["cout"] + net)}
