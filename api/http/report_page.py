"""The report page drawn: ``charts`` as inline SVG by ``pygal`` (its JavaScript left out)
and ``render_html`` filling the Jinja2 template shipped in the package (ADR-0023).

pygal and Jinja2 come with the ``report`` extra (ADR-0044): ``report`` imports this
module only when a page is drawn, never when the routes are. pygal appends an import hook
of its own to ``sys.meta_path`` when it is imported (for its ``pygal.maps`` plugins, which
the report does not use); it is taken off again here, so that drawing a report leaves a
host's import system as it was: with that hook, a failed optional import anywhere in the
host's process becomes an ``ImportWarning`` under ``-W error`` (Kozea/pygal PR #532).
"""

from __future__ import annotations

import re
import sys
import warnings
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup, escape

from miam_economies.api.service.report import JOURNAL_FIELDS
from miam_economies.domain.argent import dollars
from miam_economies.domain.instants import iso_utc
from miam_economies.domain.verdict_words import derive_phrases, lettres, phrases

with warnings.catch_warnings():
    # While pygal's hook is on sys.meta_path, every import warns (it has no find_spec).
    warnings.simplefilter("ignore", ImportWarning)
    import pygal
    from pygal.style import Style
sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, pygal.PluginImportFixer)]

GAIN, LOSS = "#2e7d32", "#c62828"
"""A net's colours: green above zero, red below (the cards' ``negative`` red too)."""

_STYLE = Style(
    background="white", plot_background="white", foreground="#333",
    foreground_strong="#111", foreground_subtle="#bbb", opacity="0.9",
    colors=(GAIN, LOSS, "#ef6c00", "#1565c0", "#6a1b9a"),
    font_family="system-ui, sans-serif", label_font_size=11, major_label_font_size=11,
    legend_font_size=12, value_font_size=11,
)


def _config(**options: Any) -> dict[str, Any]:
    # js=[]: pygal would otherwise link its tooltip script from a CDN.
    return {"js": [], "disable_xml_declaration": True, "style": _STYLE, "width": 960,
            "height": 360, "legend_at_bottom": True, "truncate_label": 40,
            "print_values": False, **options}


_SCRIPT = re.compile(r"<script\b[^>]*>.*?</script>", re.S)
"""pygal's inline ``<script>`` blocks (its tooltips' configuration, emitted even with
``js=[]``): dead under the page's CSP, taken out so that the page holds no script."""


def _svg(chart: Any) -> Markup:
    # pygal builds the SVG with an XML library: labels and values come out escaped, so
    # no label can open a <script> of its own that the pattern would cut in two.
    return Markup(_SCRIPT.sub("", chart.render(is_unicode=True)))


def _tokens(value: float | None) -> str:
    # A token figure is an int, printed exactly at any size; a chart hands floats.
    if value is None:
        return "-"
    return f"{value:,}" if isinstance(value, int) else f"{value:,.0f}"


def _axis_dollars(value: float) -> str:
    # A chart's axis ticks are floats (pygal's scale), never a figure: at most six
    # decimals, as many as they need.
    text = f"{value:,.6f}".rstrip("0")
    return "$" + (text + "00" if text.endswith(".") else text)


def money_chart(modeles: list[Mapping[str, Any]], reference: str) -> Markup:
    """Pilotage per model in USD at ``reference``'s prices, horizontal bars: each
    ``en_usd.pilotage`` turned into a float for drawing only, each bar labelled with its
    exact text (``domain.argent.dollars``)."""
    chart = pygal.HorizontalBar(**_config(
        title=f"Pilotage cost per model (USD at {reference}'s prices)", show_legend=False,
        print_values=True, value_formatter=_axis_dollars,
        height=max(160, 60 + 28 * len(modeles)),
        x_labels=[m["modele"] for m in reversed(modeles)]))
    chart.add("pilotage (USD)", [
        None if "en_usd" not in m else
        {"value": float(m["en_usd"]["pilotage"]),
         "formatter": lambda _value, text=m["en_usd"]["pilotage"]: dollars(text)}
        for m in reversed(modeles)])
    return _svg(chart)


def charts(data: Mapping[str, Any]) -> dict[str, Markup]:
    """The report's charts as inline SVG, by element id: ``net-par-jour`` (bars, a
    negative day in ``LOSS`` red; every day of ``data["jours"]``, zeros included),
    ``flux-par-jour`` (evites up, pilotage and corrections down, stacked per day),
    ``reprise-<field>`` for each of ``JOURNAL_FIELDS`` (ranked horizontal bars, percent),
    ``cout-par-modele`` (pilotage tokens per model, horizontal bars), under a weighted
    formula (``data["prix"]``) ``cout-par-modele-usd`` (``money_chart``), and
    ``classement-<field>`` for each classement (``interval_chart``)."""
    days = [d["jour"] for d in data["jours"]]
    day_labels = {"x_labels": days, "x_label_rotation": 45,
                  "show_minor_x_labels": len(days) <= 31,
                  "x_labels_major_count": min(len(days), 16) or None}
    net = pygal.Bar(**_config(title="Net per day (tokens)", show_legend=False,
                              value_formatter=_tokens, **day_labels))
    # A day that lost tokens is drawn red, below the axis (ADR-0165).
    net.add("net", [d["net"] if d["net"] >= 0 else {"value": d["net"], "color": LOSS}
                    for d in data["jours"]])
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
    if data.get("prix") is not None:
        out["cout-par-modele-usd"] = money_chart(modeles, data["prix"]["modele_reference"])
    for field, ranked in data.get("classement", {}).items():
        out[f"classement-{field}"] = interval_chart(ranked, field)
    return out


