"""The wire shapes of the answers (SPEC, "Interfaces"; "Ranking presets: the
classement"): the read model's typed values turned into the JSON documents every edge
gives (the HTTP routes, the CLI's ``--json``, MIAM's read functions). One place for each
shape, out of the read model (ADR-0120)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any, cast

from miam_economies.api.service.results import BilanLu, ClassementLu
from miam_economies.domain.argent import decimal_text, usd, usd_rounded
from miam_economies.domain.bilan import Figures, FiguresModele
from miam_economies.domain.classement import CRITERES, MAX_COMPARED, Groupe
from miam_economies.domain.formulas import Prix
from miam_economies.projections.view import DemandeLue, Groupes, Groupes2


def en_usd(f: Figures, rate: Fraction) -> dict[str, str]:
    """``f``'s summed figures (weighted tokens) in USD at ``rate`` (USD per million: a
    ``Prix.usd_par_million``): ``{"evites", "pilotage", "corrections", "net"}``, each
    exact decimal text (``domain.argent.usd``; ADR-0130)."""
    return {"evites": usd(f.evites, rate), "pilotage": usd(f.pilotage, rate),
            "corrections": usd(f.corrections, rate), "net": usd(f.net, rate)}


def prix_answer(prix: Prix) -> dict[str, Any]:
    """``provenance.prix`` (ADR-0130): the ``modele_reference`` whose input token is the
    weighted figures' unit, its ``usd_par_million`` (exact decimal text), the table's
    ``source`` in words and, for a user's price file, its ``sha256`` (else null)."""
    return {"modele_reference": prix.reference,
            "usd_par_million": decimal_text(prix.usd_par_million),
            "source": prix.source, "sha256": prix.sha256}


def _figures(f: Figures, kinds: Mapping[str, int], conflicts: int,
             prix: Prix | None) -> dict[str, Any]:
    out = {**f.as_dict(), "anomalies": dict(kinds), "conflits": conflicts}
    if prix is not None:
        out["en_usd"] = en_usd(f, prix.usd_par_million)
    return out


def _cell(cell: Figures | FiguresModele, prix: Prix | None, modele: str) -> dict[str, Any]:
    # ``modele``: the model a ``FiguresModele`` cell is of (its key in the breakdown).
    if isinstance(cell, FiguresModele):
        out = cell.as_dict(modele)
        figures = Figures(pilotage=cell.cout)
    else:
        out, figures = cell.as_dict(), cell
    if prix is not None:
        out["en_usd"] = en_usd(figures, prix.usd_par_million)
    return out


def groupes_answer(groupes: Groupes | Groupes2, prix: Prix | None = None,
                   puis: str | None = None, par: str | None = None
                   ) -> dict[str, Any]:
    """A breakdown's ``groupes``: ``{key: {client: figures}}``, or with ``puis`` (two
    dimensions, ADR-0133) ``{key of par: {key of puis: {client: figures}}}``. A model's
    cell (``par`` or ``puis`` is ``modele``) has its ``tours``, ``usage`` and ``usd``
    (``FiguresModele.as_dict``), every other the six figures; under a weighted formula
    (``prix``) each cell has its ``en_usd`` too (ADR-0130)."""
    if puis is None:
        one = cast(Groupes, groupes)
        return {key: {client: _cell(cell, prix, key) for client, cell in clients.items()}
                for key, clients in one.items()}
    two = cast(Groupes2, groupes)
    return {a: {b: {client: _cell(cell, prix, a if par == "modele" else b)
                    for client, cell in clients.items()}
                for b, clients in inner.items()}
            for a, inner in two.items()}


