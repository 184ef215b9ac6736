"""The reads of ``BilanView`` in SQL, shared by both backends: each runs in one read
transaction (``_read``), so a snapshot's figures all come from one state of the view."""

from __future__ import annotations

from abc import abstractmethod
from collections import defaultdict
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import Any

from miam_economies.domain.bilan import Figures, FiguresModele
from miam_economies.projections.sql_schema import FIGURES, Cursor
from miam_economies.projections.view import INCONNU, BilanSnapshot


class SqlReads:
    """``snapshot``, ``demande`` and ``journal_state`` of ``BilanView`` in SQL; the backend
    gives ``_read``, ``tracking_table`` and ``EN_ATTENTE``."""

    EN_ATTENTE = ("SELECT count(DISTINCT l.event_id) FROM bilan_demandes AS d "
                  "JOIN bilan_liens AS l ON l.projection = d.projection "
                  "AND l.demande_id = d.demande_id AND l.client = d.client "
                  "WHERE d.projection = ? AND d.delegations = 0")
    """Pilotages and corrections reaching a demande still without its delegation."""

    @property
    @abstractmethod
    def tracking_table(self) -> str:
        """The library's tracking table (positions by projection name)."""

    @abstractmethod
    def _read(self) -> AbstractContextManager[Cursor]:
        """A read transaction: its statements all see one snapshot."""

    def journal_state(self, chemin: str) -> dict[str, Any]:
        """See ``BilanView.journal_state``."""
        with self._read() as c:
            c.execute("SELECT position, fichier, empreinte, lignes, malformees, sans_demande "
                      "FROM journal_suivi WHERE chemin = ?", (chemin,))
            row = c.fetchone() or (0, None, None, 0, 0, 0)
        return dict(zip(("position", "fichier", "empreinte", "lignes", "malformees",
                         "sans_demande"), row, strict=True))

    def snapshot(self, name: str, formule: str, par: str | None = None,
                 depuis: str | None = None, jusqu_au: str | None = None) -> BilanSnapshot:
        """See ``BilanView.snapshot``."""
        with self._read() as c:
            c.execute(f"SELECT max(notification_id) FROM {self.tracking_table} "
                      "WHERE application_name = ?", (name,))
            position = c.fetchone()[0] or 0
            c.execute("SELECT evenements, fuseau, journal FROM bilan_state "
                      "WHERE projection = ?", (name,))
            evenements, fuseau, journal = c.fetchone() or (0, None, None)
            c.execute("SELECT identite FROM bilan_sources WHERE projection = ?", (name,))
            identite = (c.fetchone() or (None,))[0]
            c.execute(f"SELECT client, {FIGURES}, evenements, conflits FROM bilan_clients "
                      "WHERE projection = ?", (name,))
            rows = c.fetchall()
            clients = {r[0]: Figures(*map(int, r[1:6])) for r in rows}
            conflits = {r[0]: r[6] for r in rows}
            c.execute("SELECT client, kind, nombre FROM bilan_anomalies WHERE projection = ? "
                      "ORDER BY kind", (name,))
            anomalies: defaultdict[str, dict[str, int]] = defaultdict(dict)
            for client, kind, nombre in c.fetchall():
                anomalies[client][kind] = nombre
            # Pilotages and corrections reaching a demande still without its delegation.
            c.execute(self.EN_ATTENTE, (name,))
            en_attente = c.fetchone()[0]
            groupes = None if par is None else self._groupes(
                c, name, par, depuis, jusqu_au, clients)
        return BilanSnapshot(formule, position, evenements, clients, en_attente, fuseau,
                             par, groupes, anomalies, conflits, identite)

    def _groupes(self, c: Cursor, name: str, par: str, depuis: str | None,
                 jusqu_au: str | None,
                 clients: Mapping[str, Figures]) -> dict[str, dict[str, dict[str, Any]]]:
        out: defaultdict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
        if par == "client":
            return {client: {client: f.as_dict()} for client, f in sorted(clients.items())}
        if par == "jour":
            c.execute(f"SELECT jour, client, {FIGURES} FROM bilan_jours "
                      "WHERE projection = ? AND jour >= ? AND jour <= ? ORDER BY jour",
                      (name, depuis or "0000-00-00", jusqu_au or "9999-99-99"))
        elif par == "modele":
            c.execute("SELECT modele, client, tours, input_tokens, output_tokens, "
                      "cache_read_input_tokens, cache_creation_input_tokens, cout "
                      "FROM bilan_modeles WHERE projection = ? ORDER BY modele", (name,))
            for modele, client, *counts in c.fetchall():
                out[modele][client] = FiguresModele(*map(int, counts)).as_dict(modele)
            return dict(out)
        elif par == "demande":
            c.execute(f"SELECT demande_id, client, {FIGURES} FROM bilan_demandes "
                      "WHERE projection = ? ORDER BY demande_id", (name,))
        else:
            return self._journal_groups(c, name, par.removeprefix("journal."), clients)
        for key, client, *figures in c.fetchall():
            out[key][client] = Figures(*map(int, figures)).as_dict()
        return dict(out)

    def _journal_groups(self, c: Cursor, name: str, champ: str,
                        clients: Mapping[str, Figures]) -> dict[str, dict[str, dict[str, Any]]]:
        c.execute(f"SELECT valeur, client, {FIGURES} FROM bilan_groupes "
                  "WHERE projection = ? AND champ = ? ORDER BY valeur", (name, champ))
        known: defaultdict[str, dict[str, Figures]] = defaultdict(dict)
        joined: defaultdict[str, Figures] = defaultdict(Figures)
        for valeur, client, *figures in c.fetchall():
            known[valeur][client] = Figures(*map(int, figures))
            joined[client] += known[valeur][client]
        # What no demande with a value for this field carries: total minus the groups.
        rest = {client: replace(f, evenements=0) - joined[client]
                for client, f in clients.items()}
        out = {valeur: {client: f.as_dict() for client, f in clients.items()}
               for valeur, clients in known.items()}
        unknown = {client: f.as_dict() for client, f in rest.items() if f != Figures()}
        if unknown:
            out[INCONNU] = unknown
        return out

    def demande(self, name: str, demande_id: str) -> list[dict[str, Any]]:
        """See ``BilanView.demande``."""
        with self._read() as c:
            c.execute(
                f"SELECT client, {FIGURES}, pilotages, corrections_nombre, delegation_id, "
                "agent_id, par_subagent, retour, methode, tokens_entree, tokens_sortie, "
                "lus, ecrits, consigne, rendus FROM bilan_demandes "
                "WHERE projection = ? AND demande_id = ? ORDER BY client", (name, demande_id))
            rows = c.fetchall()
            c.execute("SELECT client, outil, cout, nombre FROM bilan_outils "
                      "WHERE projection = ? AND demande_id = ? ORDER BY outil",
                      (name, demande_id))
            outils: defaultdict[str, dict[str, Any]] = defaultdict(dict)
            for client, outil, cout, nombre in c.fetchall():
                outils[client][outil] = {"cout": int(cout), "nombre": nombre}
        entries = []
        for (client, delegations, evites, pilotage, corrections, pilotages, nombre,
             delegation_id, agent_id, par_subagent, retour, methode, *tokens) in rows:
            # Token sums come back as int, decimal text (SQLite) or Decimal (PostgreSQL).
            evites, pilotage, corrections = int(evites), int(pilotage), int(corrections)
            counts = [int(n) for n in tokens]
            figures = Figures(delegations, evites, pilotage, corrections)
            delegation = None if delegation_id is None else {
                "id": delegation_id, "agent_id": agent_id,
                "par_subagent": bool(par_subagent), "retour": retour,
                "tokens_entree": counts[0], "tokens_sortie": counts[1],
                "estimation": {"lus": counts[2], "ecrits": counts[3], "consigne": counts[4],
                               "rendus": counts[5], "evites": evites, "methode": methode},
            }
            entries.append({
                "demande_id": demande_id,
                "client": client,
                "delegation": delegation,
                "pilotage": {"part": pilotage, "pilotages": pilotages},
                "corrections": {"cout": corrections, "nombre": nombre,
                                "par_outil": outils[client]},
                "evites": evites,
                "net": figures.net,
                "taux_reprise": figures.taux_reprise,
            })
        return entries
