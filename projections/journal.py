"""Following MIAM's journal ``delegations.jsonl`` to join it with the demandes.

The journal is MIAM's file, read-only here (contract, "Prérequis dans MIAM"): one JSON
object a line, with ``demande_id`` (older lines may lack it) and fields such as a preset, a
format or a model. The follower reads the complete lines appended since its last offset
and hands them to the view, which records them and the new offset in one transaction. A
malformed line is skipped and counted, never fatal; a file that shrank (replaced or
truncated) is read again from the start, which is harmless since the first line of each
demande wins.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, BinaryIO

from domain.strict_json import NotStrictJson, loads_strict
from projections.view import BilanView, JournalLine

log = logging.getLogger(__name__)

READ_LIMIT = 4 * 1024 * 1024
"""Bytes read from the journal per step (bounds memory on a large backlog)."""


def parse_line(raw: bytes) -> JournalLine | None:
    """One journal line, or None when it is malformed (not strict UTF-8 JSON of an object,
    as ``domain.strict_json`` defines it).

    A line without a string ``demande_id`` gives ``JournalLine("", {})``: usable, counted
    apart. ``valeurs`` keeps the scalar fields but ``demande_id``: strings as they are,
    numbers and booleans as JSON text; nulls, lists and objects are left out.
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
    valeurs = {}
    for champ, valeur in obj.items():
        if champ == "demande_id" or valeur is None or isinstance(valeur, (dict, list)):
            continue
        valeurs[champ] = valeur if isinstance(valeur, str) else json.dumps(valeur)
    return JournalLine(demande_id, valeurs)


class JournalFollower:
    """Joins the lines appended to ``path`` since the last call (see module docstring).

    ``view``: where the lines and the offset (bytes) go; the journal's absolute path is
    its key there.
    """

    def __init__(self, view: BilanView, path: Path):
        self.view = view
        self.path = path
        self.key = str(path.resolve())

    def caught_up(self) -> bool:
        """Whether every complete line of the journal is joined (a partial last line,
        still being written, does not count). Raises the view's ``PersistenceError``."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return True
        offset = self.view.journal_offset(self.key)
        if size == offset:
            return True
        if size < offset:
            return False  # shrank: to be read again
        with self.path.open("rb") as f:
            f.seek(offset)
            return b"\n" not in f.read(READ_LIMIT)

    def counts(self) -> dict[str, int]:
        """``{"lignes", "malformees", "sans_demande"}`` joined or skipped so far."""
        return self.view.journal_counts(self.key)

    @staticmethod
    def _skip_line(f: BinaryIO) -> int | None:
        """Offset just past the next newline from ``f``'s position, or None if none yet."""
        while block := f.read(READ_LIMIT):
            newline = block.find(b"\n")
            if newline >= 0:
                return f.tell() - len(block) + newline + 1
        return None

    def follow(self) -> int:
        """Join what was appended; return the lines read (0 when nothing new).

        A missing journal is not an error (MIAM may not have written one yet). Raises the
        view's ``PersistenceError`` (``IntegrityError`` if another runner read these lines
        first).
        """
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return 0
        offset = self.view.journal_offset(self.key)
        start = 0 if size < offset else offset  # shrank: replaced or truncated
        if size == start == offset:
            return 0
        with self.path.open("rb") as f:
            f.seek(start)
            chunk = f.read(READ_LIMIT)
            end = chunk.rfind(b"\n") + 1  # only complete lines: MIAM may be mid-write
            if end == 0 and len(chunk) == READ_LIMIT:
                # One line longer than READ_LIMIT: not a journal entry; skip past it.
                skipped = self._skip_line(f)
                if skipped is not None:
                    self.view.fold_journal(self.key, offset, skipped, [], 1)
                    return 1
        if end == 0:
            if start != offset:  # shrank to a single partial line: restart from 0
                self.view.fold_journal(self.key, offset, 0, [], 0)
            return 0
        lines, malformees = [], 0
        for raw in chunk[:end].splitlines():
            if not raw.strip():
                continue
            line = parse_line(raw)
            if line is None:
                malformees += 1
            else:
                lines.append(line)
        if malformees:
            log.warning("journal %s: %d malformed line(s) skipped", self.path, malformees)
        self.view.fold_journal(self.key, offset, start + end, lines, malformees)
        return len(lines) + malformees
