"""A data directory that cannot be written, said as such (issue 33; ADR-0140).

Opening the services creates the data directory, the SQLite store and projections and
their ``-wal``/``-shm`` files. When the directory or a file is not writable (a read-only
copy, another user's files, a path through a file), the OS's ``PermissionError`` or, from
inside the event-sourcing library's connection pool, SQLite's ``OperationalError``
("attempt to write a readonly database", no path) reached the host. ``writable`` turns
both into one ``DataDirectoryError`` naming the directory and the file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from miam_economies.domain.errors import MiamEconomiesError

REFUSALS = ("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM")
"""SQLite's error names (and the extended ones they begin) for a file it may not write."""


class DataDirectoryError(MiamEconomiesError, OSError):
    """The data directory, or a file in it, cannot be created or written by this process.
    The message names the directory, the file and the OS's or SQLite's reason; still an
    ``OSError``, as the OS's own error was."""


def _sqlite_refusal(exc: BaseException) -> sqlite3.Error | None:
    # The library may raise its own error from SQLite's (or from a pool error raised
    # while handling it): the refusal is somewhere down the chain.
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return None
        name = str(getattr(seen, "sqlite_errorname", ""))
        if isinstance(seen, sqlite3.Error) and name.startswith(REFUSALS):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def unwritable(directory: Path, file: Path | str | None, reason: str) -> str:
    """The message of a ``DataDirectoryError``: ``file`` (None or the directory itself:
    creating the directory) could not be written for ``reason``."""
    where = Path(directory).absolute()
    what = Path(file).absolute() if file is not None else where
    told = f"creating it: {reason}" if what == where else f"{what}: {reason}"
    return (f"miam-economies cannot write its data directory {where} ({told}): the store, "
            f"the projections and SQLite's -wal and -shm files beside them must be "
            f"writable by this process. Mend: make the directory and its files writable by "
            f"this process's user, or give another directory (Settings(data=...), --data)")


@contextmanager
def writable(directory: Path, file: Path | None = None) -> Iterator[None]:
    """Run the block that creates or opens ``file`` (None: the directory itself) under
    ``directory``; raise ``DataDirectoryError`` for an ``OSError`` it raises, or for
    SQLite's refusal to write or open a file. Anything else passes as it was."""
    try:
        yield
    except DataDirectoryError:
        raise
    except OSError as exc:
        raise DataDirectoryError(unwritable(directory, exc.filename or file,
                                            exc.strerror or str(exc))) from exc
    except Exception as exc:
        refusal = _sqlite_refusal(exc)
        if refusal is None:
            raise
        raise DataDirectoryError(unwritable(directory, file, str(refusal))) from exc
