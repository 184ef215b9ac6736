"""Settings of the service, and the bearer token's resolution (SPEC, "Interfaces").

The CLI reads flags and ``MIAM_ECONOMIES_*`` environment variables (click's ``envvar``)
and builds one frozen ``Settings``; nothing below ``api/`` reads the environment.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import zoneinfo
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfoNotFoundError

import tzlocal

from miam_economies.api.service.data_directory import writable
from miam_economies.api.store.backends import SQLITE, Database
from miam_economies.domain.errors import MiamEconomiesError

DEFAULT_DATA = Path("logs/mcp")
"""MIAM's layout: the data directory, relative to the working directory."""

DEFAULT_MAX_BODY = 1_048_576
"""Bytes: 1 MiB; a body of exactly this size is accepted, one byte more is a 413."""


@dataclass(frozen=True)
class Settings:
    """Everything the app needs, resolved.

    ``data``: directory of the store (``economies.sqlite``), the projections
    (``projections.sqlite``) and the token file, given as a ``Path`` or a ``str`` (as
    every read function takes it; issue 33) and kept as a ``Path``; ``token``: the
    standalone app's bearer token (None when a host app's own auth guards the routes, or
    for a command);
    ``max_body``: request body limit, bytes; ``lock_timeout``: SQLite busy timeout,
    seconds; ``poll_interval``: seconds between the runner's looks at the log when not
    woken; ``attendre_max``: seconds a ``?attendre=1`` read waits at most;
    ``body_timeout``: seconds a request body may take to arrive (then 408);
    ``fuseau``: IANA time zone the days are cut in (None: the one the projection was
    built in, or the machine's for a new one); ``journal``: MIAM's
    ``delegations.jsonl`` (None: ``data/delegations.jsonl``, the contract's layout);
    ``metrics_public``: serve ``GET /metrics`` without the bearer token (ADR-0023);
    ``database_url``: where the events and projections live (``api.store.backends``; None:
    ``sqlite:///data/economies.sqlite``, ADR-0031); ``fold_in_thread``: on SQLite, fold
    the projection in a thread of this process (MIAM's embedded use); False when another
    process folds it (``serve``'s projector process, ADR-0115); ``fold_stall_after``:
    seconds the fold may go without advancing while events wait before ``/healthz`` says
    it stopped (ADR-0136).
    """

    data: Path
    token: str | None = None
    max_body: int = DEFAULT_MAX_BODY
    lock_timeout: int = 5
    poll_interval: float = 1.0
    attendre_max: float = 5.0
    body_timeout: float = 30.0
    fuseau: str | None = None
    journal: Path | None = None
    metrics_public: bool = False
    database_url: str | None = None
    fold_in_thread: bool = True
    fold_stall_after: float = 60.0

    if TYPE_CHECKING:  # the generated __init__ as type checkers should see it: data a str too
        def __init__(self, data: Path | str, token: str | None = ..., max_body: int = ...,
                     lock_timeout: int = ..., poll_interval: float = ...,
                     attendre_max: float = ..., body_timeout: float = ...,
                     fuseau: str | None = ..., journal: Path | None = ...,
                     metrics_public: bool = ..., database_url: str | None = ...,
                     fold_in_thread: bool = ..., fold_stall_after: float = ...) -> None: ...

    def __post_init__(self) -> None:
        """``data`` kept as a ``Path``, whichever of the two it was given as."""
        object.__setattr__(self, "data", Path(self.data))  # frozen: set once, here

    @property
    def journal_path(self) -> Path:
        """MIAM's journal file, joined by ``demande_id`` (issue 3)."""
        return self.journal if self.journal is not None else self.data / "delegations.jsonl"

    @property
    def database(self) -> Database:
        """The backend of the events and projections (``api.store.backends.Database``). Raises
        ``ValueError`` for a malformed ``database_url``."""
        if self.database_url is None:
            return Database(SQLITE, path=self.data / "economies.sqlite")
        return Database.parse(self.database_url)

    @property
    def projections_path(self) -> Path:
        """The projections' SQLite file (views and tracking positions; SQLite only)."""
        return self.database.projections_path


