"""miam-economies: the token savings of MIAM's Claude Code plugin, kept as an event store
and read as an order-proof bilan.

The names a host app (MIAM) uses, importable from here (SPEC, "Installed as a library"):

* ``economies_routes(auth=TOKEN | [Middleware(...)] | "host", ops=True)``: the routes to
  put in the host's Starlette app, behind the auth named (required: SPEC, "Fail closed");
* ``BearerAuth``: our bearer middleware, which ``auth=TOKEN`` puts on each route;
* ``open_economies(settings, app, token=None)``: the async context manager the host's
  lifespan enters first, with the app it receives; it refuses to start
  (``EmbeddingRefused``) when that app leaves our routes unguarded, shadowed or closed to
  MIAM's token (ADR-0091, ADR-0140);
* ``Settings``: where the data lives (``data``, a ``Path`` or a ``str``) and how the
  routes behave;
* ``economies_section(data, par=...)`` and ``net_du_jour(client, data)``: the bilan from
  Python, without a server; ``read_bilan(data)`` for the whole snapshot;
* ``import_releves(paths, data=...)``: Claude Code's transcripts into the store as
  relevés (its own record of each reply), as ``miam-economies releves`` does (ADR-0174);
  it returns ``RelevesImportes`` (the counts) and raises ``TranscriptPathMissing`` (a
  ``FileNotFoundError``) naming a PATH that does not exist, before anything is read;
* ``read_session(session_id, data=...)``: one Claude Code session, the plugin's figures
  beside Claude Code's own replies, the share saved and the rapprochement of each
  subagent's cost (None for a session neither source has seen; ADR-0176, ADR-0177);
* ``read_classement(data, par="preset", selon=..., apparier=...)``: which preset is
  ahead, and how sure that is; it raises ``ClassementError`` (a ``ValueError``) for
  parameters the SPEC refuses (a ``par`` or ``apparier`` a model chose, say);
* ``NotUnderstood`` (a ``ValueError``): what every read raises for a dimension that is
  neither built in nor a field of MIAM's journal, with the nearest spelling (ADR-0164);
* ``MiamEconomiesError``: the root of every exception raised on purpose (a refusal, a
  misconfiguration, an unavailable store: ADR-0123), to catch them all at once.

Everything else lives in the three sub-packages, ``miam_economies.domain`` (pure),
``miam_economies.projections`` (read models) and ``miam_economies.api`` (the edges and the
use cases). In the repository they are the top-level folders ``domain/``,
``projections/`` and ``api/``; this folder links to them (ADR-0041).

The names load on first use, so ``import miam_economies.domain`` stays free of Starlette
and the store; type checkers read them from the ``TYPE_CHECKING`` imports, so a misspelt
name is an error there too.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from miam_economies.api.http.app import economies_routes, open_economies
    from miam_economies.api.http.auth import BearerAuth
    from miam_economies.api.http.host_check import EmbeddingRefused
    from miam_economies.api.service.reading import (
        economies_section,
        net_du_jour,
        read_bilan,
        read_classement,
        read_session,
    )
    from miam_economies.api.service.releves import RelevesImportes, import_releves
    from miam_economies.api.service.settings import Settings
    from miam_economies.api.service.transcripts import TranscriptPathMissing
    from miam_economies.domain.classement import ClassementError
    from miam_economies.domain.errors import MiamEconomiesError
    from miam_economies.domain.known_names import NotUnderstood

__all__ = ["BearerAuth", "ClassementError", "EmbeddingRefused", "MiamEconomiesError",
           "NotUnderstood", "RelevesImportes", "Settings", "TranscriptPathMissing",
           "economies_routes", "economies_section",
           "import_releves", "net_du_jour", "open_economies", "read_bilan",
           "read_classement", "read_session"]

_HOMES = {
    "BearerAuth": "miam_economies.api.http.auth",
    "ClassementError": "miam_economies.domain.classement",
    "EmbeddingRefused": "miam_economies.api.http.host_check",
    "MiamEconomiesError": "miam_economies.domain.errors",
    "NotUnderstood": "miam_economies.domain.known_names",
    "economies_routes": "miam_economies.api.http.app",
    "open_economies": "miam_economies.api.http.app",
    "economies_section": "miam_economies.api.service.reading",
    "net_du_jour": "miam_economies.api.service.reading",
    "read_bilan": "miam_economies.api.service.reading",
    "read_classement": "miam_economies.api.service.reading",
    "read_session": "miam_economies.api.service.reading",
    "import_releves": "miam_economies.api.service.releves",
    "RelevesImportes": "miam_economies.api.service.releves",
    "TranscriptPathMissing": "miam_economies.api.service.transcripts",
    "Settings": "miam_economies.api.service.settings",
}


if not TYPE_CHECKING:
    # Hidden from type checkers: a module-level __getattr__ would type every unknown name
    # of the package as Any, so a misspelt import would pass ``mypy --strict`` (issue 33);
    # they read the names from the imports above.
    def __getattr__(name: str) -> Any:
        """Import a public name from its module on first use (PEP 562)."""
        home = _HOMES.get(name)
        if home is None:
            raise AttributeError(f"module 'miam_economies' has no attribute {name!r}")
        return getattr(import_module(home), name)


def __dir__() -> list[str]:
    """The module's names and the public ones that load on first use."""
    return sorted([*globals(), *__all__])
