"""Claude Code's transcripts into the store as relevés: ``miam-economies releves`` and
``import_releves`` (SPEC, "Claude Code's own record: relevés, sessions, and the share
saved", "Stored as events" and "Import"; ADR-0172, ADR-0174).

An import reads its files (``transcripts.read_transcripts``: a missing PATH refused
before anything is read, an unreadable file named and skipped), merges the observations
of each reply key (``releves.merge_replies``: max of each counter, never a sum), and
appends one relevé a reply, ``MAX_BATCH`` a transaction, under the id of everything
observed (``releves.observation_id``): the same files imported again store nothing, and
a reply that grew since is a new relevé, merged again by the fold (ADR-0173).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from zoneinfo import ZoneInfo

from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.settings import DEFAULT_DATA, Settings
from miam_economies.api.service.transcripts import UnreadableFile, read_transcripts
from miam_economies.api.store.application import EventStore
from miam_economies.api.store.mapper import payload_text
from miam_economies.domain.releves import Observation, ReplyKey, merge_replies
from miam_economies.domain.releves_events import releve_payload, releve_stream_hex
from miam_economies.domain.schema import MAX_BATCH


@dataclass(frozen=True)
class RelevesImportes:
    """What an import of transcripts did (``import_releves``): ``fichiers`` files read to
    their end, ``lignes`` lines read, ``reponses`` replies (lines merged by key, never
    summed), ``nouvelles`` relevés newly stored, ``doublons`` relevés already stored
    (``nouvelles + doublons = reponses``), ``incompletes`` replies none of whose lines
    read had a ``stop_reason``, ``ignorees`` lines that are no observation of a reply,
    and ``illisibles`` the files that could not be read (skipped), in the order met."""

    fichiers: int = 0
    lignes: int = 0
    reponses: int = 0
    nouvelles: int = 0
    doublons: int = 0
    incompletes: int = 0
    ignorees: int = 0
    illisibles: tuple[UnreadableFile, ...] = ()

    def as_dict(self) -> dict[str, int]:
        """The counts as JSON-ready data (the command's ``--json``: SPEC, "Import"):
        ``{"fichiers", "lignes", "reponses", "nouvelles", "doublons", "incompletes",
        "ignorees"}``; the unreadable files are not in it."""
        return {"fichiers": self.fichiers, "lignes": self.lignes,
                "reponses": self.reponses, "nouvelles": self.nouvelles,
                "doublons": self.doublons, "incompletes": self.incompletes,
                "ignorees": self.ignorees}


def store_releves(store: EventStore, replies: Mapping[ReplyKey, Observation], *,
                  batch_size: int = MAX_BATCH) -> tuple[int, int, int, int]:
    """Append one relevé a reply of ``replies`` (observations merged by key:
    ``releves.merge_replies``) to ``store``, in key order, ``batch_size`` a transaction
    (``EventStore.append_releves``); return ``(reponses, nouvelles, doublons,
    incompletes)``. Batches appended before a failure stay stored; the same import
    again completes it. Raises ``StoreUnavailable``, and ``ValueError`` for a
    ``batch_size`` outside 1 to ``MAX_BATCH``."""
    if not 1 <= batch_size <= MAX_BATCH:
        raise ValueError(f"batch_size must be 1 to {MAX_BATCH}")
    ordered = [replies[key] for key in sorted(replies)]
    nouvelles = doublons = 0
    for start in range(0, len(ordered), batch_size):
        appended = store.append_releves(
            [(releve_stream_hex(reply), payload_text(releve_payload(reply)), None)
             for reply in ordered[start:start + batch_size]])
        nouvelles += appended.recus
        doublons += appended.doublons
    incompletes = sum(1 for reply in ordered if reply.incomplete)
    return len(ordered), nouvelles, doublons, incompletes


def import_releves(paths: Sequence[str | os.PathLike[str]] = (),
                   data: Path | str = DEFAULT_DATA, *, database_url: str | None = None,
                   lock_timeout: int = 5, environ: Mapping[str, str] | None = None,
                   home: Path | None = None, fuseau: str | None = None) -> RelevesImportes:
    """Import Claude Code's transcripts into the store of data directory ``data`` (or of
    ``database_url``), as ``miam-economies releves`` does; return the counts.

    ``paths``: transcript files (read whatever their name) or folders (searched
    recursively for ``*.jsonl``); none: the ``projects`` folders of
    ``$CLAUDE_CONFIG_DIR`` (``environ``'s; comma-separated), else of ``~/.claude`` and
    ``~/.config/claude`` (under ``home``), those that exist. Read-only on the
    transcripts. The store is created when there is none, its bilan in zone ``fuseau``
    (an IANA name; None: the projection's, or the machine's for a new one), as the
    commands that read it next; it may be a live server's (its dedup holds across
    processes); the bilan folds the relevés at its next read.
    Every reply read is held in memory until the files are read (a few hundred bytes
    each).

    Raises ``TranscriptPathMissing`` (a ``FileNotFoundError``) naming the first PATH
    that does not exist, before anything is read or stored; an unreadable file is not an
    error (``RelevesImportes.illisibles``). Raises ``StoreUnavailable``,
    ``DataDirectoryError`` and ``PersistenceError`` as ``open_services`` and the store do,
    ``ZoneInfoNotFoundError`` for an unknown ``fuseau``, before anything is read.
    """
    if fuseau is not None:
        ZoneInfo(fuseau)  # an unknown zone fails before any file is read
    reading = read_transcripts(paths, environ=environ, home=home)
    replies = merge_replies(reading)  # every file read before the store is opened
    settings = Settings(data=Path(data), database_url=database_url,
                        lock_timeout=lock_timeout, fuseau=fuseau)
    with open_services(settings, run_projections=False) as services:
        reponses, nouvelles, doublons, incompletes = store_releves(services.store, replies)
    counts = reading.counts
    return RelevesImportes(counts.fichiers, counts.lignes, reponses, nouvelles, doublons,
                           incompletes, counts.ignorees, tuple(counts.unreadable))
