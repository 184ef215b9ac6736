"""The report: one self-contained HTML page of the bilan, for a person to look at.

``report_data`` gathers the figures from the projection's snapshots (never from the
events): today's net and the period's, per day (net; evites, pilotage and corrections),
the taux de reprise per journal ``preset`` and ``format`` (ranked), the classement of
presets (and formats) with its intervals, the cost per model, anomalies and conflicts;
under a weighted formula, the period's and today's figures and each model's pilotage in
USD too, as exact decimal text (ADR-0130). ``report_page`` draws them: charts as inline
SVG by ``pygal`` in a Jinja2 template shipped in the package; the page needs no network
and its Content-Security-Policy forbids any (ADR-0023).

pygal and Jinja2 are the ``report`` extra's (ADR-0044) and are imported only when a page
is drawn: importing the routes leaves the host's import system as it was (pygal appends
a hook to ``sys.meta_path``), and a host without the extra gets ``MissingExtra``, which
the routes answer 501.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from fractions import Fraction
from types import ModuleType
from typing import Any

from miam_economies.api.extras import require
from miam_economies.api.service.answers import en_usd
from miam_economies.api.service.services import Services
from miam_economies.domain.argent import usd
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


def _rate(answer: Mapping[str, Any]) -> Fraction | None:
    """USD per million weighted tokens of the formula ``answer``'s figures were folded
    under (its ``provenance.prix``, exact decimal text read back exactly), or None under a
    formula of token counts (``v1``, ``v1-serveur``). Read from each answer rather than
    once: a replay may switch the formula between two reads of one report."""
    prix = answer["provenance"].get("prix")
    return None if prix is None else Fraction(prix["usd_par_million"])


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
    (``Services.classement``)} for ``preset``, and ``format`` when the journal has it,
    "prix"}``. Figures in tokens; ``usd`` (float, the model's own prices, any formula)
    null when a model has no known price.

    Money (ADR-0130): under a weighted formula, ``prix`` is the period's
    ``provenance.prix`` (``modele_reference``, ``usd_par_million``, ``source``,
    ``sha256``), and ``periode`` and ``aujourd_hui`` have ``en_usd`` (``{"evites",
    "pilotage", "corrections", "net"}``), each model row ``en_usd: {"pilotage"}``: USD at
    the reference model's input price, exact decimal text computed from the integer sums
    (never a float). Under ``v1``/``v1-serveur`` ``prix`` is None and no ``en_usd``
    appears. Raises ``PersistenceError`` and ``ValueError`` for unsound bounds.
    """
    bilan = services.bilan()
    today = today or datetime.now(services.projection.zone).date().isoformat()
    par_jour = services.bilan("jour", depuis, jusqu_au)
    jours = [{"jour": day, **_summed(clients.values()).as_dict()}
             for day, clients in sorted(par_jour["groupes"].items())]
    periode = _summed(jours)
    rate = _rate(par_jour)
    aujourd_hui_lu = services.bilan("jour", today, today)
    aujourd_hui = _summed(aujourd_hui_lu["groupes"].get(today, {}).values())
    rate_today = _rate(aujourd_hui_lu)
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
    par_modele = services.bilan("modele")
    rate_modeles = _rate(par_modele)
    for modele, clients in par_modele["groupes"].items():
        cells = list(clients.values())
        prices = [c.get("usd") for c in cells]
        pilotage = sum(int(c["pilotage"]) for c in cells)
        row: dict[str, Any] = {"modele": modele, "pilotage": pilotage,
                               "tours": sum(int(c.get("tours", 0)) for c in cells),
                               "usd": None if any(p is None for p in prices)
                               else round(sum(prices), 6)}
        if rate_modeles is not None:
            row["en_usd"] = {"pilotage": usd(pilotage, rate_modeles)}
        modeles.append(row)
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
        "aujourd_hui": {"jour": today, "net": aujourd_hui.net,
                        **({} if rate_today is None
                           else {"en_usd": en_usd(aujourd_hui, rate_today)})},
        "periode": {"depuis": depuis or (jours[0]["jour"] if jours else None),
                    "jusqu_au": jusqu_au or (jours[-1]["jour"] if jours else None),
                    **periode.as_dict(),
                    **({} if rate is None else {"en_usd": en_usd(periode, rate)})},
        "prix": par_jour["provenance"].get("prix"),
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
