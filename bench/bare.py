"""The bare append: the design's own limit, for ``make bench`` (issue 22, item 1).

The least a server can do and still store what ours stores: a bare ASGI app (no Starlette,
no middleware) on uvicorn with httptools and uvloop, which reads the POST body, parses it
with orjson and writes one row per event into an SQLite file shaped like the library's
``stored_events`` table (``eventsourcing.sqlite``'s application recorder: the same four
columns, the same primary key, a rowid for the notification id), in WAL mode with
``synchronous=FULL``, one ``executemany`` in one transaction per POST. Each row is the one
our store writes: the event's stream id as hex (``domain.events.stream_hex``, the fastest
we know), version 1, its type's topic, and a state of the same shape and size as ours
(``api.store.mapper``'s ``received``: ``{"timestamp", "payload", "recu_le"}``, the payload
as JSON text).

It validates nothing, deduplicates nothing, checks no token and keeps no projection: it
answers ``{"ok":true,"recus":N,"doublons":0}``. So its rate is what HTTP, JSON and an
fsync'd SQLite append of these rows allow on this machine, and ours is read against it.
Any ``GET`` answers ``{"ok":true}`` (the bench's readiness probe). Never used by the
service.

Run: ``python -m bench.bare --data DIR --port N`` (the rows go to ``DIR/bare.sqlite``).
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import uvicorn

from miam_economies.domain.events import TOPICS, stream_hex

FILE = "bare.sqlite"
"""The SQLite file under ``--data``."""

CREATE = ("CREATE TABLE IF NOT EXISTS stored_events (originator_id TEXT, "
          "originator_version INTEGER, topic TEXT, state BLOB, "
          "PRIMARY KEY (originator_id, originator_version))")
"""The library's SQLite application recorder table (``SQLiteApplicationRecorder``)."""

INSERT = "INSERT INTO stored_events VALUES (?, ?, ?, ?)"

Row = tuple[str, int, str, bytes]
"""``(originator_id hex, originator_version, topic, state)``: one stored event."""

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def rows_of(body: bytes, now: datetime) -> list[Row]:
    """The stored rows of a POST body ``{"evenements": [...]}`` received at ``now`` (an
    aware datetime): what our store writes for new events, without validating them (an
    unknown ``type`` raises ``KeyError``)."""
    events = orjson.loads(body)["evenements"]
    # The transcoder's datetime marker and the toISOString() form of recu_le, as ours.
    stamp = {"_type_": "datetime_iso", "_data_": now.isoformat()}
    recu_le = now.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    dumps = orjson.dumps
    return [(stream_hex(ev["id"]), 1, TOPICS[ev["type"]],
             dumps({"timestamp": stamp, "payload": dumps(ev).decode(), "recu_le": recu_le}))
            for ev in events]


class Appender:
    """The SQLite file ``path`` (created with the table if absent), written by one thread
    at a time: ``write`` runs on the app's single writer thread."""

    def __init__(self, path: Path):
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute(CREATE)

    def write(self, rows: list[Row]) -> None:
        """Insert ``rows`` in one transaction, committed (fsync'd) before returning."""
        self.db.execute("BEGIN")
        try:
            self.db.executemany(INSERT, rows)
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")


def build_app(data: Path) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """The bare ASGI app over ``data/bare.sqlite`` (``data`` created if absent)."""
    data.mkdir(parents=True, exist_ok=True)
    appender = Appender(data / FILE)
    # One writer thread: SQLite takes one writer at a time anyway, and while it waits on
    # the commit's fsync the event loop reads and parses the next request.
    writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bare-writer")

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if scope["method"] == "POST":
            chunks = []
            more = True
            while more:
                message = await receive()
                chunks.append(message.get("body", b""))
                more = message.get("more_body", False)
            rows = rows_of(b"".join(chunks), datetime.now(UTC))
            await asyncio.get_running_loop().run_in_executor(writer, appender.write, rows)
            answer = b'{"ok":true,"recus":%d,"doublons":0}' % len(rows)
        else:
            answer = b'{"ok":true}'
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", b"%d" % len(answer))]})
        await send({"type": "http.response.body", "body": answer})

    return app


def main() -> None:
    """Serve the bare append on 127.0.0.1 (see the module's docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    # httptools and uvloop named, not left to "auto": the limit must not silently fall
    # back to h11 or asyncio where they are missing.
    uvicorn.run(build_app(args.data), host="127.0.0.1", port=args.port, http="httptools",
                loop="uvloop", lifespan="off", log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
