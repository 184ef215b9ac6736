"""Folding past a stored event the view refuses: the fold never stops on one (ADR-0135).

The fold's own check (``domain.storable_text.stored_fault``, applied when the store is
read) sets aside every event known to break a backend, alike on all of them. This is the
net under it: when a page's commit fails with an error of the event's data (a value the
backend's tables cannot take: ``DATA_STATES``, or the driver's refusal of a value), the
page is folded again one event at a time, and an event
whose own fold still fails so is set aside (an ``Ecarte``: its position, the error's
class in our words), logged, and counted with the others. Any other error (a lost
connection, a lock, a bug of ours) is raised as before: the runner retries the page and
``/healthz`` says it fails; only an event's data is ever set aside, never the store's.
"""

from __future__ import annotations

import logging

from eventsourcing.persistence import DataError, PersistenceError

from miam_economies.domain.events import Ecarte
from miam_economies.projections.projection import BilanProjection
from miam_economies.projections.source import EventSource

log = logging.getLogger(__name__)

DATA_STATES = frozenset({"22021", "22P05", "54000"})
"""SQLSTATEs of a value no backend table can take: a character not in the database's
repertoire (a NUL, bytes not UTF-8), a character without an equivalent in its encoding,
a program limit (an index row past its size). Not the whole classes 22 and 54: a
division by zero or a bad cast in our own SQL is a bug to stop on, not an event's data."""


def poisoned(exc: BaseException) -> bool:
    """Whether ``exc`` (raised by a page's commit) comes from the data of what was written:
    a database error in its chain of causes whose SQLSTATE is in ``DATA_STATES``, or,
    where none has a SQLSTATE (the driver refused the value before sending it, as
    psycopg refuses a NUL in text), the library's ``DataError``."""
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and len(chain) < 16:
        chain.append(seen)
        seen = seen.__cause__
    states = [state for state in (getattr(e, "sqlstate", None) for e in chain)
              if isinstance(state, str)]
    if states:
        return any(state in DATA_STATES for state in states)
    return any(isinstance(e, DataError) for e in chain)


def _reason(exc: BaseException) -> str:
    # The backend's message, first line, bounded: it names the limit, not the value.
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return f"the view refused it: {first}"[:300]


def fold_singly(source: EventSource, projection: BilanProjection, position: int,
                last: int) -> int:
    """Fold the events after ``position`` up to ``last`` (notification ids) one page of
    one event at a time, setting aside each whose own fold ``poisoned`` fails; return
    how many events were passed. Raises what ``fold_page`` raises otherwise
    (``IntegrityError`` when another runner moved the position)."""
    passed = 0
    while position < last:
        read = source.read(position + 1, 1)
        if not read or read[0][0] > last:
            break
        n, value = read[0]
        delta = projection.new_delta()
        delta.add_all([value])
        identite = source.identity(n)
        try:
            projection.commit(delta, n, previous=position, identite=identite)
        except PersistenceError as exc:
            if not poisoned(exc):
                raise
            delta = projection.new_delta()
            delta.add_all([Ecarte(n, _reason(exc))])
            projection.commit(delta, n, previous=position, identite=identite)
        said_aside(projection, delta.ecartes)
        position = n
        passed += 1
    return passed


def said_aside(projection: BilanProjection, ecartes: list[Ecarte]) -> None:
    """Log one warning per event of ``ecartes``, set aside by ``projection``'s last
    commit: its position and why (the event itself is in ``export``)."""
    for ecarte in ecartes:
        log.warning("projection %s: the event at position %d is set aside (%s)",
                    projection.tracking_name, ecarte.position, ecarte.raison)