def bilan_answer(lu: BilanLu) -> dict[str, Any]:
    """The bilan's wire shape (SPEC, "Interfaces") of ``lu``: ``economies`` (clients sorted
    by name), ``total``, ``formule``, ``position``, ``provenance``, ``conservation``, and
    ``par``/``groupes`` for a breakdown (and ``"champ_vu": false`` when its journal field
    cannot be known yet: ADR-0164).

    ``provenance``: the formula, position, the store's head (``tete``), events folded,
    zone, ``genere_le``, the journal's state when there is one, ``prix`` under a weighted
    formula (which adds ``en_usd`` to every figures: ADR-0130) and ``attente_expiree``
    when a wait expired (ADR-0104). ``conservation``: ``stockes`` (events stored up to the
    position, counted by the store, so a page folded twice shows as ``comptes`` >
    ``stockes``; ``stockes`` = ``comptes`` + ``ecartes``, the events set aside:
    ADR-0135), ``comptes`` (the events folded: the plugin's into the figures, the
    relevés into the replies, ADR-0173), ``en_attente``, ``ecartes`` and
    ``meme_source`` (ADR-0105). ``rapprochement``: the summary of the sessions with
    plugin events and replies, null while no relevé is folded (ADR-0177).
    No events gives an empty ``economies`` and zero totals.
    """
    snapshot, prix, journal = lu.snapshot, lu.prix, lu.journal
    anomalies = snapshot.anomalies or {}
    conflits = snapshot.conflits or {}
    clients = snapshot.clients
    bilan: dict[str, Any] = {
        "economies": {name: _figures(clients[name], anomalies.get(name, {}),
                                     conflits.get(name, 0), prix)
                      for name in sorted(clients)},
        "total": _figures(lu.total, lu.anomalies(), lu.conflits, prix),
        "formule": snapshot.formule,
        "position": snapshot.position,
        "provenance": {
            "formule": snapshot.formule,
            "position": snapshot.position,
            "tete": lu.tete,
            "evenements": snapshot.evenements,
            "fuseau": snapshot.fuseau,
            "genere_le": lu.genere_le,
            **({} if journal is None else {"journal": dict(journal)}),
            **({} if prix is None else {"prix": prix_answer(prix)}),
            **({"attente_expiree": True} if lu.attente_expiree else {}),
        },
        "conservation": {
            "stockes": lu.stockes,
            "comptes": sum(f.evenements for f in clients.values()) + snapshot.releves,
            "en_attente": snapshot.en_attente,
            "ecartes": snapshot.ecartes,
            "meme_source": lu.meme_source,
        },
        # Null until a relevé is folded (SPEC, "In the bilan"; ADR-0177).
        "rapprochement": None if lu.rapprochement is None else dict(lu.rapprochement),
    }
    if snapshot.par is not None:
        bilan["par"] = snapshot.par
        if snapshot.puis is not None:
            bilan["puis"] = snapshot.puis
        if not lu.champ_vu:  # a journal field asked before any line with a field (0164)
            bilan["champ_vu"] = False
        bilan["groupes"] = (None if snapshot.groupes is None
                            else groupes_answer(snapshot.groupes, prix, snapshot.puis,
                                                snapshot.par))
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


GROUPE_EN_USD = ("evites", "pilotage", "corrections", "net", "net_par_demande",
                 "intervalle_net_par_demande")
"""The keys of a classement group's ``en_usd`` (``groupe_en_usd``), in the wire's order."""


def groupe_en_usd(groupe: Groupe, prix: Prix) -> dict[str, Any]:
    """A classement group's figures in USD (ADR-0130), keyed by ``GROUPE_EN_USD``: its four
    sums exact, its ``net_par_demande`` and that interval's bounds (means: no finite
    decimal need express them) rounded half up to the micro-dollar; all decimal text."""
    rate = prix.usd_par_million
    interval = groupe.intervalle_net_par_demande
    # Zipped with GROUPE_EN_USD, strict: the keys the CSV names its columns by.
    return dict(zip(GROUPE_EN_USD, (
        usd(groupe.evites, rate), usd(groupe.pilotage, rate),
        usd(groupe.corrections, rate), usd(groupe.net, rate),
        usd_rounded(Fraction(groupe.net, groupe.demandes), rate),
        None if interval is None else [
            None if bound is None else usd_rounded(Fraction(bound), rate)
            for bound in interval]), strict=True))


PERIMETRE = "demandes dont la delegation est arrivee"
"""What a classement's figures count (ADR-0165): each group's demandes whose delegation
has arrived, so a group's taux_reprise can differ from the bilan's, which counts every
event (the pilotages and corrections ``en_attente`` included)."""


def classement_answer(lu: ClassementLu) -> dict[str, Any]:
    """The classement's wire shape (SPEC, "Ranking presets: the classement") of ``lu``:
    ``{"par", "formule", "position", "min", "critere", "perimetre", "groupes",
    "comparaisons"}`` (``perimetre``: ``PERIMETRE``, what the figures count), with
    ``"comparaisons_limite": MAX_COMPARED`` when more groups are ranked (only the first
    ``MAX_COMPARED`` are compared), ``"apparier"``, ``"depuis"`` and ``"jusqu_au"`` when
    asked, ``"champ_vu": false`` when
    a journal field it names cannot be known yet (ADR-0164) and ``"attente_expiree":
    true`` when a wait expired. Under a weighted formula (``prix``) each group has its
    ``en_usd`` (``groupe_en_usd``) and the answer its ``prix`` (``prix_answer``;
    ADR-0130)."""
    prix = lu.prix
    answer: dict[str, Any] = {
        "par": lu.par, "formule": lu.formule, "position": lu.position, "min": lu.minimum,
        "critere": CRITERES[lu.selon], "perimetre": PERIMETRE,
        "groupes": [groupe.as_dict() if prix is None
                    else {**groupe.as_dict(), "en_usd": groupe_en_usd(groupe, prix)}
                    for groupe in lu.groupes],
        "comparaisons": [verdict.as_dict() for verdict in lu.verdicts]}
    if prix is not None:
        answer["prix"] = prix_answer(prix)
    if lu.ranked > MAX_COMPARED:
        answer["comparaisons_limite"] = MAX_COMPARED
    if lu.apparier is not None:
        answer["apparier"] = lu.apparier
    for name, day in (("depuis", lu.depuis), ("jusqu_au", lu.jusqu_au)):
        if day is not None:  # the window asked, echoed (SPEC)
            answer[name] = day
    if not lu.champ_vu:  # a journal field asked before any line with a field (0164)
        answer["champ_vu"] = False
    if lu.attente_expiree:
        answer["attente_expiree"] = True
    return answer
