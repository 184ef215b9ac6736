"""The report: one self-contained HTML page of the bilan, for a person to look at.

``report_data`` gathers the figures from the projection's snapshots (never from the
events): today's net and the period's, per day (net; evites, pilotage and corrections),
the taux de reprise per journal ``preset`` and ``format`` (ranked), the cost per model,
anomalies and conflicts. ``render_html`` draws the charts with ``pygal`` as inline SVG,
its JavaScript left out, and fills a Jinja2 template shipped in the package: the page
needs no network and its Content-Security-Policy forbids any (ADR-0023).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import pygal
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup
from pygal.style import Style

from miam_economies.api.service.services import Services
from miam_economies.domain.bilan import Figures
from miam_economies.domain.instants import iso_utc
from miam_economies.projections.view import INCONNU

JOURNAL_FIELDS = ("preset", "format")
"""Journal fields whose taux de reprise the report ranks (contract: "le détail par preset
ou par format")."""

_SUMS = ("delegations", "evites", "pilotage", "corrections")

_STYLE = Style(
    background="white", plot_background="white", foreground="#333",
    foreground_strong="#111", foreground_subtle="#bbb", opacity="0.9",
    colors=("#2e7d32", "#c62828", "#ef6c00", "#1565c0", "#6a1b9a"),
    font_family="system-ui, sans-serif", label_font_size=11, major_label_font_size=11,
    legend_font_size=12, value_font_size=11,
)


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
    {kind: events}, "conflits": versions}``. Figures in tokens; ``usd`` null when a
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
        "anomalies": bilan["total"]["anomalies"],
        "conflits": bilan["total"]["conflits"],
    }


def _config(**options: Any) -> dict[str, Any]:
    # js=[]: pygal would otherwise link its tooltip script from a CDN.
    return {"js": [], "disable_xml_declaration": True, "style": _STYLE, "width": 960,
            "height": 360, "legend_at_bottom": True, "truncate_label": 40,
            "print_values": False, **options}


def _svg(chart: Any) -> Markup:
    # pygal builds the SVG with an XML library: labels and values come out escaped.
    return Markup(chart.render(is_unicode=True))


def _tokens(value: float | None) -> str:
    # A token figure is an int, printed exactly at any size; a chart hands floats.
    if value is None:
        return "-"
    return f"{value:,}" if isinstance(value, int) else f"{value:,.0f}"


def charts(data: Mapping[str, Any]) -> dict[str, Markup]:
    """The report's charts as inline SVG, by element id: ``net-par-jour`` (bars),
    ``flux-par-jour`` (evites up, pilotage and corrections down, stacked per day),
    ``reprise-<field>`` for each of ``JOURNAL_FIELDS`` (ranked horizontal bars, percent),
    ``cout-par-modele`` (pilotage tokens per model, horizontal bars)."""
    days = [d["jour"] for d in data["jours"]]
    day_labels = {"x_labels": days, "x_label_rotation": 45,
                  "show_minor_x_labels": len(days) <= 31,
                  "x_labels_major_count": min(len(days), 16) or None}
    net = pygal.Bar(**_config(title="Net per day (tokens)", show_legend=False,
                              value_formatter=_tokens, **day_labels))
    net.add("net", [d["net"] for d in data["jours"]])
    flux = pygal.StackedBar(**_config(title="evites, pilotage and corrections per day "
                                            "(tokens)", value_formatter=_tokens,
                                      **day_labels))
    flux.add("evites", [d["evites"] for d in data["jours"]])
    flux.add("pilotage (-)", [-d["pilotage"] for d in data["jours"]])
    flux.add("corrections (-)", [-d["corrections"] for d in data["jours"]])
    out = {"net-par-jour": _svg(net), "flux-par-jour": _svg(flux)}
    for field in JOURNAL_FIELDS:
        rows = data["reprise"][field]
        ranked = pygal.HorizontalBar(**_config(
            title=f"Taux de reprise per {field} (corrections / evites)", show_legend=False,
            print_values=True, value_formatter=lambda v: f"{v:.1%}",
            height=max(160, 60 + 28 * len(rows)),
            # pygal draws the first label at the bottom: reversed, the highest is on top.
            x_labels=[r["valeur"] for r in reversed(rows)]))
        ranked.add("taux_reprise", [r["taux_reprise"] for r in reversed(rows)])
        out[f"reprise-{field}"] = _svg(ranked)
    modeles = data["modeles"]
    cout = pygal.HorizontalBar(**_config(
        title="Pilotage cost per model (tokens)", show_legend=False, print_values=True,
        value_formatter=_tokens, height=max(160, 60 + 28 * len(modeles)),
        x_labels=[m["modele"] for m in reversed(modeles)]))
    cout.add("pilotage", [m["pilotage"] for m in reversed(modeles)])
    out["cout-par-modele"] = _svg(cout)
    return out


_TEMPLATES = Environment(loader=PackageLoader("miam_economies.api.http", "templates"),
                         autoescape=select_autoescape(["html"]))
_TEMPLATES.filters["tokens"] = _tokens
_TEMPLATES.filters["taux"] = lambda v: "-" if v is None else f"{v:.1%}"


def render_html(data: Mapping[str, Any]) -> str:
    """The page of ``report_data``'s ``data``: HTML5, UTF-8, styles and SVG inline, no
    script, no link, a Content-Security-Policy that forbids fetching anything."""
    return _TEMPLATES.get_template("rapport.html").render(
        data=data, charts=charts(data), genere_le=iso_utc(datetime.now(UTC)))


def render_report(services: Services, depuis: str | None = None,
                  jusqu_au: str | None = None) -> str:
    """``render_html(report_data(...))``: what ``GET /economies/rapport`` and
    ``miam-economies rapport --html`` serve. Raises as ``report_data``."""
    return render_html(report_data(services, depuis, jusqu_au))