_ROW = 30  # px per group of the interval chart
_LEFT, _RIGHT, _WIDTH = 200, 130, 960


def interval_chart(ranked: Mapping[str, Any], field: str) -> Markup:
    """A classement document (``Services.classement``) as an inline SVG, one row a group
    in its order: the 95 % interval of its criterion (taux de reprise in percent, or net
    per demande in tokens) as a line, running to the edge as an arrow where the data give
    no high end yet; the figure as a dot; the rank before the key (unranked groups grey);
    after the figure, the letters of the sets of groups that cannot be told apart
    (``domain.verdict_words.lettres``): rows sharing a letter are seen together. Labels
    are escaped; no script."""
    groupes = ranked["groupes"]
    if not groupes:
        return Markup("")
    taux = ranked["critere"] == "taux_reprise"
    title = (f"Taux de reprise by {field}, 95 % intervals" if taux
             else f"Net per demande by {field}, 95 % intervals (tokens)")
    name = ranked["critere"]
    values = [v for g in groupes
              for v in (*(g[f"intervalle_{name}"] or ()), g[name]) if v is not None]
    low, high = float(min([0.0, *values])), float(max([0.0, *values]))
    span = (high - low) or 1.0
    letters = lettres([g["cle"] for g in groupes if g["rang"] is not None],
                      ranked["comparaisons"])

    def x(value: float) -> float:
        return _LEFT + (value - low) / span * (_WIDTH - _LEFT - _RIGHT)

    def label(value: float) -> str:
        return f"{value:.1%}" if taux else _tokens(value)

    height = 50 + _ROW * len(groupes)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_WIDTH} {height}" '
             f'role="img" aria-label="{escape(title)}" font-family="system-ui, sans-serif" '
             'font-size="12">',
             f'<text x="{_WIDTH / 2}" y="16" text-anchor="middle" font-size="14">'
             f'{escape(title)}</text>',
             f'<line x1="{x(0):.1f}" y1="26" x2="{x(0):.1f}" y2="{height - 14}" '
             'stroke="#bbb" stroke-dasharray="4 3"/>',
             f'<text x="{x(0):.1f}" y="{height - 2}" text-anchor="middle" fill="#666">0</text>']
    for i, g in enumerate(groupes):
        y = 40 + _ROW * i
        colour = "#1565c0" if g["rang"] is not None else "#9e9e9e"
        # An unranked group (too few demandes, or "(inconnu)") has no rank to print.
        rang = "" if g["rang"] is None else f'{g["rang"]}. '
        parts.append(f'<g class="groupe" data-cle="{escape(g["cle"])}">'
                     f'<text x="{_LEFT - 10}" y="{y + 4}" text-anchor="end">{rang}'
                     f'{escape(g["cle"])} ({g["demandes"]:,})</text>')
        interval = g[f"intervalle_{name}"]
        if interval is not None:
            end = _WIDTH - _RIGHT if interval[1] is None else x(interval[1])
            parts.append(f'<line class="intervalle" x1="{x(interval[0] or 0.0):.1f}" '
                         f'y1="{y}" x2="{end:.1f}" y2="{y}" stroke="{colour}" '
                         'stroke-width="3"/>')
            if interval[1] is None:  # no high end yet: an arrow to the edge
                parts.append(f'<path class="ouvert" d="M{end - 8:.1f},{y - 5} L{end:.1f},'
                             f'{y} L{end - 8:.1f},{y + 5}" fill="none" stroke="{colour}" '
                             'stroke-width="2"/>')
        figure = g[name]
        text = "no taux" if figure is None else label(figure)
        if figure is not None:
            parts.append(f'<circle cx="{x(figure):.1f}" cy="{y}" r="5" fill="{colour}"/>')
        parts.append(f'<text x="{_WIDTH - _RIGHT + 12}" y="{y + 4}" fill="#444">{text}'
                     f'</text><text class="lettres" x="{_WIDTH - 12}" y="{y + 4}" '
                     f'text-anchor="end" font-weight="bold" fill="{colour}">'
                     f'{escape(letters.get(g["cle"], ""))}</text></g>')
    parts.append("</svg>")
    return Markup("".join(parts))


_TEMPLATES = Environment(loader=PackageLoader("miam_economies.api.http", "templates"),
                         autoescape=select_autoescape(["html"]))
_TEMPLATES.filters["tokens"] = _tokens
_TEMPLATES.filters["dollars"] = dollars
_TEMPLATES.filters["taux"] = lambda v: "-" if v is None else f"{v:.1%}"
_TEMPLATES.filters["phrases"] = lambda doc: [*phrases(
    [g["cle"] for g in doc["groupes"] if g["rang"] is not None], doc["comparaisons"]),
    *derive_phrases(doc["groupes"], doc["critere"])]


def render_html(data: Mapping[str, Any]) -> str:
    """The page of ``report_data``'s ``data``: HTML5, UTF-8, styles and SVG inline, no
    script, no link, a Content-Security-Policy that forbids fetching anything."""
    return _TEMPLATES.get_template("rapport.html").render(
        data=data, charts=charts(data), genere_le=iso_utc(datetime.now(UTC)))
