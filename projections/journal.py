"""Following MIAM's journal ``delegations.jsonl`` to join it with the demandes.

The journal is MIAM's file, read-only here (contract, "Prérequis dans MIAM"): one JSON
object a line, with ``demande_id`` (older lines may lack it) and fields such as a preset, a
format or a model. The follower reads the complete lines appended since its last offset
and hands them to the view, which records them and the new offset in one transaction. A
malformed line is skipped and counted, never fatal.

Log rotation is ordinary for MIAM's file: renamed and replaced, deleted and created again
(possibly under the same inode), or copied and truncated in place, after which MIAM goes
on appending, so the file may already be longer than the offset saved. The follower keeps
the file's identity (device and inode) and a fingerprint of what it read beside the
offset; a file that differs in either, or is shorter than the offset, is read again from
its start (ADR-0052). That is harmless: the first line of each demande wins.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any, BinaryIO

from miam_economies.domain.storable_text import text_fault
from miam_economies.domain.strict_json import NotStrictJson, loads_strict
from miam_economies.projections.view import BilanView, JournalLine

log = logging.getLogger(__name__)

DATA_JOURNAL = "delegations.jsonl"
"""How a projection records the journal nobody named: the data directory's
``delegations.jsonl``, wherever the directory is now (moved, copied, reached by another
path). Relative, so it never names another directory's file (issue 21.2; ADR-0103); a
journal named explicitly is recorded by its absolute path."""


def journal_file(recorded: str, data: Path) -> Path:
    """The file a projection's recorded journal names: ``data/delegations.jsonl`` for
    ``DATA_JOURNAL``, else the absolute path recorded."""
    return data / DATA_JOURNAL if recorded == DATA_JOURNAL else Path(recorded)


READ_LIMIT = 4 * 1024 * 1024
"""Bytes read from the journal per step (bounds memory on a large backlog)."""

FINGERPRINT_WINDOW = 4096
"""Bytes at the start of the journal, and just before the offset read to, that the
fingerprint covers: what was read, had the file been refilled in place, would differ
there."""


def fingerprint(f: BinaryIO, end: int) -> str:
    """A digest of the first and the last ``FINGERPRINT_WINDOW`` bytes of ``f`` before
    offset ``end`` (bytes), hex. Raises ``OSError``."""
    digest = hashlib.blake2b(digest_size=16)
    f.seek(0)
    digest.update(f.read(min(end, FINGERPRINT_WINDOW)))
    tail = max(0, end - FINGERPRINT_WINDOW)
    f.seek(tail)
    digest.update(f.read(end - tail))
    return f"{end}:{digest.hexdigest()}"


def parse_line(raw: bytes) -> JournalLine | None:
    """One journal line, or None when it is malformed (not strict UTF-8 JSON of an object,
    as ``domain.strict_json`` defines it).

    A line without a string ``demande_id`` gives ``JournalLine("", {})``: usable, counted
    apart; so does one whose ``demande_id`` no event can carry (``ecartees`` 1). ``valeurs``
    keeps the scalar fields but ``demande_id``: strings as they are, numbers and booleans
    as JSON text; nulls, lists, objects and a field named "" are left out, and so is a
    field whose name or value breaks the storable text rule (over 512 characters or 64
    beyond ASCII, a NUL), counted in ``ecartees`` (``domain.storable_text``; ADR-0135).
    """
    try:
        obj: Any = loads_strict(raw)
    except NotStrictJson:
        return None
    if not isinstance(obj, dict):
        return None
    demande_id = obj.get("demande_id")
    if not isinstance(demande_id, str) or not demande_id:
        return JournalLine("", {})
    if text_fault(demande_id) is not None:  # no event can carry it: nothing to join
        return JournalLine("", {}, ecartees=1)
    valeurs = {}
    ecartees = 0
    for champ, valeur in obj.items():
        # "": the view's name for a client's whole sample (sql_samples.CLIENT_WIDE).
        if (champ in ("demande_id", "") or valeur is None
                or isinstance(valeur, (dict, list))):
            continue
        kind = type(valeur)
        # json.dumps's text, without its call for the common kinds (a tenth of a first
        # replay's journal read: ADR-0179): an int's is str's, a bool's true or false.
        text = (valeur if kind is str else str(valeur) if kind is int
                else ("true" if valeur else "false") if kind is bool
                else json.dumps(valeur))
        # Any length and content is MIAM's to write; what no backend could keep (a
        # long error text, a NUL) is left out and counted, never a stop (ADR-0135).
        if text_fault(champ) is not None or text_fault(text) is not None:
            ecartees += 1
            continue
        valeurs[champ] = text
    return JournalLine(demande_id, valeurs, ecartees)


class JournalFollower:
    """Joins the lines appended to ``path`` since the last call (see module docstring).

    ``view``: where the lines and the offset (bytes) go, under ``key``: the journal as
    the projection records it (``DATA_JOURNAL`` for the data directory's; by default the
    file's absolute path). The file's identity (device and inode) and a fingerprint of
    what was read are kept beside the offset, so a rotated journal is read from its start
    even when it is already longer than the old one (see the module); a moved or copied
    data directory's journal is another file, read from its start too, its demandes
    joined once (the first line wins). An unreadable journal never stops the events:
    ``follow`` logs it, keeps it in ``last_error`` and retries on the next call. A
    missing journal is no error (MIAM may not have written it yet), unless it was named
    explicitly (``explicit``): then it is reported as unreadable (ADR-0103).
    """

    def __init__(self, view: BilanView, path: Path, key: str | None = None,
                 explicit: bool = False):
        self.view = view
        self.path = path
        self.key = key if key is not None else str(path.resolve())
        self.explicit = explicit
        self.last_error: str | None = None

    def _where(self) -> tuple[int, int, str]:
        """(offset to read from, offset recorded, file identity). Raises ``OSError``
        (``FileNotFoundError`` when there is no journal)."""
        stat = self.path.stat()
        fichier = f"{stat.st_dev}:{stat.st_ino}"
        state = self.view.journal_state(self.key)
        offset = state["position"]
        replaced = state["fichier"] not in (None, fichier) or stat.st_size < offset
        if not replaced and state["empreinte"] is not None:
            with self.path.open("rb") as f:
                replaced = fingerprint(f, offset) != state["empreinte"]
        return (0 if replaced else offset), offset, fichier

    def caught_up(self) -> bool:
        """Whether every complete line of the journal is joined (a partial last line,
        still being written, does not count). An unreadable journal counts as caught up:
        waiting would not help. Raises the view's ``PersistenceError``."""
        try:
            start, offset, _ = self._where()
            if start != offset:
                return False
            with self.path.open("rb") as f:
                f.seek(start)
                return _next_line_end(f) is None
        except OSError:  # missing, or unreadable: nothing to wait for
            return True

    def state(self) -> dict[str, Any]:
        """``{"lignes", "malformees", "sans_demande", "valeurs_ecartees"}`` so far, plus
        ``"erreur"`` while the journal cannot be read."""
        state = self.view.journal_state(self.key)
        counts = {k: state[k] for k in ("lignes", "malformees", "sans_demande",
                                         "valeurs_ecartees")}
        erreur = self.last_error
        if erreur is None and self.explicit and not self.path.exists():
            erreur = self._missing()  # read as it stands: nobody followed it yet
        if erreur is not None:
            counts["erreur"] = erreur
        return counts

    def _missing(self) -> str:
        return (f"FileNotFoundError: the journal named explicitly, {self.path}, does not "
                "exist")

    def follow(self) -> int:
        """Join what was appended; return the lines read (0 when nothing new).

        A missing journal is not an error (MIAM may not have written one yet); an
        unreadable one is logged and kept in ``last_error``. Raises the view's
        ``PersistenceError`` (``IntegrityError`` if another runner read these lines first).
        """
        try:
            where = self._read()
        except FileNotFoundError:
            if not self.explicit:
                self.last_error = None
                return 0
            if self.last_error is None:
                log.warning("journal %s (named explicitly) does not exist: demandes are "
                            "not joined with it", self.path)
            self.last_error = self._missing()
            return 0
        except OSError as exc:
            if self.last_error is None:
                log.warning("journal %s cannot be read: %s", self.path, exc)
            self.last_error = f"{type(exc).__name__}: {exc.strerror or exc}"
            return 0
        self.last_error = None
        if where is None:
            return 0
        offset, end, fichier, empreinte, lines, malformees = where
        if malformees:
            log.warning("journal %s: %d malformed line(s) skipped", self.path, malformees)
        self.view.fold_journal(self.key, offset, end, fichier, empreinte, lines, malformees)
        return len(lines) + malformees

    def _read(self) -> tuple[int, int, str, str, list[JournalLine], int] | None:
        """The next complete lines: (offset recorded, new offset, identity, fingerprint up
        to the new offset, lines, malformed count), or None when there is nothing new.
        Raises ``OSError``."""
        start, offset, fichier = self._where()
        with self.path.open("rb") as f:
            f.seek(start)
            chunk = f.read(READ_LIMIT)
            end = chunk.rfind(b"\n") + 1  # only complete lines: MIAM may be mid-write
            if end == 0 and len(chunk) == READ_LIMIT:
                # One line longer than READ_LIMIT: not a journal entry; skip past it.
                f.seek(start)
                skipped = _next_line_end(f)
                if skipped is not None:
                    return offset, skipped, fichier, fingerprint(f, skipped), [], 1
            if end == 0:
                if start != offset:  # replaced by a file of one partial line: restart at 0
                    return offset, 0, fichier, fingerprint(f, 0), [], 0
                return None
            empreinte = fingerprint(f, start + end)
        lines, malformees = [], 0
        # A record ends at "\n" only (JSON lines): splitlines() would also cut at a bare
        # "\r", which JSON allows between tokens; a "\r\n" ending is whitespace to it.
        for raw in chunk[:end - 1].split(b"\n"):
            if not raw.strip():
                continue
            line = parse_line(raw)
            if line is None:
                malformees += 1
            else:
                lines.append(line)
        return offset, start + end, fichier, empreinte, lines, malformees


def _next_line_end(f: BinaryIO) -> int | None:
    """Offset just past the next newline from ``f``'s position, or None if none yet."""
    while block := f.read(READ_LIMIT):
        newline = block.find(b"\n")
        if newline >= 0:
            return f.tell() - len(block) + newline + 1
    return None
