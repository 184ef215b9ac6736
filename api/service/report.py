"""The report's figures (``report_data``): a service use case, read from one projection
in one read (``Services.lire``, ADR-0163), never from the events. ``api.http.report``
draws them as one self-contained HTML page (ADR-0023)."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

from miam_economies.api.service.answers import bilan_answer, classement_answer, en_usd, prix_answer
from miam_economies.api.service.results import modeles
from miam_economies.api.service.services import Services
from miam_economies.domain.argent import usd
from miam_economies.domain.bilan import Figures, total
from miam_economies.projections.view import INCONNU

JOURNAL_FIELDS = ("preset", "format")
"""Journal fields whose taux de reprise the report ranks (contract: "le détail par preset
ou par format")."""


def days(depuis: str, jusqu_au: str) -> list[str]:
    """Every day from ``depuis`` to ``jusqu_au`` (``YYYY-MM-DD``, inclusive), in order:
    the report's axis, days without events included (empty when ``jusqu_au`` is before
    ``depuis``)."""
    first, last = date.fromisoformat(depuis), date.fromisoformat(jusqu_au)
    return [(first + timedelta(days=n)).isoformat() for n in range((last - first).days + 1)]


MAX_AXIS_DAYS = 731
"""The most days the report's axis holds with the days without events (two years: its two
charts draw in about a second); a longer period is drawn by ``axis``'s fallbacks."""


def axis(first: str | None, last: str | None, with_events: list[str],
         today: str) -> list[str]:
    """The days of the report's per-day charts (ADR-0165): every day from ``first`` to
    ``last`` (``YYYY-MM-DD``, the period), a day ``with_events`` (sorted) or not; an end
    past ``today`` stops at today or the last day with events, whichever is later. When
    that is more than ``MAX_AXIS_DAYS`` days (``?depuis=1900-01-01``), the period's empty
    ends are left out (from the first to the last day with events), and if that is still
    longer, only the days with events are drawn. Empty when ``first`` or ``last`` is
    None."""
    if first is None or last is None:
        return []
    last = min(last, max(today, with_events[-1] if with_events else today))
    if (date.fromisoformat(last) - date.fromisoformat(first)).days < MAX_AXIS_DAYS:
        return days(first, last)
    if not with_events:
        return []
    first, last = max(first, with_events[0]), min(last, with_events[-1])
    if (date.fromisoformat(last) - date.fromisoformat(first)).days < MAX_AXIS_DAYS:
        return days(first, last)
    return with_events


def report_data(services: Services, depuis: str | None = None,
                jusqu_au: str | None = None, *, today: str | None = None) -> dict[str, Any]:
    """Every figure the report shows, as JSON-ready data, from one projection in one read.

    ``depuis``/``jusqu_au`` (``YYYY-MM-DD``, inclusive) bound the period (default: every
    day with events); ``today`` (default: the current day in the projection's zone).
    Returns ``{"provenance", "economies", "total", "aujourd_hui": {"jour", "net",
    "est_aujourd_hui"}, "periode": {"depuis", "jusqu_au", "bornee", "en_attente",
    figures...}, "jours": [{"jour", figures...}], "reprise": {field: [{"valeur",
    "taux_reprise", "evites", "corrections"}]} ranked by taux_reprise (highest first;
    groups without a rate left out), "modeles": [{"modele", "pilotage", "tours", "usd"}]
    by cost, "anomalies": {kind: events}, "conflits": versions, "classement": {field:
    the classement document (``answers.classement_answer``)} for ``preset``, and
    ``format`` when the journal has it, "prix", "rapprochement": the bilan's summary of
    the sessions both sources saw (null before any relevé; ADR-0177)}``. Figures in
    tokens; ``usd`` (float, the model's own prices, any formula) null when a model has
    no known price.

    The period (ADR-0165): ``jours`` has every day from ``periode.depuis`` to
    ``periode.jusqu_au``, a day without events as zeros, within ``axis``'s bounds. When a
    period is asked (``periode.bornee``), ``economies`` and ``total`` (each client's
    figures), ``reprise`` and ``modeles`` are the period's (the view keeps clients, journal
    fields and models by day); ``anomalies``, ``conflits``, the clients'
    ``anomalies``/``conflits`` and ``classement`` stay all-time (the view keeps them for the
    whole history only), and the page says so. ``aujourd_hui`` is the net of the period's
    last day when ``jusqu_au`` is asked and before ``today`` (``est_aujourd_hui`` false),
    else of ``today``. ``periode.en_attente``: the bilan's pilotages and corrections whose
    delegation has not arrived (all-time), counted in every figure but the classement's.

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
    bornee = depuis is not None or jusqu_au is not None
    # Bounded: each journal field and the models by day, summed over the period's days
    # (the fold keeps them by day: ADR-0133); else the one-dimension read, all time.
    puis = "jour" if bornee else None
    with services.lire() as lecture:
        bilan = bilan_answer(lecture.bilan())
        today = today or datetime.now(lecture.projection.zone).date().isoformat()
        shown = jusqu_au if jusqu_au is not None and jusqu_au < today else today
        par_jour = lecture.bilan("jour", depuis, jusqu_au)
        jour_affiche = lecture.bilan("jour", shown, shown)
        # A field the journal does not hold is no question of the user's (ADR-0164): its
        # chart says the journal lacks it, and it has no classement.
        champs = lecture.champs
        held = [field for field in JOURNAL_FIELDS if not champs or field in champs]
        par_champ = {field: lecture.bilan(field, depuis, jusqu_au, puis) for field in held}
        par_modele = lecture.bilan("modele", depuis, jusqu_au, puis)
        classes = {field: lecture.classement(field) for field in held}
    prix = par_jour.prix
    rate = None if prix is None else prix.usd_par_million
    sommes = par_jour.par_cle()
    first = depuis or (min(sommes) if sommes else None)
    last = jusqu_au or (max(sommes) if sommes else None)
    jours = [{"jour": day, **sommes.get(day, Figures()).as_dict()}
             for day in axis(first, last, sorted(sommes), today)]
    periode = total(sommes.values())
    affiche = jour_affiche.groupe(shown)
    reprise: dict[str, list[dict[str, Any]]] = {field: [] for field in JOURNAL_FIELDS}
    for field, lu in par_champ.items():
        rated = [(value, figures, figures.taux_reprise)
                 for value, figures in lu.par_cle().items()
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
    economies, grand_total = bilan["economies"], bilan["total"]
    if bornee:  # each client's period figures, beside its all-time anomalies and conflicts
        economies = {client: {**figures.as_dict(),
                              "anomalies": economies.get(client, {}).get("anomalies", {}),
                              "conflits": economies.get(client, {}).get("conflits", 0)}
                     for client, figures in par_jour.par_client().items()}
        grand_total = {**periode.as_dict(), "anomalies": grand_total["anomalies"],
                       "conflits": grand_total["conflits"]}
    return {
        "provenance": bilan["provenance"],
        "economies": economies,
        "total": grand_total,
        "aujourd_hui": {"jour": shown, "net": affiche.net, "est_aujourd_hui": shown == today,
                        **({} if rate is None
                           else {"en_usd": en_usd(affiche, rate)})},
        "periode": {"depuis": first, "jusqu_au": last, "bornee": bornee,
                    "en_attente": bilan["conservation"]["en_attente"],
                    **periode.as_dict(),
                    **({} if rate is None else {"en_usd": en_usd(periode, rate)})},
        "prix": None if prix is None else prix_answer(prix),
        "jours": jours,
        "reprise": reprise,
        "modeles": rows_modeles,
        "classement": classement,
        "anomalies": bilan["total"]["anomalies"],
        "conflits": bilan["total"]["conflits"],
        "rapprochement": bilan["rapprochement"],
    }