class UnknownZone(MiamEconomiesError, ZoneInfoNotFoundError):
    """``TZ`` names no zone of the zone database (a POSIX rule such as ``CET-1CEST``, a
    typo): refused rather than replaced by another zone (issue 21.4)."""

    def __str__(self) -> str:
        return str(self.args[0])  # KeyError's own would quote the message


def not_a_zone(value: str) -> str:
    """The message for a zone name the zone database does not know (``--fuseau``'s and
    ``TZ``'s)."""
    return f"{value!r} is not an IANA time zone (such as Europe/Paris)"


def _tz_zone(tz: str) -> str:
    """The zone name ``TZ`` gives: a name (``PST8PDT``, ``US/East-Indiana``), the same
    after a ``:``, or a path into the zone database (``/usr/share/zoneinfo/Asia/Tokyo``).
    Raises ``UnknownZone`` when the zone database knows none."""
    name = tz.removeprefix(":")
    if os.path.isabs(name):
        real = Path(os.path.realpath(name))
        for root in map(Path, zoneinfo.TZPATH):
            if real.is_relative_to(root):
                name = real.relative_to(root).as_posix()
                break
    try:
        zoneinfo.ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise UnknownZone(f"TZ: {not_a_zone(tz)}; set TZ to a zone name, or choose the "
                          "zone with --fuseau or MIAM_ECONOMIES_TZ") from None
    return name


def machine_fuseau() -> str:
    """The machine's IANA time zone name (``Europe/Paris``): ``TZ``'s when it is set, any
    name the zone database knows (``_tz_zone``), else the system's settings (tzlocal);
    ``UTC`` when none can be found. Raises ``UnknownZone`` for a ``TZ`` the zone database
    does not know (issue 21.4)."""
    tz = os.environ.get("TZ")
    if tz:
        # Read here at each call: tzlocal takes only names of its Windows table from TZ
        # (not PST8PDT, US/East-Indiana...), falls back to the system's zone silently, and
        # caches its answer for the process.
        return _tz_zone(tz)
    try:
        return tzlocal.get_localzone_name() or "UTC"
    except (OSError, LookupError, ValueError):
        return "UTC"


class TokenRefused(MiamEconomiesError, ValueError):
    """An empty or blank bearer token, in ``MIAM_ECONOMIES_TOKEN`` or the token file, or a
    token file that cannot be read: ``serve`` refuses to start, in one line saying how to
    mend it (issue 34.6). A blank token would let no client in, and ``Bearer `` with
    nothing after it is no secret."""


def resolve_token(data: Path, from_env: str | None) -> tuple[str, Path | None, bool]:
    """The bearer token, the token file's path when it came from one, and whether that
    file was created now.

    ``from_env`` (``MIAM_ECONOMIES_TOKEN``; None when unset) wins. Otherwise
    ``data/token`` is read, or created first with a random value and mode 0600 (SPEC,
    "Interfaces"). Raises ``TokenRefused`` for a blank ``from_env``, a token file that
    holds only whitespace or cannot be read, and ``DataDirectoryError`` (an ``OSError``)
    if the data directory or the file cannot be created.
    """
    if from_env is not None:
        if not from_env.strip():
            raise TokenRefused("MIAM_ECONOMIES_TOKEN is set but blank: set it to the token, "
                               f"or unset it to use the token file {(data / 'token').resolve()}")
        return from_env, None, False
    path = data / "token"
    fd: int | None = None
    with writable(data, path):  # DataDirectoryError names the directory (ADR-0140)
        data.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            # O_EXCL: two processes starting at once never overwrite each other's token.
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    if fd is None:
        try:
            if path.stat().st_mode & 0o077:
                path.chmod(0o600)  # a token file made readable by others: make it private
            token = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            raise TokenRefused(f"the token file {path.resolve()} cannot be read ({why}): "
                               "make it a readable file holding the token, or delete it "
                               "and a new one is made at the next start") from None
        if not token:
            raise TokenRefused(f"the token file {path.resolve()} holds no token (empty or "
                               "blank): write the token in it, or delete it and a new one "
                               "is made at the next start") from None
        return token, path, False
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        token = secrets.token_urlsafe(32)
        f.write(token + "\n")
    return token, path, True
