"""Claude Code's transcripts read from disk into observations of replies (SPEC, "Claude
Code's own record: relevés, sessions, and the share saved", "What is read" and "Import").

Given PATHs (files, or folders searched recursively for ``*.jsonl``), or none (the
``projects`` folders of Claude Code's data folders), ``read_transcripts`` checks that each
PATH exists before reading anything, then streams the files a line at a time: each line
is handed to ``domain.releves_lines.parse_line`` with its file's agent id, and comes out
an ``Observation`` or is counted as ignored. A file that cannot be read is named and
skipped. Read-only: files are opened for reading, nothing is written anywhere, and
memory is bounded by the longest line read (``MAX_LINE``), not by a file's size.
Storing the observations, and merging them into replies, is the caller's.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from miam_economies.domain.errors import MiamEconomiesError
from miam_economies.domain.releves import Observation
from miam_economies.domain.releves_lines import (
    NOT_A_REPLY,
    NOT_JSON,
    Ignored,
    agent_of_file,
    parse_line,
    surely_not_a_reply,
)

MAX_LINE = 16 * 1024 * 1024
"""Bytes a line may hold (16 MiB). A longer line is skipped a MiB at a time, never held
whole, and counted as ignored: a reply line holds one content block of at most a reply's
output (tens of KiB); only tool results and pasted images run to MiBs, on lines that are
not replies."""

_CHUNK = 1 << 20


class TranscriptPathMissing(MiamEconomiesError, FileNotFoundError):
    """A PATH given to ``read_transcripts`` does not exist (a broken link included).
    Raised before any file is read; the message names it, ``path`` holds it."""

    def __init__(self, path: str) -> None:
        super().__init__(f"no such file or folder: {path}")
        self.path = path


@dataclass(frozen=True)
class UnreadableFile:
    """A file skipped: ``path`` (as found) and ``reason`` (the system's words). Lines read
    from it before the fault stay read and counted."""

    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


@dataclass
class TranscriptCounts:
    """What a reading has seen so far: ``fichiers`` files read to their end, ``lignes``
    lines read (every line, a blank one and a last line without its end included),
    ``ignorees`` those of them that are no observation (``parse_line``'s ``Ignored``,
    an over-long line, a line that is not UTF-8), ``unreadable`` the files skipped (in
    the order met). Replies, new observations and doublons are the importer's counts."""

    fichiers: int = 0
    lignes: int = 0
    ignorees: int = 0
    unreadable: list[UnreadableFile] = field(default_factory=list)

    @property
    def observations(self) -> int:
        """The lines read that were observations of a reply: ``lignes - ignorees``."""
        return self.lignes - self.ignorees


def default_roots(environ: Mapping[str, str] | None = None,
                  home: Path | None = None) -> list[Path]:
    """The folders read when no PATH is given (SPEC, "Import"): the ``projects`` folder
    of each of ``$CLAUDE_CONFIG_DIR``'s comma-separated folders when it is set (and not
    blank), else of ``~/.claude`` and ``~/.config/claude``; only those that exist, in
    that order. ``environ``: the environment (``os.environ`` by default); ``home``: the
    home folder (``Path.home()`` by default)."""
    environ = os.environ if environ is None else environ
    configured = [part.strip() for part in environ.get("CLAUDE_CONFIG_DIR", "").split(",")]
    configured = [part for part in configured if part]
    if configured:
        bases = [Path(part).expanduser() for part in configured]
    else:
        home = Path.home() if home is None else home
        bases = [home / ".claude", home / ".config" / "claude"]
    return [base / "projects" for base in bases if (base / "projects").is_dir()]


class TranscriptReading:
    """The observations of the transcripts under ``roots``, streamed, with their counts.

    Iterate it once: each file is read in turn (a root that is a file, then the
    ``*.jsonl`` files of a folder and its subfolders in name order; a file reached twice
    is read once), and ``counts`` grows as the lines go by; it is complete when the
    iteration ends. Links to files are read; links to folders are not followed. Anything
    that is not a regular file (a FIFO, a device) is unreadable, never opened.
    """

    def __init__(self, roots: Sequence[Path]) -> None:
        self.roots: tuple[Path, ...] = tuple(roots)
        self.counts = TranscriptCounts()

    def __iter__(self) -> Iterator[Observation]:
        seen: set[str] = set()
        for path in self._files():
            real = os.path.realpath(path)
            if real in seen:
                continue
            seen.add(real)
            yield from self._read(path)

    def _files(self) -> Iterator[Path]:
        """Every file to read, in order; a folder that cannot be listed is unreadable."""
        for root in self.roots:
            if not root.is_dir():
                yield root
                continue

            def unlistable(error: OSError) -> None:
                self.counts.unreadable.append(
                    UnreadableFile(str(error.filename), error.strerror or str(error)))

            for folder, subfolders, names in os.walk(root, onerror=unlistable):
                subfolders.sort()
                for name in sorted(names):
                    if name.endswith(".jsonl"):
                        yield Path(folder, name)

    def _read(self, path: Path) -> Iterator[Observation]:
        """The observations of one file, counting its lines; an unreadable file is named
        in ``counts.unreadable`` and left."""
        agent = agent_of_file(path.absolute().parts)
        try:
            if not stat.S_ISREG(os.stat(path).st_mode):
                raise OSError(0, "not a regular file")
            with path.open("rb") as handle:
                for raw in _lines(handle):
                    self.counts.lignes += 1
                    outcome = _outcome(raw, agent)
                    if isinstance(outcome, Ignored):
                        self.counts.ignorees += 1
                    else:
                        yield outcome
        except OSError as error:
            self.counts.unreadable.append(UnreadableFile(str(path),
                                                         error.strerror or str(error)))
            return
        self.counts.fichiers += 1


def _outcome(raw: bytes | None, agent: str | None) -> Observation | Ignored:
    """What one line read is: ``parse_line``'s outcome, ``NOT_A_REPLY`` without decoding
    for a line that cannot be a reply, ``NOT_JSON`` for an over-long line (None) or one
    that is not UTF-8 (a line cut mid-character is one)."""
    if raw is None:
        return NOT_JSON
    if surely_not_a_reply(raw):
        return NOT_A_REPLY
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return NOT_JSON
    return parse_line(text, agent)


def _lines(handle: BinaryIO) -> Iterator[bytes | None]:
    """Each line of ``handle`` with its end, a last line without one included; None for
    a line over ``MAX_LINE`` bytes, skipped a MiB at a time."""
    while raw := handle.readline(MAX_LINE + 1):
        if len(raw) > MAX_LINE and not raw.endswith(b"\n"):
            while (rest := handle.readline(_CHUNK)) and not rest.endswith(b"\n"):
                pass
            yield None
            continue
        yield raw


def read_transcripts(paths: Sequence[str | os.PathLike[str]] = (), *,
                     environ: Mapping[str, str] | None = None,
                     home: Path | None = None) -> TranscriptReading:
    """A reading of Claude Code's transcripts (iterate it for the observations; its
    ``counts`` for files, lines, ignored lines and unreadable files).

    ``paths``: files (read whatever their name) or folders (searched recursively for
    ``*.jsonl``); none: ``default_roots(environ, home)``, which may be no folder at all
    (then nothing is read). Raises ``TranscriptPathMissing`` for the first PATH that
    does not exist, before anything is read. Source: SPEC, "Claude Code's own record:
    relevés, sessions, and the share saved", "Import".
    """
    if not paths:
        return TranscriptReading(default_roots(environ, home))
    roots = [Path(path) for path in paths]
    for root in roots:
        if not root.exists():
            raise TranscriptPathMissing(str(root))
    return TranscriptReading(roots)
