"""The relevés' table (``bilan_releves``): Claude Code's replies, one row per reply key,
each the join of every relevé folded of it (ADR-0173).

A page's relevés come merged by key (``PageDelta.releves``); each is then merged with
its row in one upsert, by the rule of ``domain.releves.merge`` written in SQL both
backends read alike: each counter at its largest, the earliest ``horodatage`` (UTC text
of one form: text order is time order), the smallest non-null ``model``, ``agent_id``
and ``stop_reason``, ``is_sidechain`` if either says so. Every part is a maximum or a
minimum, so any order of relevés, of pages and of replays gives the same rows. Texts
compare by code point: SQLite's ``BINARY`` collation compares UTF-8 bytes, PostgreSQL's
columns are ``COLLATE "C"`` (``postgres_view``), and UTF-8's byte order is code-point
order, as Python's ``min`` of two strings.
"""

from __future__ import annotations

from collections.abc import Iterable

from miam_economies.domain.events import Usage
from miam_economies.domain.releves import COUNTERS, Observation, ReplyKey
from miam_economies.projections.delta import PageDelta
from miam_economies.projections.sql_schema import Cursor

TEXTS = ("model", "agent_id", "stop_reason")
"""The columns whose smallest non-null value a merge keeps."""

COLUMNS = ("session_id", "key_kind", "key_value", *COUNTERS, "horodatage", *TEXTS,
           "is_sidechain")
"""``bilan_releves``' columns after ``projection``, in table order."""

_T = "bilan_releves"


def _merged(column: str) -> str:
    """The ``SET`` clause merging the stored ``column`` with ``excluded``'s."""
    new, old = f"excluded.{column}", f"{_T}.{column}"
    if column in COUNTERS:
        return f"{column} = CASE WHEN {new} > {old} THEN {new} ELSE {old} END"
    if column == "horodatage":
        return f"{column} = CASE WHEN {new} < {old} THEN {new} ELSE {old} END"
    if column in TEXTS:
        return (f"{column} = CASE WHEN {new} IS NOT NULL AND ({old} IS NULL OR {new} < "
                f"{old}) THEN {new} ELSE {old} END")
    return f"{column} = {old} OR {new}"  # is_sidechain


UPSERT = (f"INSERT INTO {_T} VALUES (?, {', '.join('?' for _ in COLUMNS)}) "
          "ON CONFLICT (projection, session_id, key_kind, key_value) DO UPDATE SET "
          + ", ".join(_merged(c) for c in COLUMNS[3:]))
"""One relevé merged into its reply's row (a new row for a reply not seen yet)."""


class RelevesWriter:
    """Folds a page's relevés into ``bilan_releves`` and counts them in
    ``bilan_sources.releves``, inside the page's write transaction."""

    @staticmethod
    def fold(c: Cursor, name: str, delta: PageDelta) -> None:
        """Merge ``delta.releves`` into projection ``name``'s rows (in key order: each
        upsert lands beside the previous one) and add ``delta.releves_lus`` to its
        count. Call it only for a page with relevés: a page without costs nothing."""
        rows = []
        for key, r in sorted(delta.releves.items()):
            u = r.usage
            rows.append((name, key.session_id, key.kind, key.value, u.input_tokens,
                         u.output_tokens, u.cache_read_input_tokens,
                         u.cache_creation_input_tokens, r.timestamp, r.model, r.agent_id,
                         r.stop_reason, r.is_sidechain))
        c.executemany(UPSERT, rows)
        c.execute("UPDATE bilan_sources SET releves = releves + ? WHERE projection = ?",
                  (delta.releves_lus, name))

    @staticmethod
    def stored(c: Cursor, name: str, keys: Iterable[ReplyKey]) -> dict[ReplyKey, Observation]:
        """The rows of ``keys`` that projection ``name`` holds, as they stand (read before
        a page's upsert: ``sql_releves_agents`` moves each reply's part from them)."""
        out = {}
        for key in sorted(keys):
            for reply in _read(c, "projection = ? AND session_id = ? AND key_kind = ? "
                               "AND key_value = ?", [name, key.session_id, key.kind,
                                                     key.value]):
                out[key] = reply
        return out

    @staticmethod
    def replies(c: Cursor, name: str, session_id: str | None = None) -> list[Observation]:
        """Projection ``name``'s replies (of ``session_id`` only, when given), each an
        ``Observation`` (tokens; the earliest timestamp), in key order: session, key
        kind, key value."""
        where, params = "projection = ?", [name]
        if session_id is not None:
            where, params = where + " AND session_id = ?", [name, session_id]
        return _read(c, where, params)


def _read(c: Cursor, where: str, params: list[str]) -> list[Observation]:
    # The replies of the rows ``where`` selects, in key order.
    c.execute(f"SELECT {', '.join(COLUMNS)} FROM {_T} WHERE {where} "
              "ORDER BY session_id, key_kind, key_value", params)
    replies = []
    for row in c.fetchall():
        session, kind, value, i, o, cr, cc, stamp, model, agent, stop, side = row
        replies.append(Observation(
            ReplyKey(session, kind, value), Usage(int(i), int(o), int(cr), int(cc)),
            stamp, model, agent, stop, bool(side)))
    return replies
