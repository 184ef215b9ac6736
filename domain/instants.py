"""Instants as the contract writes them: ISO 8601 with an offset, as JavaScript's
``toISOString()`` does (``2026-10-30T09:12:04.512Z``). Pure: no clock is read here."""

from __future__ import annotations

from datetime import UTC, datetime


def parse_instant(date: str) -> datetime:
    """The aware datetime of an ISO 8601 ``date`` with an offset (``Z`` or ``+hh:mm``).

    Python 3.11's ``fromisoformat`` takes at most 6 fraction digits: further ones (the
    contract allows nanoseconds) are dropped. Raises ``ValueError`` for an invalid date.
    """
    try:
        # Python 3.11 reads toISOString()'s form (3 fraction digits, "Z") directly.
        return datetime.fromisoformat(date)
    except ValueError:
        pass
    head, dot, rest = date.partition(".")
    if dot:
        digits = len(rest) - len(rest.lstrip("0123456789"))
        date = f"{head}.{rest[:min(digits, 6)].ljust(6, '0')}{rest[digits:]}"
    return datetime.fromisoformat(date.replace("Z", "+00:00"))


def iso_utc(moment: datetime) -> str:
    """``moment`` as JavaScript's ``toISOString()`` writes it: ``2026-10-30T09:12:04.512Z``
    (UTC, milliseconds). ``moment`` must be aware."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
