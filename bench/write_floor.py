"""The replay's floor (issue 35, item 1; ADR-0182): what writing the rows a replay builds
costs SQLite alone, with no event read and nothing folded.

A replay reads the notification log once and writes the view's rows. Whatever the fold,
it cannot beat the writes of the rows it ends with; so, after the bench's replay at its
largest size, every row of the view it built is written again, table by table in key order
(the most favourable order a B-tree has), into an empty file of the same schema and tuning:

* **through the driver**: read from the built file 50,000 rows at a time and written by
  ``executemany``, one transaction per chunk, as a fold in Python must hand its rows to
  SQLite; only the ``executemany`` and its commit are timed;
* **in SQL**: ``INSERT INTO ... SELECT ... ORDER BY`` the key, one statement per table, no
  Python per row (what a fold written in SQL over the stored events would pay at least),
  timed whole, the reading of the built file included.

The journal's tables (``journal_*``, keyed by the journal file, not by projection) are
counted apart: the bench's replay builds the projection that serves from its first event
and joins MIAM's journal for the first time, so it writes them; a replay under another
formula beside a serving projection finds them written.
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import Any

from miam_economies.projections.sqlite_view import CACHE_KIB, CHECKPOINT_PAGES

CHUNK = 50_000
"""Rows per ``executemany`` and per transaction through the driver: the replay's own page
of events (``REPLAY_PAGE``) writes about as many rows of its largest tables."""

JOURNAL_PREFIX = "journal_"
"""The journal's tables, counted apart (the module's docstring)."""


def _empty_copy(built: Path, into: Path) -> sqlite3.Connection:
    """A connection to a new file ``into`` holding ``built``'s tables and indexes, empty,
    tuned as the view's connections are (``projections.sqlite_view``), with ``built``
    attached read-only as ``built``. Raises ``sqlite3.Error`` (the connection closed)."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{into}{suffix}").unlink(missing_ok=True)
    db = sqlite3.connect(f"file:{into}", uri=True, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        db.execute(f"PRAGMA wal_autocheckpoint={CHECKPOINT_PAGES}")
        db.execute("ATTACH DATABASE ? AS built", (f"file:{built}?mode=ro",))
        for kind in ("table", "index"):  # an index needs its table
            for (sql,) in db.execute(
                    "SELECT sql FROM built.sqlite_master WHERE type = ? AND sql IS NOT NULL "
                    "AND name NOT LIKE 'sqlite%'", (kind,)).fetchall():
                db.execute(sql)
    except BaseException:
        db.close()
        raise
    return db


def _tables(db: sqlite3.Connection) -> list[tuple[str, str]]:
    """``(table, ORDER BY clause)`` of every table of the attached ``built`` file, each
    ordered by its primary key, or by its rowid if it declares none: an ``INSERT ...
    SELECT`` with no ``ORDER BY`` would copy raw records (SQLite's transfer optimisation),
    not insert them."""
    names = [n for (n,) in db.execute(
        "SELECT name FROM built.sqlite_master WHERE type = 'table' "
        "AND name NOT LIKE 'sqlite%' ORDER BY name")]
    tables = []
    for name in names:
        columns = db.execute(f'PRAGMA built.table_info("{name}")').fetchall()
        key = [f'"{c[1]}"' for c in sorted(columns, key=lambda c: c[5]) if c[5] > 0]
        tables.append((name, f" ORDER BY {', '.join(key or ['rowid'])}"))
    return tables


def _tally() -> dict[str, float]:
    """Empty figures: ``{"rows", "seconds", "journal_rows", "journal_seconds"}``."""
    return {"rows": 0.0, "seconds": 0.0, "journal_rows": 0.0, "journal_seconds": 0.0}


def _count(out: dict[str, float], name: str, rows: int, seconds: float) -> None:
    """Add ``rows`` rows of table ``name`` written in ``seconds`` to ``out``'s totals, and
    to its journal's part when ``name`` is one of the journal's tables."""
    out["rows"] += rows
    out["seconds"] += seconds
    if name.startswith(JOURNAL_PREFIX):
        out["journal_rows"] += rows
        out["journal_seconds"] += seconds


def _checkpointed(db: sqlite3.Connection, out: dict[str, float]) -> dict[str, float]:
    """``out`` once ``db``'s WAL is written back into its file, the checkpoint's time
    added to ``seconds`` (charged to the whole, though its last pages are mostly the
    journal's: a replay's writes end there too). Raises ``sqlite3.OperationalError`` if
    the checkpoint could not finish."""
    started = time.perf_counter()
    # main: an unqualified checkpoint would also checkpoint the read-only attached file.
    busy, _, _ = db.execute("PRAGMA main.wal_checkpoint(TRUNCATE)").fetchone()
    if busy:
        raise sqlite3.OperationalError("the scratch file's checkpoint did not finish")
    out["seconds"] += time.perf_counter() - started
    return out


def _through_driver(built: Path, into: Path) -> dict[str, float]:
    """Every table's rows written in key order through ``executemany``; returns
    ``{"rows", "seconds", "journal_rows", "journal_seconds"}`` (seconds of the writes,
    their commits and the final checkpoint only; totals, the journal's part included)."""
    out = _tally()
    with closing(_empty_copy(built, into)) as db, \
            closing(sqlite3.connect(f"file:{built}?mode=ro", uri=True)) as source:
        for name, order in _tables(db):
            rows = source.execute(f'SELECT * FROM "{name}"{order}')
            marks = ",".join("?" * len(rows.description))
            while chunk := rows.fetchmany(CHUNK):
                started = time.perf_counter()
                db.execute("BEGIN")
                db.executemany(f'INSERT INTO main."{name}" VALUES ({marks})', chunk)
                db.execute("COMMIT")
                _count(out, name, len(chunk), time.perf_counter() - started)
        return _checkpointed(db, out)


def _in_sql(built: Path, into: Path) -> dict[str, float]:
    """Every table copied in key order by ``INSERT ... SELECT``; returns ``{"rows",
    "seconds", "journal_rows", "journal_seconds"}``, as ``_through_driver``."""
    out = _tally()
    with closing(_empty_copy(built, into)) as db:
        for name, order in _tables(db):
            started = time.perf_counter()
            db.execute("BEGIN")
            copied = db.execute(
                f'INSERT INTO main."{name}" SELECT * FROM built."{name}"{order}').rowcount
            db.execute("COMMIT")
            _count(out, name, copied, time.perf_counter() - started)
        return _checkpointed(db, out)


def write_floor(built: Path, work: Path) -> dict[str, Any]:
    """The writes of the view file ``built`` (a ``projections.sqlite`` a replay has just
    built; read only), measured twice into a scratch file under ``work`` (removed after):
    ``{"driver": {...}, "sql": {...}}``, each ``{"rows", "seconds", "journal_rows",
    "journal_seconds"}`` (rows of every table and seconds, the journal's tables' part
    apart; module docstring). Raises ``sqlite3.Error`` if ``built`` is no SQLite file."""
    into = work / "write-floor.sqlite"
    try:
        return {"driver": _through_driver(built, into), "sql": _in_sql(built, into)}
    finally:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{into}{suffix}").unlink(missing_ok=True)


def floor_rows(floor: dict[str, Any], events: int, raw_read: float) -> list[list[str]]:
    """``bench.report``'s rows for ``write_floor``'s figures at a history of ``events``
    events whose raw log read ran at ``raw_read`` events/s, each as the events/s a replay
    would reach if it did only that, against the raw log read: the driver's writes alone
    (no replay through the driver passes it, however it overlaps its work), then after the
    log's read (one after the other), without the journal's rows after the read, and the
    SQL copy after the read (ADR-0182)."""
    read = events / raw_read  # seconds of the raw log read
    driver, sql = floor["driver"], floor["sql"]
    beside = driver["seconds"] - driver["journal_seconds"]

    def row(measure: str, seconds: float) -> list[str]:
        return [measure, f"{seconds:.1f} s, {events / seconds:,.0f} ev/s",
                f"{raw_read:,.0f} raw log read", f"{events / seconds / raw_read:.2f}",
                "stated"]

    return [row(f"replay's floor: the {driver['rows']:,.0f} rows it built written in key "
                "order into an empty file (executemany, no read, no fold)",
                driver["seconds"]),
            row("  ... then with the log read before them", driver["seconds"] + read),
            row(f"  ... without the journal's {driver['journal_rows']:,.0f} rows (a replay "
                "beside the serving projection), with the log read", beside + read),
            row("  ... copied in SQL instead (INSERT ... SELECT, no Python per row), with "
                "the log read", sql["seconds"] + read)]
