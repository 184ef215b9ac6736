"""The command line and the process entry points: the ``miam-economies`` console script
(``main``, SPEC "Interfaces"), the ``serve`` and ``project`` processes, and what each
uvicorn worker process runs (``workers``)."""

from miam_economies.api.cli import history, reading, serve, transfer  # noqa: F401 (commands)
from miam_economies.api.cli.main import main

__all__ = ["main"]
