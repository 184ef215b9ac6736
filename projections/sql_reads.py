"""The reads of the bilan view in SQL, shared by both backends: each runs in the read
transaction the view opens, so a snapshot's figures all come from one state of the view.
They return the read model's typed values; the answers' wire shapes are the service
layer's (``api.service.answers``; ADR-0120)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from miam_economies.domain.bilan import Figures, FiguresModele
from miam_economies.projections.delta import DelegationVue
from miam_economies.projections.sql_breakdowns import read_breakdown
from miam_economies.projections.sql_dialect import SqlDialect
from miam_economies.projections.sql_par_session import SessionsFiguresWriter
from miam_economies.projections.sql_samples import (
    CLIENT_WIDE,
    SAMPLE_SUMS,
    Sums,
    Task,
    as_own_sessions,
    difference,
    summed,
)
from miam_economies.projections.sql_schema import FIGURES, Cursor, chunks
from miam_economies.projections.sql_window import (
    FIRST_DAY,
    LAST_DAY,
    recent_samples,
    samples_in_window,
)
from miam_economies.projections.view import (
    INCONNU,
    BilanSnapshot,
    DemandeLue,
    Groupes,
    Groupes2,
    Progression,
    ProjectionSettings,
    Samples,
)


class SqlReader:
    """Reads projections out of the view's tables through a cursor of a read (or write)
    transaction; ``dialect`` gives the tracking table and the conservation's query."""

    def __init__(self, dialect: SqlDialect):
        self.dialect = dialect
        self._position = (f"SELECT max(notification_id) FROM {dialect.tracking_table} "
                          "WHERE application_name = ?")

    def position(self, c: Cursor, name: str) -> int:
        """Projection ``name``'s tracking position (0 before any)."""
        c.execute(self._position, (name,))
        return int(c.fetchone()[0] or 0)

    def source(self, c: Cursor, name: str) -> tuple[int, str | None]:
        """See ``BilanView.source``."""
        position = self.position(c, name)
        c.execute("SELECT identite FROM bilan_sources WHERE projection = ?", (name,))
        row = c.fetchone()
        return position, None if row is None else row[0]

    def progression(self, c: Cursor, name: str) -> Progression:
        """See ``BilanView.progression``."""
        position = self.position(c, name)
        c.execute("SELECT avance_le FROM bilan_sources WHERE projection = ?", (name,))
        row = c.fetchone()
        avance_le = None if row is None or row[0] is None else row[0] / 1000
        return Progression(position, avance_le, self.ecartes(c, name))

    @staticmethod
    def ecartes(c: Cursor, name: str) -> int:
        """Stored events projection ``name`` set aside (ADR-0135)."""
        c.execute("SELECT count(*) FROM bilan_ecartes WHERE projection = ?", (name,))
        return int(c.fetchone()[0])

    @staticmethod
    def settings(c: Cursor, name: str) -> ProjectionSettings | None:
        """See ``BilanView.settings_of``."""
        c.execute("SELECT fuseau, journal, fuseau_explicite, journal_explicite, formule "
                  "FROM bilan_state WHERE projection = ?", (name,))
        row = c.fetchone()
        if row is None:
            return None
        fuseau, journal, fuseau_explicite, journal_explicite, formule = row
        return ProjectionSettings(fuseau, journal, bool(fuseau_explicite),
                                  bool(journal_explicite), formule)

    @staticmethod
    def active(c: Cursor) -> str | None:
        """See ``BilanView.active``."""
        c.execute("SELECT projection FROM bilan_actif WHERE cle = 'bilan'")
        row = c.fetchone()
        return None if row is None else str(row[0])

    @staticmethod
    def journal_state(c: Cursor, chemin: str) -> dict[str, Any]:
        """See ``BilanView.journal_state``."""
        c.execute("SELECT position, fichier, empreinte, lignes, malformees, sans_demande, "
                  "valeurs_ecartees FROM journal_suivi WHERE chemin = ?", (chemin,))
        row = c.fetchone() or (0, None, None, 0, 0, 0, 0)
        return dict(zip(("position", "fichier", "empreinte", "lignes", "malformees",
                         "sans_demande", "valeurs_ecartees"), row, strict=True))

    @staticmethod
    def journal_fields(c: Cursor, chemin: str) -> frozenset[str]:
        """See ``BilanView.journal_fields``: a loose index scan of
        ``journal_valeurs_par_champ``, one seek per field (not a scan of every value: a
        read's budget holds at a million demandes)."""
        c.execute("WITH RECURSIVE f(champ) AS ("
                  " SELECT MIN(champ) FROM journal_valeurs WHERE chemin = ?"
                  " UNION ALL SELECT (SELECT MIN(champ) FROM journal_valeurs"
                  "  WHERE chemin = ? AND champ > f.champ) FROM f"
                  "  WHERE f.champ IS NOT NULL)"
                  " SELECT champ FROM f WHERE champ IS NOT NULL", (chemin, chemin))
        return frozenset(str(row[0]) for row in c.fetchall())

    def snapshot(self, c: Cursor, name: str, formule: str, par: str | None = None,
                 depuis: str | None = None, jusqu_au: str | None = None,
                 puis: str | None = None) -> BilanSnapshot:
        """See ``BilanView.snapshot``."""
        position = self.position(c, name)
        c.execute("SELECT identite, releves FROM bilan_sources WHERE projection = ?",
                  (name,))
        identite, releves = c.fetchone() or (None, 0)
        c.execute("SELECT evenements, fuseau, journal FROM bilan_state "
                  "WHERE projection = ?", (name,))
        evenements, fuseau, _ = c.fetchone() or (0, None, None)
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
        c.execute(self.dialect.en_attente, (name,))
        en_attente = c.fetchone()[0]
        groupes = None if par is None else self._groupes(c, name, par, puis, depuis,
                                                         jusqu_au, clients)
        return BilanSnapshot(formule, position, evenements, clients, en_attente, fuseau,
                             par, groupes, anomalies, conflits, identite, puis,
                             self.ecartes(c, name), int(releves))

    @staticmethod
    def _groupes(c: Cursor, name: str, par: str, puis: str | None, depuis: str | None,
                 jusqu_au: str | None, clients: Mapping[str, Figures]) -> Groupes | Groupes2:
        if puis is None and par == "client":
            return {client: {client: f} for client, f in sorted(clients.items())}
        if par == "session":  # alone: check_bounds refuses a second dimension (0176)
            return SessionsFiguresWriter.breakdown(c, name)
        if puis is None and par in ("jour", "demande"):
            # One table, one row per group and client: read straight into the groups.
            if par == "jour":
                c.execute(f"SELECT jour, client, {FIGURES} FROM bilan_jours "
                          "WHERE projection = ? AND jour >= ? AND jour <= ? ORDER BY jour",
                          (name, depuis or "0000-00-00", jusqu_au or "9999-99-99"))
            else:
                c.execute(f"SELECT demande_id, client, {FIGURES} FROM bilan_demandes "
                          "WHERE projection = ? ORDER BY demande_id", (name,))
            out: defaultdict[str, dict[str, Figures | FiguresModele]] = defaultdict(dict)
            for key, client, *figures in c.fetchall():
                out[key][client] = Figures(*map(int, figures))
            return dict(out)
        return read_breakdown(c, name, par, puis, depuis, jusqu_au, clients)

    @staticmethod
    def demande(c: Cursor, name: str, demande_id: str) -> list[DemandeLue]:
        """See ``BilanView.demande``."""
        c.execute(
            f"SELECT client, {FIGURES}, pilotages, corrections_nombre, delegation_id, "
            "agent_id, par_subagent, retour, methode, tokens_entree, tokens_sortie, "
            "lus, ecrits, consigne, rendus, session_id, jour FROM bilan_demandes "
            "WHERE projection = ? AND demande_id = ? ORDER BY client", (name, demande_id))
        rows = c.fetchall()
        c.execute("SELECT client, outil, cout, nombre FROM bilan_outils "
                  "WHERE projection = ? AND demande_id = ? ORDER BY outil",
                  (name, demande_id))
        outils: defaultdict[str, dict[str, tuple[int, int]]] = defaultdict(dict)
        for client, outil, cout, nombre in c.fetchall():
            outils[client][outil] = (int(cout), nombre)
        entries = []
        for (client, delegations, evites, pilotage, corrections, pilotages, nombre,
             delegation_id, agent_id, par_subagent, retour, methode, entree, sortie, lus,
             ecrits, consigne, rendus, session_id, jour) in rows:
            # Token sums come back as int, decimal text (SQLite) or Decimal (PostgreSQL).
            figures = Figures(delegations, int(evites), int(pilotage), int(corrections))
            delegation = None if delegation_id is None else DelegationVue(
                delegation_id, agent_id, bool(par_subagent), retour, methode, int(entree),
                int(sortie), int(lus), int(ecrits), int(consigne), int(rendus), session_id,
                jour)
            entries.append(DemandeLue(demande_id, client, figures, pilotages, nombre,
                                      delegation, outils[client]))
        return entries

    def samples(self, c: Cursor, name: str, par: str, apparier: str | None = None,
                depuis: str | None = None, jusqu_au: str | None = None) -> Samples:
        """See ``BilanView.samples``, all in ``c``'s transaction: projection ``name``'s
        tracking position, its samples by group of ``par`` (``client``, or a journal
        field, ``journal.`` prefix allowed), with ``apparier`` (a journal field) its
        demandes by group and task, and each stored group's recent period
        (``sql_window.recent_samples``). ``(inconnu)`` holds a field's demandes without a
        value (when there are any): its per-demande sums are the clients' less the valued
        groups'; its sessions are not kept, so its per-session sums are given as if each
        demande were a session of its own (``sql_samples.as_own_sessions``), and the
        classement makes no claim on it (ADR-0166). A demande without an ``apparier``
        value is in no task. With a window (``depuis`` and/or ``jusqu_au``, ``YYYY-MM-DD``
        inclusive) only the demandes whose day is within it count, their days' samples
        summed (``sql_window.samples_in_window``), and the tasks' too."""
        champ = None if par == "client" else par.removeprefix("journal.")
        position = self.position(c, name)
        tasks = None if apparier is None else self._tasks(
            c, name, champ, apparier.removeprefix("journal."), depuis, jusqu_au)
        if depuis is not None or jusqu_au is not None:
            return self._with_recents(c, name, champ, position, samples_in_window(
                c, self.dialect, name, champ, depuis, jusqu_au), tasks, depuis, jusqu_au)
        columns = ", ".join(SAMPLE_SUMS)
        c.execute(f"SELECT client, {columns} FROM bilan_echantillons "
                  "WHERE projection = ? AND champ = ?", (name, CLIENT_WIDE))
        clients = {row[0]: tuple(map(int, row[1:])) for row in c.fetchall()}
        if champ is None:
            return self._with_recents(c, name, champ, position, clients, tasks)
        c.execute(f"SELECT valeur, {columns} FROM bilan_echantillons "
                  "WHERE projection = ? AND champ = ?", (name, champ))
        valued: defaultdict[str, list[Sums]] = defaultdict(list)
        for valeur, *sums in c.fetchall():
            valued[valeur].append(tuple(map(int, sums)))
        groups = {valeur: summed(rows) for valeur, rows in valued.items()}
        rest = difference(summed(clients.values()), summed(groups.values()))
        if rest[0] > 0:
            groups[INCONNU] = as_own_sessions(rest)
        return self._with_recents(c, name, champ, position, {
            cle: sums for cle, sums in groups.items() if sums[0] > 0}, tasks)

    def _with_recents(self, c: Cursor, name: str, champ: str | None, position: int,
                      groups: dict[str, Sums], tasks: dict[str, dict[str, Task]] | None,
                      depuis: str | None = None, jusqu_au: str | None = None) -> Samples:
        # The answer, with each stored group's recent period read in the same
        # transaction as its whole sample (ADR-0170).
        totals = {cle: sums[0] for cle, sums in groups.items()
                  if champ is None or cle != INCONNU}  # INCONNU is no stored group
        return Samples(position, groups, tasks, recent_samples(
            c, self.dialect, name, champ, totals, depuis, jusqu_au))

    @staticmethod
    def _tasks(c: Cursor, name: str, champ: str | None, tache: str,
               depuis: str | None = None, jusqu_au: str | None = None
               ) -> dict[str, dict[str, Task]]:
        """The demandes with a delegation and a value for journal field ``tache`` (and
        their day within ``depuis``..``jusqu_au`` when given), summed by group
        (``champ``'s value, ``INCONNU`` without one; the client when ``champ`` is None)
        and task: ``(demandes, evites, pilotage, corrections)``, exact. The journal's rows
        for the field come first (its index), then their demandes by id, so the cost is
        that of the tasks' demandes, not of the history."""
        c.execute("SELECT journal FROM bilan_state WHERE projection = ?", (name,))
        row = c.fetchone()
        if row is None:
            return {}
        c.execute("SELECT t.demande_id, t.valeur, g.valeur FROM journal_valeurs t "
                  "LEFT JOIN journal_valeurs g ON g.chemin = t.chemin "
                  "AND g.demande_id = t.demande_id AND g.champ = ? "
                  "WHERE t.chemin = ? AND t.champ = ?", (champ or "", row[0], tache))
        tasks = {demande_id: (task, cle) for demande_id, task, cle in c.fetchall()}
        out: defaultdict[str, dict[str, list[int]]] = defaultdict(dict)
        for chunk in chunks(sorted(tasks)):
            c.execute("SELECT demande_id, client, evites, pilotage, corrections "
                      "FROM bilan_demandes WHERE projection = ? AND delegations > 0 "
                      "AND jour >= ? AND jour <= ? "
                      f"AND demande_id IN ({','.join('?' * len(chunk))})",
                      [name, depuis or FIRST_DAY, jusqu_au or LAST_DAY, *chunk])
            for demande_id, client, evites, pilotage, corrections in c.fetchall():
                task, valeur = tasks[demande_id]
                cle = client if champ is None else INCONNU if valeur is None else valeur
                sums = out[cle].setdefault(task, [0, 0, 0, 0])
                sums[0] += 1
                sums[1] += int(evites)
                sums[2] += int(pilotage)
                sums[3] += int(corrections)
        return {cle: {task: (n, e, p, k) for task, (n, e, p, k) in by_task.items()}
                for cle, by_task in out.items()}


