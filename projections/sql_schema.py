"""The bilan view's tables, in the column types of a dialect (ADR-0004, ADR-0031).

Every table is keyed by ``projection`` (the tracking name, ``bilan:<formule>:<fuseau>``),
so a replay builds beside the live projection (ADR-0009); the journal's tables are keyed by
the journal file.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from miam_economies.domain.releves import COUNTERS

Cursor = Any
"""A DB-API cursor whose ``execute``/``executemany`` take ``?`` placeholders."""

FIGURES = "delegations, evites, pilotage, corrections"
"""The four summed figures' columns, in ``Figures``' order."""

USAGE_SUMS = (*COUNTERS, "cout")
"""The token sums of the tables of turns and replies (``bilan_modeles``,
``bilan_session_agents``, ``bilan_releves_agents``): the four usage counters, then the
formula's cost."""

TOKEN_LIMIT = 2**62
"""Magnitude from which a token sum may overflow a 64-bit integer once added to another
below it: SQLite keeps such a sum as decimal text (ADR-0051)."""
TABLES = ("bilan_clients", "bilan_state", "bilan_jours", "bilan_modeles", "bilan_demandes",
          "bilan_demandes_jours", "bilan_outils", "bilan_liens", "bilan_groupes",
          "bilan_groupes_jours", "bilan_echantillons", "bilan_echantillons_jours",
          "bilan_sessions", "bilan_anomalies", "bilan_sources", "bilan_ecartes",
          "bilan_releves", "bilan_par_session", "bilan_session_agents",
          "bilan_sessions_rapprochees", "bilan_releves_agents", "bilan_groupes_differes")
"""The tables keyed by projection."""
JOURNAL_TABLES = ("journal_valeurs", "journal_demandes", "journal_suivi")
"""The tables keyed by journal file."""

REBUILT_ON_UPGRADE = (*(t for t in TABLES if t != "bilan_state"), *JOURNAL_TABLES)
"""The tables a view of an older schema version drops: derived data, folded again from the
store and joined again with the journal. ``bilan_state`` (each projection's settings: its
zone, journal, formula) and ``bilan_actif`` (which one serves) are kept, their figures'
count reset, so an upgrade never moves the bilan to another zone or formula."""

NOT_DEFERRED = ("NOT EXISTS (SELECT 1 FROM bilan_groupes_differes x "
                "WHERE x.projection = {t}.projection)")
"""The SQL condition, on alias ``t``'s ``projection`` (``NOT_DEFERRED.format(t=...)``),
that leaves out the projections whose groups wait for their build's rebuild
(``bilan_groupes_differes``; ADR-0179): a journal join skips them."""

CHUNK = 500
"""Ids per ``IN (...)`` list: far below either backend's bound on parameters."""


def chunks(items: Sequence[Any]) -> Iterator[Sequence[Any]]:
    """``items`` in slices of ``CHUNK``, for ``IN (...)`` lists."""
    for i in range(0, len(items), CHUNK):
        yield items[i:i + CHUNK]


