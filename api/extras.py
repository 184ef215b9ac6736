"""The distribution's optional parts (``pyproject.toml``'s extras, ADR-0044) and the error
that names one when its packages are not installed.

A host that embeds the routes on SQLite installs the base only; the PostgreSQL driver,
the report's charting and templating, and the command line each come with an extra. Code
that needs one imports it where it is used and turns a ``ModuleNotFoundError`` for one of
the extra's packages into ``MissingExtra``, whose message says what to install.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

from miam_economies.domain.errors import MiamEconomiesError

EXTRAS: dict[str, tuple[str, ...]] = {
    "postgres": ("psycopg", "psycopg_pool"),
    "report": ("pygal", "jinja2", "markupsafe"),
    "cli": ("click", "rich", "uvicorn"),
}
"""Extra name -> the top-level modules of its direct requirements (``pyproject.toml``)."""


class MissingExtra(MiamEconomiesError):
    """``what`` needs the extra ``extra``, and its module ``module`` is not installed.

    The message is one line ending with the command that fixes it, e.g. ``the report
    needs the 'report' extra (pygal is not installed): pip install
    'miam-economies[report]'``. Answered 501 by the HTTP edge, printed by the CLI.
    """

    def __init__(self, extra: str, module: str, what: str):
        super().__init__(f"{what} needs the {extra!r} extra ({module} is not installed): "
                         f"pip install 'miam-economies[{extra}]'")
        self.extra = extra
        self.module = module

    @classmethod
    def of(cls, error: ModuleNotFoundError, extra: str, what: str) -> MissingExtra | None:
        """The ``MissingExtra`` that ``error`` means when the module it could not find
        belongs to ``extra`` (one of ``EXTRAS``); None for any other module, whose error
        is a bug or a broken install and should propagate as it is."""
        top = (error.name or "").partition(".")[0]
        return cls(extra, top, what) if top in EXTRAS[extra] else None


def require(extra: str, module: str, what: str) -> ModuleType:
    """``module`` imported, or ``MissingExtra`` naming ``extra`` when one of the extra's
    packages is missing (``what`` needs it: "the report"). A missing module of any other
    package is a bug or a broken install: its ``ModuleNotFoundError`` propagates."""
    try:
        return import_module(module)
    except ModuleNotFoundError as exc:
        missing = MissingExtra.of(exc, extra, what)
        if missing is None:
            raise
        raise missing from None
