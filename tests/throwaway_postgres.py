"""The PostgreSQL server the suite runs against (ADR-0160): the machine's when one answers,
else a throwaway one of the suite's own, started for the run and stopped after it.

``MIAM_TEST_POSTGRES`` decides:

- unset (or empty): ``DEFAULT`` (``postgresql://postgres@127.0.0.1:5432/test``) when a
  server answers there; otherwise a throwaway server, and the suite runs against it;
- ``throwaway``: a throwaway server, whatever answers at ``DEFAULT``;
- any other value: that URL, as given; nothing is started, and when it does not answer the
  PostgreSQL tests fail, loudly, as they always did (CI sets it: ``.ci/run``).

A throwaway server is ``initdb`` into a new temporary folder (trust auth, user
``postgres``, UTF8, database ``test``) and ``postgres`` on a free port of 127.0.0.1,
without durability (``fsync=off``: its data dies with it). Its binaries are the system's
(``pg_config --bindir``, Debian's ``/usr/lib/postgresql/*/bin``, ``initdb`` on ``PATH``),
else those the ``pgserver`` wheel bundles (in the ``test`` extra where it has wheels).
PostgreSQL refuses to run as root: under root both run as the user ``postgres`` (else
``nobody``), which then owns the temporary folder. The conftest starts it once, in the
controlling process of the run (xdist's workers read its URL from the environment), and
stops it at the end; a run killed with SIGKILL leaves it running, in a folder named
``miam-throwaway-pg-*``.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import psycopg

DEFAULT = "postgresql://postgres@127.0.0.1:5432/test"
"""Where the suite looks for the machine's server (``.ci/run`` requires one there)."""
THROWAWAY = "throwaway"
"""The value of ``MIAM_TEST_POSTGRES`` that asks for a throwaway server in any case."""
START_TIMEOUT = 60.0
"""Seconds a throwaway server may take to accept connections."""


def answers(url: str, timeout: int = 3) -> bool:
    """Whether a PostgreSQL server accepts a connection to ``url`` within ``timeout``
    seconds (a refused or unknown database counts as not answering)."""
    try:
        with psycopg.connect(url, connect_timeout=timeout, autocommit=True) as db:
            db.execute("SELECT 1")
    except psycopg.Error:
        return False
    return True


def _has_server(bindir: Path) -> bool:
    return all(os.access(bindir / name, os.X_OK) for name in ("initdb", "postgres"))


def _pg_config_bindir() -> Path | None:
    if shutil.which("pg_config") is None:
        return None
    done = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True)
    return Path(done.stdout.strip()) if done.returncode == 0 else None


def pgserver_bindir() -> Path | None:
    """The binaries the ``pgserver`` wheel bundles, when it is installed (found without
    importing it)."""
    spec = find_spec("pgserver")
    if spec is None or spec.origin is None:
        return None
    bindir = Path(spec.origin).parent / "pginstall" / "bin"
    return bindir if _has_server(bindir) else None


def system_bindir() -> Path | None:
    """The folder of the system's ``initdb`` and ``postgres``, or None: ``pg_config
    --bindir``, then Debian's ``/usr/lib/postgresql/<newest>/bin``, then ``initdb`` on
    ``PATH`` (Homebrew, Postgres.app)."""
    candidates = [_pg_config_bindir()]
    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"),
                         key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
                         reverse=True)
    initdb = shutil.which("initdb")
    candidates.append(Path(initdb).resolve().parent if initdb else None)
    return next((c for c in candidates if c is not None and _has_server(c)), None)


def find_bindir() -> Path | None:
    """The binaries a throwaway server runs: the system's, else ``pgserver``'s, else
    None."""
    return system_bindir() or pgserver_bindir()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _unprivileged_user() -> pwd.struct_passwd | None:
    # PostgreSQL refuses root; the Debian package's user, else the one every system has.
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise RuntimeError("running as root, and neither user postgres nor nobody exists to "
                       "run a throwaway PostgreSQL server")


