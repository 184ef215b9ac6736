"""The command line and the process entry points: the ``miam-economies`` console script
(``main``, SPEC "Interfaces"), the ``serve`` and ``project`` processes, and what each
uvicorn worker process runs (``workers``).

click, rich and uvicorn come with the ``cli`` extra (ADR-0044). Installed without it, the
console script still exists (it is the distribution's); ``main`` then prints one line
naming the extra instead of a traceback.
"""

from __future__ import annotations

import sys

from miam_economies.api.extras import MissingExtra

try:
    from miam_economies.api.cli import (  # noqa: F401
        history,
        ranking,
        reading,
        releves,
        serve,
        session,
        transfer,
    )
    from miam_economies.api.cli.main import main
except ModuleNotFoundError as exc:
    _missing = MissingExtra.of(exc, "cli", "the miam-economies command")
    if _missing is None:
        raise

    def main() -> None:  # type: ignore[misc]
        """Say which extra the command needs; exit status 1."""
        sys.exit(f"Error: {_missing}")

__all__ = ["main"]
