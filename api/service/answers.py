"""The wire shapes of the answers (SPEC, "Interfaces"; "Ranking presets: the
classement"): the read model's typed values turned into the JSON documents every edge
gives (the HTTP routes, the CLI's ``--json``, MIAM's read functions). One place for each
shape, out of the read model (ADR-0120)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from miam_economies.domain.bilan import Figures, FiguresModele, total
from miam_economies.domain.classement import CRITERES, MAX_COMPARED, Groupe
from miam_economies.domain.ecarts import Comparaison
from miam_economies.projections.view import BilanSnapshot, DemandeLue, Groupes


def _figures(f: Figures, kinds: Mapping[str, int], conflicts: int) -> dict[str, Any]:
    return {**f.as_dict(), "anomalies": dict(kinds), "conflits": conflicts}


def groupes_answer(groupes: Groupes) -> dict[str, dict[str, dict[str, Any]]]:
    """A breakdown's ``groupes``: ``{key: {client: figures}}``, a model's cell with its
    ``tours``, ``usage`` and ``usd`` (``FiguresModele.as_dict``), every other the six
    figures."""
    return {key: {client: cell.as_dict(key) if isinstance(cell, FiguresModele)
                  else cell.as_dict() for client, cell in clients.items()}
            for key, clients in groupes.items()}


def bilan_answer(snapshot: BilanSnapshot, tete: int, stockes: int, genere_le: str,
                 meme_source: bool | None = True,
                 journal: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The bilan's wire shape (SPEC, "Interfaces"): ``economies`` (clients sorted by
    name), ``total``, ``formule``, ``position``, ``provenance``, ``conservation``, and
    ``par``/``groupes`` for a breakdown.

    ``tete``: the store's last notification id when read; ``stockes``: events in the
    store up to the snapshot's position, counted by the store (so a page folded twice
    shows as ``comptes`` > ``stockes``); ``genere_le``: when, ISO 8601; ``meme_source``:
    whether the store's event at the position is the one the projection folded there
    (None when not known), so that a store replaced by another of the same length shows
    (ADR-0105); ``journal``: the journal's state as joined (``provenance.journal``,
    ``BilanView.journal_state``), when there is one. No events gives an empty
    ``economies`` and zero totals.
    """
    anomalies = snapshot.anomalies or {}
    conflits = snapshot.conflits or {}
    all_kinds: dict[str, int] = {}
    for kinds in anomalies.values():
        for kind, n in kinds.items():
            all_kinds[kind] = all_kinds.get(kind, 0) + n
    clients = snapshot.clients
    bilan: dict[str, Any] = {
        "economies": {name: _figures(clients[name], anomalies.get(name, {}),
                                     conflits.get(name, 0))
                      for name in sorted(clients)},
        "total": _figures(total(clients.values()), all_kinds, sum(conflits.values())),
        "formule": snapshot.formule,
        "position": snapshot.position,
        "provenance": {
            "formule": snapshot.formule,
            "position": snapshot.position,
            "tete": tete,
            "evenements": snapshot.evenements,
            "fuseau": snapshot.fuseau,
            "genere_le": genere_le,
            **({} if journal is None else {"journal": dict(journal)}),
        },
        "conservation": {
            "stockes": stockes,
            "comptes": sum(f.evenements for f in clients.values()),
            "en_attente": snapshot.en_attente,
            "meme_source": meme_source,
        },
    }
    if snapshot.par is not None:
        bilan["par"] = snapshot.par
        bilan["groupes"] = (None if snapshot.groupes is None
                            else groupes_answer(snapshot.groupes))
    return bilan


def demande_answer(entries: Sequence[DemandeLue]) -> dict[str, Any] | None:
    """``GET /economies/demandes/{id}`` (SPEC) from the demande's ``entries``, one per
    client by name: the first client's ``delegation`` (None before it arrives) with its
    ``estimation``, ``pilotage``, ``corrections`` by tool, ``evites`` and ``net`` (tokens)
    and ``taux_reprise`` (a ratio); should other clients share the id,
    ``autres_clients`` names them. None for no entry (an id never seen)."""
    if not entries:
        return None
    entry = entries[0]
    f, v = entry.figures, entry.delegation
    delegation = None if v is None else {
        "id": v.id, "agent_id": v.agent_id, "par_subagent": v.par_subagent,
        "retour": v.retour, "tokens_entree": v.tokens_entree,
        "tokens_sortie": v.tokens_sortie,
        "estimation": {"lus": v.lus, "ecrits": v.ecrits, "consigne": v.consigne,
                       "rendus": v.rendus, "evites": f.evites, "methode": v.methode},
    }
    answer: dict[str, Any] = {
        "demande_id": entry.demande_id,
        "client": entry.client,
        "delegation": delegation,
        "pilotage": {"part": f.pilotage, "pilotages": entry.pilotages},
        "corrections": {"cout": f.corrections, "nombre": entry.corrections_nombre,
                        "par_outil": {outil: {"cout": cout, "nombre": nombre}
                                      for outil, (cout, nombre) in entry.outils.items()}},
        "evites": f.evites,
        "net": f.net,
        "taux_reprise": f.taux_reprise,
    }
    if len(entries) > 1:
        answer["autres_clients"] = [e.client for e in entries[1:]]
    return answer


def classement_answer(par: str, formule: str, position: int, minimum: int, selon: str,
                      groupes: Sequence[Groupe], verdicts: Sequence[Comparaison],
                      ranked: int, apparier: str | None) -> dict[str, Any]:
    """The classement's wire shape (SPEC, "Ranking presets: the classement"): ``{"par",
    "formule", "position", "min", "critere", "groupes", "comparaisons"}``, with
    ``"comparaisons_limite": MAX_COMPARED`` when more groups are ranked (``ranked``: how
    many; only the first ``MAX_COMPARED`` are compared), and ``"apparier"`` when
    asked."""
    answer: dict[str, Any] = {
        "par": par, "formule": formule, "position": position, "min": minimum,
        "critere": CRITERES[selon],
        "groupes": [groupe.as_dict() for groupe in groupes],
        "comparaisons": [verdict.as_dict() for verdict in verdicts]}
    if ranked > MAX_COMPARED:
        answer["comparaisons_limite"] = MAX_COMPARED
    if apparier is not None:
        answer["apparier"] = apparier
    return answer