@dataclass
class ThrowawayPostgres:
    """A PostgreSQL server of the suite's own over a temporary folder: ``start()`` makes
    it and returns the URL of its database ``test``, ``stop()`` stops it and removes the
    folder. ``bindir`` holds ``initdb`` and ``postgres``."""

    bindir: Path
    folder: Path | None = None
    url: str | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def _as_user(self) -> dict[str, Any]:
        user = _unprivileged_user()
        if user is None:
            return {}
        assert self.folder is not None
        os.chown(self.folder, user.pw_uid, user.pw_gid)  # initdb makes data/ inside it
        return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}

    def start(self) -> str:
        """Make the cluster, start the server, create database ``test``; its URL. Raises
        RuntimeError, with the server's log, when it does not come up; stopped and removed
        then, whatever went wrong."""
        self.folder = Path(tempfile.mkdtemp(prefix="miam-throwaway-pg-"))
        try:
            self.url = self._start(self.folder)
        except BaseException:
            self.stop()
            raise
        return self.url

    def _reachable(self, folder: Path, as_user: dict[str, Any]) -> Path:
        """``bindir``, or, when the user the server runs as cannot execute it (root's
        clone in a folder of mode 0700, such as ``mktemp -d``'s, holding pgserver's
        binaries), a copy of its installation in ``folder``, owned by that user: the
        binaries find their libraries relative to themselves."""
        if not as_user:
            return self.bindir
        try:
            subprocess.run([str(self.bindir / "initdb"), "--version"], check=True,
                           capture_output=True, **as_user)
            return self.bindir
        except PermissionError:
            pass
        # pgserver's layout: site-packages/pgserver/pginstall/bin, whose RPATH is
        # $ORIGIN/../../../pgserver.libs (auditwheel's): both copied, as they lie.
        install = self.bindir.parent
        site = install.parent.parent
        copy = folder / "site"
        shutil.copytree(install, copy / install.relative_to(site), symlinks=True,
                        ignore=shutil.ignore_patterns("include"))
        libs = site / f"{install.parent.name}.libs"
        if libs.is_dir():
            shutil.copytree(libs, copy / libs.name, symlinks=True)
        for path in (copy, *copy.rglob("*")):
            os.chown(path, as_user["user"], as_user["group"], follow_symlinks=False)
        return copy / self.bindir.relative_to(site)

    def _start(self, folder: Path) -> str:
        data, log = folder / "data", folder / "postgres.log"
        as_user = self._as_user()
        bindir = self._reachable(folder, as_user)
        # --no-sync: nothing of it needs to survive a crash of the machine.
        made = subprocess.run(
            [str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust",
             "-E", "UTF8", "--no-locale", "--no-sync"],
            cwd=folder, capture_output=True, text=True, **as_user)
        if made.returncode != 0:
            raise RuntimeError(f"initdb failed ({self.bindir}):\n{made.stdout}{made.stderr}")
        port = _free_port()
        with open(log, "ab") as out:
            self.process = subprocess.Popen(
                [str(bindir / "postgres"), "-D", str(data), "-p", str(port),
                 "-c", "listen_addresses=127.0.0.1",
                 "-c", f"unix_socket_directories={folder}",
                 "-c", "fsync=off", "-c", "synchronous_commit=off",
                 "-c", "full_page_writes=off"],
                cwd=folder, stdout=out, stderr=subprocess.STDOUT,
                # Its own session: a Ctrl-C of the run reaches pytest only, which stops
                # it last (stop()), once the tests have dropped their databases.
                start_new_session=True, **as_user)
        admin = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        deadline = time.monotonic() + START_TIMEOUT
        while not answers(admin, timeout=1):
            if self.process.poll() is not None or time.monotonic() > deadline:
                said = log.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"the throwaway PostgreSQL server ({self.bindir}) did "
                                   f"not start:\n{said}")
            time.sleep(0.1)  # the server is still starting: nothing to wait on
        with psycopg.connect(admin, autocommit=True) as db:
            db.execute("CREATE DATABASE test")
        return f"postgresql://postgres@127.0.0.1:{port}/test"

    def stop(self) -> None:
        """Stop the server (fast shutdown, then SIGKILL after 30 s) and remove its folder;
        harmless when it is not running."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # fast shutdown: clients disconnected
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None


def choose(environ: Mapping[str, str],
           default: str = DEFAULT) -> tuple[str, ThrowawayPostgres | None]:
    """The URL the suite's PostgreSQL tests use, from ``MIAM_TEST_POSTGRES`` in
    ``environ`` as the module says, and the throwaway server started for it (None when the
    URL is the machine's or the user's). ``default`` is where the machine's server is
    looked for. Raises RuntimeError naming what to install when a throwaway server is
    needed and no binaries are found."""
    wanted = environ.get("MIAM_TEST_POSTGRES", "")
    if wanted not in ("", THROWAWAY):
        return wanted, None
    if wanted == "" and answers(default):
        return default, None
    bindir = find_bindir()
    if bindir is None:
        raise RuntimeError(
            f"no PostgreSQL server answers at {default} and no PostgreSQL binaries were "
            "found for a throwaway one (pg_config --bindir, /usr/lib/postgresql/*/bin, "
            "initdb on PATH, or the pgserver wheel of the test extra, which has wheels for "
            "CPython 3.11 and 3.12 on Linux x86_64 and macOS): install PostgreSQL's server "
            "package, or set MIAM_TEST_POSTGRES to a server's URL")
    server = ThrowawayPostgres(bindir)
    return server.start(), server
