"""The classement's window sums stay exact where SQLite's ``sum()`` overflows (ADR-0051,
ADR-0170): two stored integers each past 2^62 add past 2^63, SQLite raises "integer
overflow", its dialect says so (``SqlDialect.overflowed``) and Python adds the rows. A
real SQLite file with the view's own tables; the rows written directly, as a fold that
has gathered squares that large leaves them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from miam_economies.projections.sql_samples import CLIENT_WIDE, SAMPLE_SUMS
from miam_economies.projections.sql_schema import view_tables
from miam_economies.projections.sql_window import recent_samples, samples_in_window
from miam_economies.projections.sqlite_view import SQLITE

BIG = 2**62 + 12_345
"""A square of some 2.1 billion tokens: an integer SQLite keeps, two of which overflow."""


DAY = (1, 50_000, 0, 0, BIG, 0, 0, BIG, 1, 1, BIG, 50_000, BIG, 0, 0, 1, 50_000, BIG)
"""One day's sums of each group: one demande of evites 50,000 (its squares set to BIG)."""


def store(path: Path) -> sqlite3.Connection:
    """The view's tables in a file, and one client's and one preset's two days, each day's
    evites_squared BIG."""
    connection = sqlite3.connect(path)
    for statement in view_tables("TEXT", "INTEGER", "", "INTEGER", " WITHOUT ROWID"):
        connection.execute(statement)
    columns = ", ".join(SAMPLE_SUMS)
    marks = ", ".join("?" for _ in SAMPLE_SUMS)
    for champ, valeur in ((CLIENT_WIDE, ""), ("preset", "rapide")):
        for jour in ("2026-11-01", "2026-11-02"):
            sums = DAY
            connection.execute(
                f"INSERT INTO bilan_echantillons_jours (projection, champ, valeur, client, "
                f"jour, {columns}) VALUES (?, ?, ?, ?, ?, {marks})",
                ("p", champ, valeur, "claude-code", jour, *sums))
    connection.commit()
    return connection


def test_sums_past_2_63_are_added_exactly_in_python(tmp_path: Path) -> None:
    connection = store(tmp_path / "view.sqlite")
    with pytest.raises(sqlite3.OperationalError, match="overflow"):
        connection.execute("SELECT sum(evites_squared) FROM bilan_echantillons_jours")
    c = connection.cursor()
    got = samples_in_window(c, SQLITE, "p", "preset", "2026-11-01", None)
    assert got["rapide"][4] == 2 * BIG and got["rapide"][:4] == (2, 100_000, 0, 0)
    clients = samples_in_window(c, SQLITE, "p", None, None, "2026-11-02")
    assert clients["claude-code"][7] == 2 * BIG
    # The recent period (the latest day: a quarter of 2 demandes) sums one day: no
    # overflow there; the whole window does overflow and is exact.
    assert recent_samples(c, SQLITE, "p", "preset", {"rapide": 2}, None, None) == {
        "rapide": ("2026-11-02", DAY)}


def test_an_error_other_than_overflow_is_raised(tmp_path: Path) -> None:
    connection = store(tmp_path / "view.sqlite")
    connection.execute("DROP TABLE bilan_echantillons_jours")
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        samples_in_window(connection.cursor(), SQLITE, "p", "preset", None, None)
