"""The root of every exception miam-economies raises on purpose (pure; ADR-0123).

Each of our exception classes derives from ``MiamEconomiesError`` and keeps the standard
base it had (``ValueError`` for a value refused, ``ZoneInfoNotFoundError`` for a zone...),
so code that catches those still does. An edge names the root to catch every refusal of
ours at once: the command line prints its message as one line of error; a host app may
catch it around ``read_bilan`` or ``open_economies``. The HTTP edge maps each class to its
own status (``api.http.errors``).
"""

from __future__ import annotations


class MiamEconomiesError(Exception):
    """Raised on purpose by miam-economies: its input, its data or its setup is not what
    it needs (a refused batch or parameter, an unavailable store, a projection built
    otherwise, a missing extra...), never a bug. The message says what is wrong, for
    the person or program that can mend it; a subclass may carry the parts (a schema
    error's faults, a classement parameter's name)."""
