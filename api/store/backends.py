"""Where the events and the projections live: an SQLite file, or a PostgreSQL database.

``--database-url`` (env ``MIAM_ECONOMIES_DATABASE_URL``) names the backend (ADR-0031):

* ``sqlite:///PATH`` (SQLAlchemy's form: ``sqlite:///rel/path``, ``sqlite:////abs/path``):
  the event store in the file ``PATH``, the projections in ``projections.sqlite`` beside
  it. The default is ``sqlite:///DATA/economies.sqlite``.
* ``postgresql://USER[:PASSWORD]@HOST[:PORT]/DBNAME`` (or ``postgres://``): the event store
  and the projections in that database, through ``eventsourcing.postgres``.

Only this module knows how a URL maps to the library's settings; nothing reads the
environment here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

SQLITE = "sqlite"
POSTGRESQL = "postgresql"

POOL_SIZE = 4
"""Connections each process keeps to PostgreSQL for its event store (per worker)."""

RECORDER_TOPICS = {
    SQLITE: "miam_economies.api.store.sqlite:SQLiteEconomiesRecorder",
    POSTGRESQL: "miam_economies.api.store.postgres:PostgresEconomiesRecorder",
}
"""The event store's recorder class of each backend, as the library's factory resolves it
(``APPLICATION_RECORDER_TOPIC``): named, not imported, so PostgreSQL's driver is loaded
only for a PostgreSQL URL (ADR-0043)."""


@dataclass(frozen=True)
class Database:
    """A parsed database URL: ``kind`` (``SQLITE`` or ``POSTGRESQL``); ``path`` for SQLite
    (the event store's file); ``host``, ``port``, ``user``, ``password``, ``dbname`` for
    PostgreSQL."""

    kind: str
    path: Path | None = None
    host: str = "127.0.0.1"
    port: int = 5432
    user: str = "postgres"
    password: str = ""
    dbname: str = ""

    @classmethod
    def parse(cls, url: str) -> Database:
        """Parse ``url``; raises ``ValueError`` naming what is wrong (another scheme, no
        path, no database name, a bad port)."""
        if url.startswith("sqlite:///"):
            path = url.removeprefix("sqlite:///")
            if not path or path.endswith("/"):
                raise ValueError(f"{url!r}: name the event store's file, as "
                                 "sqlite:///logs/mcp/economies.sqlite")
            return cls(SQLITE, path=Path(path))
        parts = urlsplit(url)
        if parts.scheme not in ("postgresql", "postgres"):
            raise ValueError(f"{redact(url)!r}: the database URL must start with sqlite:/// "
                             "or postgresql://")
        dbname = unquote(parts.path.lstrip("/"))
        if not dbname or "/" in dbname:
            raise ValueError(f"{redact(url)!r}: name the database, as "
                             "postgresql://user@127.0.0.1:5432/miam")
        try:
            port = parts.port or 5432
        except ValueError:
            raise ValueError(f"{redact(url)!r}: the port is not a number") from None
        return cls(POSTGRESQL, host=parts.hostname or "127.0.0.1", port=port,
                   user=unquote(parts.username or "postgres"),
                   password=unquote(parts.password or ""), dbname=dbname)

    @property
    def is_postgres(self) -> bool:
        """Whether the events live in PostgreSQL."""
        return self.kind == POSTGRESQL

    @property
    def projections_path(self) -> Path:
        """SQLite only: the projections' file, ``projections.sqlite`` beside the store."""
        assert self.path is not None, "PostgreSQL keeps the projections in the database"
        return self.path.with_name("projections.sqlite")

    def exists(self) -> bool:
        """Whether a store may be there without creating one: the SQLite file exists; a
        PostgreSQL database is assumed to (its tables are created on first open)."""
        return self.is_postgres or (self.path is not None and self.path.exists())

    def store_env(self, lock_timeout: int = 5, *, create_table: bool = True
                  ) -> dict[str, str]:
        """The ``eventsourcing`` settings of the event store (``EventStore(env=...)``).

        Always names the persistence module: without it the library silently keeps events
        in memory (NOTES-eventsourcing, "Persistence settings"). ``lock_timeout``: seconds
        to wait for the store's write lock (SQLite's busy timeout; PostgreSQL's
        ``lock_timeout`` on the events table's lock), and on PostgreSQL for a connection
        (the library's ``CONNECT_TIMEOUT`` is its pool's wait; ``postgres.bounded_pool``
        bounds the rest, ADR-0152); ``create_table``: create the tables if missing (False
        opens read-only in intent: nothing is created)."""
        env = {"CREATE_TABLE": "y" if create_table else "n",
               "APPLICATION_RECORDER_TOPIC": RECORDER_TOPICS[self.kind]}
        if not self.is_postgres:
            return {**env, "PERSISTENCE_MODULE": "eventsourcing.sqlite",
                    "SQLITE_DBNAME": str(self.path), "SQLITE_LOCK_TIMEOUT": str(lock_timeout)}
        return {**env, "PERSISTENCE_MODULE": "eventsourcing.postgres",
                "POSTGRES_DBNAME": self.dbname, "POSTGRES_HOST": self.host,
                "POSTGRES_PORT": str(self.port), "POSTGRES_USER": self.user,
                "POSTGRES_PASSWORD": self.password,
                "POSTGRES_LOCK_TIMEOUT": str(lock_timeout),
                "POSTGRES_POOL_SIZE": str(POOL_SIZE),
                "POSTGRES_CONNECT_TIMEOUT": str(lock_timeout)}

    def __str__(self) -> str:
        if not self.is_postgres:
            return f"sqlite:///{self.path}"
        return f"postgresql://{self.user}@{self.host}:{self.port}/{self.dbname}"


def redact(url: str) -> str:
    """``url`` without its password, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()
