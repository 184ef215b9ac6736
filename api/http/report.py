"""The report: one self-contained HTML page of the bilan, for a person to look at.

``api.service.report.report_data`` gathers the figures from one read of the projection
(never from the events): today's net and the period's, per day (net; evites, pilotage
and corrections), the taux de reprise per journal ``preset`` and ``format`` (ranked), the
classement of presets (and formats) with its intervals, the cost per model, anomalies and
conflicts; under a weighted formula, the period's and today's figures and each model's pilotage in
USD too, as exact decimal text (ADR-0130). ``report_page`` draws them: charts as inline
SVG by ``pygal`` in a Jinja2 template shipped in the package; the page needs no network
and its Content-Security-Policy forbids any (ADR-0023).

pygal and Jinja2 are the ``report`` extra's (ADR-0044) and are imported only when a page
is drawn: importing the routes leaves the host's import system as it was (pygal appends
a hook to ``sys.meta_path``), and a host without the extra gets ``MissingExtra``, which
the routes answer 501.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import ModuleType
from typing import Any

from miam_economies.api.extras import require
from miam_economies.api.service.report import report_data
from miam_economies.api.service.services import Services


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
