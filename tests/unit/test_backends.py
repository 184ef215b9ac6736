"""Database URLs: what each backend's URL means, and the ones refused (ADR-0031)."""

from __future__ import annotations

from pathlib import Path

import pytest

from miam_economies.api.service.settings import Settings
from miam_economies.api.store.backends import Database, redact


def test_the_default_is_the_sqlite_file_in_the_data_directory() -> None:
    database = Settings(data=Path("logs/mcp")).database
    assert (database.kind, database.path) == ("sqlite", Path("logs/mcp/economies.sqlite"))
    assert database.projections_path == Path("logs/mcp/projections.sqlite")


def test_sqlite_urls_take_relative_and_absolute_paths() -> None:
    assert Database.parse("sqlite:///a/b.sqlite").path == Path("a/b.sqlite")
    assert Database.parse("sqlite:////srv/b.sqlite").path == Path("/srv/b.sqlite")


def test_a_postgresql_url_gives_the_librarys_settings() -> None:
    database = Database.parse("postgresql://miam:s%40cret@db.local:6543/hub")
    env = database.store_env(lock_timeout=3)
    assert env["PERSISTENCE_MODULE"] == "eventsourcing.postgres"
    assert (env["POSTGRES_HOST"], env["POSTGRES_PORT"], env["POSTGRES_USER"],
            env["POSTGRES_PASSWORD"], env["POSTGRES_DBNAME"], env["POSTGRES_LOCK_TIMEOUT"]) \
        == ("db.local", "6543", "miam", "s@cret", "hub", "3")
    assert "s@cret" not in str(database)
    assert redact("postgresql://miam:pw@h/db") == "postgresql://miam:***@h/db"


@pytest.mark.parametrize("url", [
    "mysql://u@h/db", "sqlite://relative.sqlite", "sqlite:///", "sqlite:///dir/",
    "postgresql://u@h", "postgresql://u@h:port/db", "economies.sqlite",
])
def test_other_urls_are_refused_with_a_reason(url: str) -> None:
    with pytest.raises(ValueError, match="sqlite:///|database|port|file"):
        Database.parse(url)
