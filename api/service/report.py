"""The report's figures (``report_data``): a service use case, read from one projection
in one read (``Services.lire``, ADR-0163), never from the events. ``api.http.report``
draws them as one self-contained HTML page (ADR-0023)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from miam_economies.api.service.answers import bilan_answer, classement_answer, en_usd, prix_answer
from miam_economies.api.service.results import modeles
from miam_economies.api.service.services import Services
from miam_economies.domain.argent import usd
from miam_economies.domain.bilan import total
from miam_economies.projections.view import INCONNU

JOURNAL_FIELDS = ("preset", "format")
"""Journal fields whose taux de reprise the report ranks (contract: "le détail par preset
ou par format")."""


def report_data(services: Services, depuis: str | None = None,
                jusqu_au: str | None = None, *, today: str | None = None) -> dict[str, Any]:
    """Every figure the report shows, as JSON-ready data, from one projection in one read.

    ``depuis``/``jusqu_au`` (``YYYY-MM-DD``, inclusive) bound the period (default: every
    day with events); ``today`` (default: the current day in the projection's zone).
    Returns ``{"provenance", "economies", "total", "aujourd_hui": {"jour", "net"},
    "periode": {"depuis", "jusqu_au", figures...}, "jours": [{"jour", figures...}],
    "reprise": {field: [{"valeur", "taux_reprise", "evites", "corrections"}]} ranked by
    taux_reprise (highest first; groups without a rate left out),
    "modeles": [{"modele", "pilotage", "tours", "usd"}] by cost, "anomalies":
    {kind: events}, "conflits": versions, "classement": {field: the classement document
    (``answers.classement_answer``)} for ``preset``, and ``format`` when the journal has
    it, "prix"}``. Figures in tokens; ``usd`` (float, the model's own prices, any formula)
    null when a model has no known price.

    Money (ADR-0130): under a weighted formula, ``prix`` is the formula's
    ``provenance.prix`` (``modele_reference``, ``usd_par_million``, ``source``,
    ``sha256``), and ``periode`` and ``aujourd_hui`` have ``en_usd`` (``{"evites",
    "pilotage", "corrections", "net"}``), each model row ``en_usd: {"pilotage"}``: USD at
    the reference model's input price, exact decimal text computed from the integer sums
    (never a float). Under ``v1``/``v1-serveur`` ``prix`` is None and no ``en_usd``
    appears. Every figure is of the one projection serving when the report began, so a
    replay's switch meanwhile never pairs one formula's figures with another's price.
    Raises ``PersistenceError`` and ``ValueError`` for unsound bounds.
    """
    with services.lire() as lecture:
        bilan = bilan_answer(lecture.bilan())
        today = today or datetime.now(lecture.projection.zone).date().isoformat()
        par_jour = lecture.bilan("jour", depuis, jusqu_au)
        aujourd_hui_lu = lecture.bilan("jour", today, today)
        par_champ = {field: lecture.bilan(field) for field in JOURNAL_FIELDS}
        par_modele = lecture.bilan("modele")
        classes = {field: lecture.classement(field) for field in JOURNAL_FIELDS}
    prix = par_jour.prix
    rate = None if prix is None else prix.usd_par_million
    sommes = par_jour.groupes_sommes()
    jours = [{"jour": day, **sommes[day].as_dict()} for day in sorted(sommes)]
    periode = total(sommes.values())
    aujourd_hui = aujourd_hui_lu.groupe(today)
    reprise: dict[str, list[dict[str, Any]]] = {}
    for field, lu in par_champ.items():
        rated = [(value, figures, figures.taux_reprise)
                 for value, figures in lu.groupes_sommes().items()
                 if figures.taux_reprise is not None]
        # Highest rate first; the unknown group last among equals, then by name.
        rated.sort(key=lambda r: (-r[2], r[0] == INCONNU, r[0]))
        reprise[field] = [{"valeur": value, "taux_reprise": taux, "evites": figures.evites,
                           "corrections": figures.corrections}
                          for value, figures, taux in rated]
    rows_modeles = []
    for m in modeles(par_modele):
        row: dict[str, Any] = {"modele": m.modele, "pilotage": m.pilotage, "tours": m.tours,
                               "usd": m.usd}
        if rate is not None:
            row["en_usd"] = {"pilotage": usd(m.pilotage, rate)}
        rows_modeles.append(row)
    # The classement of preset always; of format when the journal has it (SPEC).
    classement = {field: classement_answer(lu) for field, lu in classes.items()
                  if field == "preset" or any(g.cle != INCONNU for g in lu.groupes)}
    return {
        "provenance": bilan["provenance"],
        "economies": bilan["economies"],
        "total": bilan["total"],
        "aujourd_hui": {"jour": today, "net": aujourd_hui.net,
                        **({} if rate is None
                           else {"en_usd": en_usd(aujourd_hui, rate)})},
        "periode": {"depuis": depuis or (jours[0]["jour"] if jours else None),
                    "jusqu_au": jusqu_au or (jours[-1]["jour"] if jours else None),
                    **periode.as_dict(),
                    **({} if rate is None else {"en_usd": en_usd(periode, rate)})},
        "prix": None if prix is None else prix_answer(prix),
        "jours": jours,
        "reprise": reprise,
        "modeles": rows_modeles,
        "classement": classement,
        "anomalies": bilan["total"]["anomalies"],
        "conflits": bilan["total"]["conflits"],
    }
