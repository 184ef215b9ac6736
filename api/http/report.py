"""The report: one self-contained HTML page of the bilan, for a person to look at.

``report_data`` gathers the figures from the projection's snapshots (never from the
events): today's net and the period's, per day (net; evites, pilotage and corrections),
the taux de reprise per journal ``preset`` and ``format`` (ranked), the classement of
presets (and formats) with its intervals, the cost per model,
anomalies and conflicts. ``report_page`` draws them: charts as inline SVG by ``pygal`` in
a Jinja2 template shipped in the package; the page needs no network and its
Content-Security-Policy forbids any (ADR-0023).

pygal and Jinja2 are the ``report`` extra's (ADR-0044) and are imported only when a page
is drawn: importing the routes leaves the host's import system as it was (pygal appends
a hook to ``sys.meta_path``), and a host without the extra gets ``MissingExtra``, which
the routes answer 501.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from types import ModuleType
from typing import Any

from miam_economies.api.extras import require
from miam_economies.api.service.services import Services
from miam_economies.domain.bilan import Figures
from miam_economies.projections.view import INCONNU

JOURNAL_FIELDS = ("preset", "format")
"""Journal fields whose taux de reprise the report ranks (contract: "le détail par preset
ou par format")."""

_SUMS = ("delegations", "evites", "pilotage", "corrections")


def _summed(clients: Iterable[Mapping[str, Any]]) -> Figures:
    """The four sums of several cells (clients) as one ``Figures``."""
    rows = list(clients)
    return Figures(*(sum(int(row[k]) for row in rows) for k in _SUMS))


def report_data(services: Services, depuis: str | None = None,
                jusqu_au: str | None = None, *, today: str | None = None) -> dict[str, Any]:
    """Every figure the report shows, as JSON-ready data.

    ``depuis``/``jusqu_au`` (``YYYY-MM-DD``, inclusive) bound the period (default: every
    day with events); ``today`` (default: the current day in the projection's zone).
    Returns ``{"provenance", "economies", "total", "aujourd_hui": {"jour", "net"},
    "periode": {"depuis", "jusqu_au", figures...}, "jours": [{"jour", figures...}],
    "reprise": {field: [{"valeur", "taux_reprise", "evites", "corrections"}]} ranked by
    taux_reprise (highest first; groups without a rate left out),
    "modeles": [{"modele", "pilotage", "tours", "usd"}] by cost, "anomalies":
    {kind: events}, "conflits": versions, "classement": {field: the classement document
    (``Services.classement``)} for ``preset``, and ``format`` when the journal has it}``.
    Figures in tokens; ``usd`` null when a
    model has no known price. Raises ``PersistenceError`` and ``ValueError`` for unsound
    bounds.
    """
    bilan = services.bilan()
    today = today or datetime.now(services.projection.zone).date().isoformat()
    jours_groupes = services.bilan("jour", depuis, jusqu_au)["groupes"]
    jours = [{"jour": day, **_summed(clients.values()).as_dict()}
             for day, clients in sorted(jours_groupes.items())]
    periode = _summed(jours)
    aujourd_hui = services.bilan("jour", today, today)["groupes"].get(today, {})
    reprise: dict[str, list[dict[str, Any]]] = {}
    for field in JOURNAL_FIELDS:
        groups = services.bilan(field)["groupes"]
        rows = []
        for value, clients in groups.items():
            figures = _summed(clients.values())
            if figures.taux_reprise is not None:
                rows.append({"valeur": value, "taux_reprise": figures.taux_reprise,
                             "evites": figures.evites, "corrections": figures.corrections})
        # Highest rate first; the unknown group last among equals, then by name.
        rows.sort(key=lambda r: (-r["taux_reprise"], r["valeur"] == INCONNU, r["valeur"]))
        reprise[field] = rows
    modeles = []
    for modele, clients in services.bilan("modele")["groupes"].items():
        cells = list(clients.values())
        prices = [c.get("usd") for c in cells]
        modeles.append({"modele": modele, "pilotage": sum(int(c["pilotage"]) for c in cells),
                        "tours": sum(int(c.get("tours", 0)) for c in cells),
                        "usd": None if any(p is None for p in prices)
                        else round(sum(prices), 6)})
    modeles.sort(key=lambda m: (-m["pilotage"], m["modele"]))
    # The classement of preset always; of format when the journal has it (SPEC).
    classement = {}
    for field in JOURNAL_FIELDS:
        ranked = services.classement(field)
        if field == "preset" or any(g["cle"] != INCONNU for g in ranked["groupes"]):
            classement[field] = ranked
    return {
        "provenance": bilan["provenance"],
        "economies": bilan["economies"],
        "total": bilan["total"],
        "aujourd_hui": {"jour": today, "net": _summed(aujourd_hui.values()).net},
        "periode": {"depuis": depuis or (jours[0]["jour"] if jours else None),
                    "jusqu_au": jusqu_au or (jours[-1]["jour"] if jours else None),
                    **periode.as_dict()},
        "jours": jours,
        "reprise": reprise,
        "modeles": modeles,
        "classement": classement,
        "anomalies": bilan["total"]["anomalies"],
        "conflits": bilan["total"]["conflits"],
    }


def drawing() -> ModuleType:
    """The module that draws the page (``report_page``), imported on first use. Raises
    ``MissingExtra`` when pygal or Jinja2 is not installed (the ``report`` extra)."""
    return require("report", "miam_economies.api.http.report_page", "the report")


def render_html(data: Mapping[str, Any]) -> str:
    """The page of ``report_data``'s ``data`` (``report_page.render_html``): HTML5, UTF-8,
    styles and SVG inline, no script, no link. Raises ``MissingExtra`` as ``drawing``."""
    html: str = drawing().render_html(data)
    return html


def render_report(services: Services, depuis: str | None = None,
                  jusqu_au: str | None = None) -> str:
    """``render_html(report_data(...))``: what ``GET /economies/rapport`` and
    ``miam-economies rapport --html`` serve. Raises ``MissingExtra`` before reading
    anything when the ``report`` extra is not installed, else as ``report_data``."""
    page = drawing()
    html: str = page.render_html(report_data(services, depuis, jusqu_au))
    return html
