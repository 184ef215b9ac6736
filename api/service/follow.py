"""``miam-economies project``: the projection runner as a process of its own (ADR-0031).

On PostgreSQL the server's workers only append; this process follows the notification log
with the same pull runner as the SQLite server's thread (ADR-0004), folding pages with the
tracking compare-and-set (ADR-0007), so a second runner started by mistake folds nothing
twice. It is woken by the library's LISTEN/NOTIFY channel (every insert of the
``eventsourcing`` PostgreSQL recorder sends a NOTIFY on the events table's channel, at
commit), and looks at the log every ``poll_interval`` seconds anyway, in case a
notification was missed while the listening connection was down.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from miam_economies.api.service.services import Services
from miam_economies.api.store.backends import Database

log = logging.getLogger(__name__)

RECONNECT = 1.0
"""Seconds before the listening connection is opened again after an error."""


def listen(database: Database, channel: str, wake: Callable[[], None],
           stop: threading.Event) -> None:
    """Call ``wake()`` for every notification on ``channel`` of ``database`` (and once
    when listening starts), until ``stop`` is set. Connection errors are logged and the
    connection opened again after ``RECONNECT`` seconds; never raises ``psycopg.Error``."""
    # Here, not at the top: on SQLite the command line runs without the postgres extra.
    import psycopg
    from psycopg import sql

    while not stop.is_set():
        try:
            with psycopg.connect(database.conninfo(), autocommit=True) as conn:
                conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
                wake()  # whatever was appended before we listened
                while not stop.is_set():
                    for _ in conn.notifies(timeout=1.0, stop_after=1):
                        wake()
        except psycopg.Error as exc:
            log.warning("listening on %s failed (%s); polling until it is back", channel, exc)
            stop.wait(RECONNECT)


def follow(services: Services, stop: threading.Event) -> None:
    """Run ``services.runner`` in its thread (and, on PostgreSQL, a listener thread that
    wakes it) until ``stop`` is set; the caller's ``open_services`` stops the runner on
    exit. Errors of a page are the runner's: logged, shown, retried (ADR-0004)."""
    database = services.settings.database
    listener = None
    if database.is_postgres:
        channel = services.store.recorder.channel_name  # type: ignore[attr-defined]
        listener = threading.Thread(target=listen, name="projection-listener", daemon=True,
                                    args=(database, channel, services.runner.wake, stop))
        listener.start()
    services.runner.start()
    stop.wait()
    if listener is not None:
        listener.join(5)
