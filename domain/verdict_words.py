"""The classement's verdicts in words a person reads at a glance (pure; SPEC, "Ranking
presets: the classement": "rapide devant precis (99 %)", "indiscernables : rapide, code";
the level is ``ecarts.NIVEAU_VERDICT``, ADR-0081).

``lettres`` gives each ranked group the letters of the sets of groups that cannot be told
apart (a compact letter display: two groups sharing a letter are indiscernable), which the
CLI's table and the report's chart show beside the intervals; ``phrases`` says the same in
sentences. Both read the ``comparaisons`` of a classement's document (wire dicts).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from string import ascii_lowercase
from typing import Any

from miam_economies.domain.ecarts import NIVEAU_VERDICT

LEVEL = f"{NIVEAU_VERDICT * 100:.0f} %"
"""The verdicts' level as the sentences say it ("99 %")."""

MAX_GROUPS = 26
"""Ranked groups past which no letters are given (one letter a set, and the sets of many
groups are too many to read)."""


def ensembles(ranked: Sequence[str], comparaisons: Sequence[Mapping[str, Any]]
              ) -> list[list[str]]:
    """The maximal sets of ranked groups no two of which have a verdict between them (in
    rank order, each set in rank order); a group told apart from every other is a set of
    its own. Bron-Kerbosch on the graph of ``indiscernable`` pairs."""
    apart = {(c["a"], c["b"]) for c in comparaisons if c["verdict"] != "indiscernable"}
    linked = {g: {h for h in ranked if h != g and (g, h) not in apart and (h, g) not in apart}
              for g in ranked}
    position = {g: i for i, g in enumerate(ranked)}
    found: list[list[str]] = []

    def grow(clique: list[str], candidates: set[str], excluded: set[str]) -> None:
        if not candidates and not excluded:
            found.append(sorted(clique, key=position.__getitem__))
            return
        for g in sorted(candidates, key=position.__getitem__):
            grow([*clique, g], candidates & linked[g], excluded & linked[g])
            candidates = candidates - {g}
            excluded = excluded | {g}

    grow([], set(ranked), set())
    return sorted(found, key=lambda s: [position[g] for g in s])


def lettres(ranked: Sequence[str], comparaisons: Sequence[Mapping[str, Any]]
            ) -> dict[str, str]:
    """``{group: letters}``: groups sharing a letter cannot be told apart; ``{}`` past
    ``MAX_GROUPS`` ranked groups or sets."""
    sets = ensembles(ranked, comparaisons) if len(ranked) <= MAX_GROUPS else []
    if len(sets) > len(ascii_lowercase):
        return {}
    out = dict.fromkeys(ranked, "")
    for letter, members in zip(ascii_lowercase, sets, strict=False):
        for g in members:
            out[g] += letter
    return out


def phrases(ranked: Sequence[str], comparaisons: Sequence[Mapping[str, Any]]
            ) -> list[str]:
    """The verdicts as sentences: ``"<x> devant <y> (99 %)"`` for each pair told apart,
    then ``"indiscernables : <x>, <y>..."`` for each set of two or more groups not told
    apart, then ``"<a> / <b> : <raison>"`` for each claim held back, then what more data
    each held pair needs (``more_words``)."""
    out = []
    for c in comparaisons:
        if c["verdict"] == "a_devant":
            out.append(f"{c['a']} devant {c['b']} ({LEVEL})")
        elif c["verdict"] == "b_devant":
            out.append(f"{c['b']} devant {c['a']} ({LEVEL})")
    if len(ranked) <= MAX_GROUPS:
        out += [f"indiscernables : {', '.join(s)}" for s in ensembles(ranked, comparaisons)
                if len(s) > 1]
    out += [f"{c['a']} / {c['b']} : {c['raison']}" for c in comparaisons if c["raison"]]
    out += [f"{c['a']} / {c['b']} : {more_words(c)}" for c in comparaisons
            if c.get("a_completer")]
    return out


def about(n: int) -> str:
    """``n`` to two significant digits, with thousands separators ("about 1,200")."""
    if n < 100:
        return f"{n:,}"
    digits = len(str(n)) - 2
    return f"{round(n, -digits):,}"


def more_words(c: Mapping[str, Any]) -> str:
    """A held pair's ``a_completer`` in words: "about 400 more demandes of rapide and
    380 of code would tell a difference of this size (99 %)" (ADR-0167)."""
    more = c["a_completer"]
    unit = "common tasks" if "taches" in c else "demandes"
    if "taches" in c:
        return (f"about {about(more['a'])} more {unit} would tell a difference of this "
                f"size ({LEVEL})")
    return (f"about {about(more['a'])} more {unit} of {c['a']} and {about(more['b'])} of "
            f"{c['b']} would tell a difference of this size ({LEVEL})")


def derive_phrases(groupes: Sequence[Mapping[str, Any]], critere: str) -> list[str]:
    """Each drifting group in words: "rapide changed since 2026-11-20: taux_reprise 3.1%
    before, 9.8% since (99 %)" (``groupes`` in their wire shape; ADR-0167)."""
    out = []
    for g in groupes:
        d = g.get("derive")
        if d:
            fmt = ".1%" if critere == "taux_reprise" else ",.0f"
            out.append(f"{g['cle']} changed since {d['depuis']}: {critere} "
                       f"{d['avant']:{fmt}} before, {d['apres']:{fmt}} since ({LEVEL})")
    return out