def view_tables(text: str, integer: str, tokens: str, boolean: str,
                without_rowid: str) -> list[str]:
    """The view's ``CREATE TABLE``/``CREATE INDEX`` statements in a dialect's column types:
    ``text`` (keys compared as code points by both: the smallest delegation id, the
    order of groups), ``integer`` (64-bit: counts of events, turns, lines), ``tokens``
    (a sum of token counts, exact past 2^63: SPEC, "Figures are exact"; ADR-0051),
    ``boolean``, and ``without_rowid`` (SQLite's table option, or empty)."""
    n = tokens
    figures = (f"delegations {integer} NOT NULL, evites {n} NOT NULL, "
               f"pilotage {n} NOT NULL, corrections {n} NOT NULL")
    t, i, b, w = text, integer, boolean, without_rowid
    sample = (f"demandes {i} NOT NULL, evites {n} NOT NULL, "
              f"pilotage {n} NOT NULL, corrections {n} NOT NULL, "
              f"evites_squared {n} NOT NULL, corrections_squared {n} NOT NULL, "
              f"evites_times_corrections {n} NOT NULL, net_squared {n} NOT NULL, "
              f"sessions {i} NOT NULL, session_demandes_squared {n} NOT NULL, "
              f"session_net_squared {n} NOT NULL, session_demandes_times_net {n} NOT NULL, "
              f"session_evites_squared {n} NOT NULL, "
              f"session_corrections_squared {n} NOT NULL, "
              f"session_evites_times_corrections {n} NOT NULL, "
              f"session_demandes_cubed {n} NOT NULL, "
              f"session_demandes_squared_times_net {n} NOT NULL, "
              f"session_demandes_times_net_squared {n} NOT NULL")
    return [
        f"CREATE TABLE IF NOT EXISTS bilan_state (projection {t} PRIMARY KEY, "
        f"evenements {i} NOT NULL, fuseau {t} NOT NULL, "
        f"fuseau_explicite {b} NOT NULL, journal {t} NOT NULL, "
        f"journal_explicite {b} NOT NULL, formule {t} NOT NULL){w}",
        # The identity of the store's event at each projection's tracking position,
        # written with it (NULL: not known, as after a page of one event): a store
        # replaced by another one gives another identity there (ADR-0105). avance_le:
        # when a page last moved it (ms since the epoch), so a fold that stopped shows
        # to every process that reads the view (ADR-0136). releves: the relevé events
        # folded, counted in the conservation's comptes (ADR-0173).
        f"CREATE TABLE IF NOT EXISTS bilan_sources (projection {t} PRIMARY KEY, "
        f"identite {t}, avance_le {i}, releves {i} NOT NULL DEFAULT 0){w}",
        # The stored events each projection set aside: their position and why (our
        # words), folded into no figure, counted by the conservation (ADR-0135).
        f"CREATE TABLE IF NOT EXISTS bilan_ecartes (projection {t}, position {i}, "
        f"raison {t} NOT NULL, PRIMARY KEY (projection, position)){w}",
        # Which projection serves: one row, switched in one statement (ADR-0009).
        f"CREATE TABLE IF NOT EXISTS bilan_actif (cle {t} PRIMARY KEY, "
        f"projection {t} NOT NULL){w}",
        f"CREATE TABLE IF NOT EXISTS bilan_clients (projection {t}, client {t}, "
        f"{figures}, evenements {i} NOT NULL, conflits {i} NOT NULL, "
        f"PRIMARY KEY (projection, client)){w}",
        f"CREATE TABLE IF NOT EXISTS bilan_anomalies (projection {t}, client {t}, "
        f"kind {t}, nombre {i} NOT NULL, PRIMARY KEY (projection, client, kind)){w}",
        f"CREATE TABLE IF NOT EXISTS bilan_jours (projection {t}, jour {t}, client {t}, "
        f"{figures}, PRIMARY KEY (projection, jour, client)){w}",
        # Per model and day, so a model's turns can be split by period (ADR-0133).
        f"CREATE TABLE IF NOT EXISTS bilan_modeles (projection {t}, modele {t}, "
        f"jour {t}, client {t}, tours {i} NOT NULL, input_tokens {n} NOT NULL, "
        f"output_tokens {n} NOT NULL, cache_read_input_tokens {n} NOT NULL, "
        f"cache_creation_input_tokens {n} NOT NULL, cout {n} NOT NULL, "
        f"PRIMARY KEY (projection, modele, jour, client)){w}",
        # One row per (client, demande): its figures (pilotage = its parts), the
        # pilotages and corrections it holds, and its delegation (delegation_id NULL
        # until one arrives; attributes of the smallest id, counts summed: ADR-0006;
        # session_id, the classement's unit of variance: ADR-0166; jour, its day in the
        # projection's zone, the classement's window and clusters: ADR-0167).
        f"CREATE TABLE IF NOT EXISTS bilan_demandes (projection {t}, demande_id {t}, "
        f"client {t}, {figures}, pilotages {i} NOT NULL, "
        f"corrections_nombre {i} NOT NULL, delegation_id {t}, agent_id {t}, "
        f"par_subagent {b}, retour {t}, methode {t}, "
        f"tokens_entree {n} NOT NULL, tokens_sortie {n} NOT NULL, "
        f"lus {n} NOT NULL, ecrits {n} NOT NULL, consigne {n} NOT NULL, "
        f"rendus {n} NOT NULL, session_id {t}, jour {t}, "
        "PRIMARY KEY (projection, demande_id, client))",
        # Demandes still waiting for their delegation: conservation reads only these.
        "CREATE INDEX IF NOT EXISTS bilan_demandes_en_attente ON bilan_demandes "
        "(projection) WHERE delegations = 0",
        "CREATE INDEX IF NOT EXISTS bilan_demandes_id ON bilan_demandes (demande_id)",
        # What each (client, demande) got on each day: the groups' per-day figures are
        # their sums, joined with the journal when its line comes late (ADR-0133).
        f"CREATE TABLE IF NOT EXISTS bilan_demandes_jours (projection {t}, "
        f"demande_id {t}, client {t}, jour {t}, {figures}, "
        f"PRIMARY KEY (projection, demande_id, client, jour)){w}",
        # Which pilotages and corrections reach which demande: en_attente counts those
        # reaching a demande without delegation (read through the partial index).
        f"CREATE TABLE IF NOT EXISTS bilan_liens (projection {t}, demande_id {t}, "
        f"client {t}, event_id {t}, "
        f"PRIMARY KEY (projection, demande_id, client, event_id)){w}",
        f"CREATE TABLE IF NOT EXISTS bilan_outils (projection {t}, demande_id {t}, "
        f"client {t}, outil {t}, cout {n} NOT NULL, nombre {i} NOT NULL, "
        f"PRIMARY KEY (projection, demande_id, client, outil)){w}",
        # Figures of the demandes that have a journal value, per (field, value, client).
        f"CREATE TABLE IF NOT EXISTS bilan_groupes (projection {t}, champ {t}, "
        f"valeur {t}, client {t}, {figures}, "
        f"PRIMARY KEY (projection, champ, valeur, client)){w}",
        # The same by the events' days, for the fields of CHAMPS_PAR_JOUR (preset,
        # format), so their groups are read by period within the bilan's budget (ADR-0133).
        f"CREATE TABLE IF NOT EXISTS bilan_groupes_jours (projection {t}, champ {t}, "
        f"valeur {t}, jour {t}, client {t}, {figures}, "
        f"PRIMARY KEY (projection, champ, jour, valeur, client)){w}",
        # The classement's samples per (field, value, client), and per client under the
        # field '': the count of demandes with a delegation and the sums of their
        # figures, squares and product (ADR-0073), then the count of their sessions and
        # the sums of the sessions' totals' squares and products (ADR-0166).
        f"CREATE TABLE IF NOT EXISTS bilan_echantillons (projection {t}, champ {t}, "
        f"valeur {t}, client {t}, {sample}, "
        f"PRIMARY KEY (projection, champ, valeur, client)){w}",
        # The same restricted to the demandes of each day (their delegation's, in the
        # projection's zone; a row per day holding some): a window sums its days, the
        # drift flag reads them (ADR-0167). Summed over its days, a group's row above.
        f"CREATE TABLE IF NOT EXISTS bilan_echantillons_jours (projection {t}, "
        f"champ {t}, valeur {t}, client {t}, jour {t}, {sample}, "
        # In day order within a group: the drift flag reads a group's days latest first
        # and stops at its recent quarter, without a lookup (ADR-0168).
        f"PRIMARY KEY (projection, champ, valeur, jour, client)){w}",
        # Each sample's clusters: the totals of the group's demandes with a delegation in
        # each (client, session_id, jour) of theirs, a row per cluster holding some
        # (ADR-0166; a session's demandes of one day, ADR-0167). A fold replaces a
        # cluster's part of the sample's sums from these; the (inconnu) group's clusters
        # are the client's less the field's valued ones.
        f"CREATE TABLE IF NOT EXISTS bilan_sessions (projection {t}, champ {t}, "
        f"valeur {t}, client {t}, session {t}, jour {t}, demandes {i} NOT NULL, "
        f"evites {n} NOT NULL, pilotage {n} NOT NULL, corrections {n} NOT NULL, "
        f"PRIMARY KEY (projection, champ, valeur, client, session, jour)){w}",
        # Claude Code's replies: one row per reply key (session_id, key_kind,
        # key_value), the join of every relevé folded of it: each counter at its
        # largest, the earliest horodatage, the smallest non-null model, agent_id and
        # stop_reason, is_sidechain if any says so (releves.merge; ADR-0173). Counters
        # are a reply's, not sums: 64-bit integers.
        f"CREATE TABLE IF NOT EXISTS bilan_releves (projection {t}, session_id {t}, "
        f"key_kind {t}, key_value {t}, input_tokens {i} NOT NULL, "
        f"output_tokens {i} NOT NULL, cache_read_input_tokens {i} NOT NULL, "
        f"cache_creation_input_tokens {i} NOT NULL, horodatage {t} NOT NULL, "
        f"model {t}, agent_id {t}, stop_reason {t}, is_sidechain {b} NOT NULL, "
        f"PRIMARY KEY (projection, session_id, key_kind, key_value)){w}",
        # Each Claude Code session's figures per client, every event under its own
        # session_id (ADR-0176): the session read and ?par=session read them by key.
        f"CREATE TABLE IF NOT EXISTS bilan_par_session (projection {t}, "
        f"session_id {t}, client {t}, {figures}, "
        f"PRIMARY KEY (projection, session_id, client)){w}",
        # Each subagent's pilotages in a session: turns, the four counters and the
        # formula's cost summed, for the rapprochement (ADR-0177).
        f"CREATE TABLE IF NOT EXISTS bilan_session_agents (projection {t}, "
        f"session_id {t}, agent_id {t}, client {t}, tours {i} NOT NULL, "
        f"input_tokens {n} NOT NULL, output_tokens {n} NOT NULL, "
        f"cache_read_input_tokens {n} NOT NULL, "
        f"cache_creation_input_tokens {n} NOT NULL, cout {n} NOT NULL, "
        f"PRIMARY KEY (projection, session_id, agent_id, client)){w}",
        # The sessions with both plugin rows and replies, noted by the fold when the
        # second source arrives: the bilan's rapprochement reads these, not every
        # session (ADR-0177).
        f"CREATE TABLE IF NOT EXISTS bilan_sessions_rapprochees (projection {t}, "
        f"session_id {t}, PRIMARY KEY (projection, session_id)){w}",
        # Claude Code's replies summed per session and agent (agent_key '' for the main
        # agent), moved as the replies' rows change: the rapprochement's relevés
        # (ADR-0177).
        f"CREATE TABLE IF NOT EXISTS bilan_releves_agents (projection {t}, "
        f"session_id {t}, agent_key {t}, reponses {i} NOT NULL, "
        f"incompletes {i} NOT NULL, input_tokens {n} NOT NULL, "
        f"output_tokens {n} NOT NULL, cache_read_input_tokens {n} NOT NULL, "
        f"cache_creation_input_tokens {n} NOT NULL, cout {n} NOT NULL, "
        f"PRIMARY KEY (projection, session_id, agent_key)){w}",
        # The projections whose journal-field groups (and the classement's samples, their
        # days and clusters) wait for one rebuild at the end of a build: its pages and
        # journal lines leave them alone until then. avance_le (ms since the epoch): the
        # build's last page; a mark left alone for STOPPED_AFTER seconds is a stopped
        # build's, whose groups the live runner rebuilds (ADR-0179).
        f"CREATE TABLE IF NOT EXISTS bilan_groupes_differes (projection {t} PRIMARY KEY, "
        f"avance_le {i} NOT NULL){w}",
        # Per journal file (chemin): its first line per demande, the scalar values
        # of those lines, and how far it was read (fichier: device:inode; empreinte:
        # a digest of the bytes read, to tell a file truncated and refilled in place).
        f"CREATE TABLE IF NOT EXISTS journal_valeurs (chemin {t}, demande_id {t}, "
        f"champ {t}, valeur {t} NOT NULL, PRIMARY KEY (chemin, demande_id, champ)){w}",
        # The demandes that have a value for a field, with it (covering): the paired
        # classement's tasks, read without the rest of the journal (ADR-0081).
        "CREATE INDEX IF NOT EXISTS journal_valeurs_par_champ ON journal_valeurs "
        "(chemin, champ, demande_id, valeur)",
        f"CREATE TABLE IF NOT EXISTS journal_demandes (chemin {t}, demande_id {t}, "
        f"PRIMARY KEY (chemin, demande_id)){w}",
        f"CREATE TABLE IF NOT EXISTS journal_suivi (chemin {t} PRIMARY KEY, "
        f"position {i} NOT NULL, fichier {t}, empreinte {t}, lignes {i} NOT NULL, "
        f"malformees {i} NOT NULL, sans_demande {i} NOT NULL, "
        f"valeurs_ecartees {i} NOT NULL){w}",
        # The formulas users set from a price file, by name: the table as canonical JSON
        # and the file's checksum. Not derived from the store: an upgrade keeps it, as
        # bilan_state (ADR-0131).
        f"CREATE TABLE IF NOT EXISTS bilan_formules (nom {t} PRIMARY KEY, "
        f"sha256 {t} NOT NULL, fichier {t} NOT NULL, tarifs {t} NOT NULL, "
        f"enregistre_le {t} NOT NULL){w}",
    ]
