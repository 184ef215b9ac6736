"""The live objects of one process, and the two reads every edge makes of them: the bilan
and one demande (SPEC, "Interfaces")."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from miam_economies.api.service.settings import Settings
from miam_economies.api.store.application import EventStore
from miam_economies.domain.bilan import check_bounds
from miam_economies.domain.classement import CRITERE, Echantillon, classement
from miam_economies.domain.instants import iso_utc
from miam_economies.projections.projection import BilanProjection
from miam_economies.projections.runner import CatchUpRunner

DEFAULT_MIN = 10
"""Demandes a group needs to be ranked with confidence, unless ``min`` says otherwise
(SPEC, "Ranking presets: the classement")."""

NOT_RANKED = ("jour", "modele", "demande")
"""Breakdowns the classement refuses: its unit is a demande, which these do not group
(SPEC)."""


def check_classement(par: str, minimum: int) -> None:
    """Raise ``ValueError`` unless ``par`` is ``client`` or a journal field (not ``jour``,
    ``modele``, ``demande``, nor empty, ``journal.`` prefix aside) and ``minimum`` is at
    least 1 (SPEC, "Ranking presets: the classement")."""
    if not par.removeprefix("journal.") or par in NOT_RANKED:
        raise ValueError(f"par must be client or a journal field (preset, format...), "
                         f"not {par!r}: the classement ranks groups of demandes")
    if minimum < 1:
        raise ValueError(f"min must be an integer >= 1, not {minimum}")


@dataclass(frozen=True)
class Services:
    """The live objects of one process: ``store`` (appends) and ``runner`` (keeps the
    active projection up to date, journal included; ``projection`` reads it)."""

    settings: Settings
    store: EventStore
    runner: CatchUpRunner

    @property
    def projection(self) -> BilanProjection:
        """The projection that serves now: a replay's switch, made by another process, is
        taken at the next read (ADR-0009)."""
        if self.runner.follow_active:
            self.runner.follow_switch()
        return self.runner.projection

    def bilan(self, par: str | None = None, depuis: str | None = None,
              jusqu_au: str | None = None) -> dict[str, Any]:
        """The bilan as MIAM reads it (SPEC, "Interfaces", ``GET /economies/bilan``).

        Figures come from the projection's view, never from the events: the cost is that
        of the answer, not of the history. With ``par`` (``client``, ``jour``, ``modele``,
        ``demande`` or a journal field) it adds ``par`` and ``groupes``; ``depuis`` and
        ``jusqu_au`` (``YYYY-MM-DD``, inclusive) bound the days of ``par=jour``.
        ``provenance`` says which formula, zone and position the figures stand for, and
        the store's head when read. Raises ``PersistenceError`` if a database cannot be
        read, and ``ValueError`` for unsound day bounds (``domain.bilan.check_bounds``).
        """
        check_bounds(par, depuis, jusqu_au)
        snapshot = self.projection.snapshot(par, depuis, jusqu_au)
        head = self.store.head()
        # Whether the events counted are this store's: the store's event at the position
        # must be the one folded there (a store replaced by another of any length shows;
        # the next fold rebuilds the projection: ADR-0105).
        position, identite = snapshot.position, snapshot.identite
        meme_source = (True if position == 0 else None if identite is None
                       else self.store.identity(position) == identite)
        bilan = snapshot.as_dict(head, self.store.count_up_to(position, head),
                                 iso_utc(datetime.now(UTC)), meme_source)
        if self.runner.journal is not None:
            bilan["provenance"]["journal"] = self.runner.journal.state()
        return bilan

    def classement(self, par: str, minimum: int = DEFAULT_MIN) -> dict[str, Any]:
        """The classement of the groups of ``par`` (SPEC, "Ranking presets: the
        classement"): ``{"par", "formule", "position", "min", "critere", "groupes"}``,
        each group's exact sums (tokens), ratios and 95 % intervals (ADR-0072).

        Read from the projection's samples, never from the events (ADR-0073): its cost is
        that of the groups, not of the history. Raises ``ValueError`` for a ``par`` or
        ``minimum`` the SPEC refuses (``check_classement``), ``PersistenceError`` when a
        database cannot be read.
        """
        check_classement(par, minimum)
        projection = self.projection
        position, samples = projection.view.samples(projection.tracking_name, par)
        groupes = classement({cle: Echantillon(*sums) for cle, sums in samples.items()},
                             minimum)
        return {"par": par, "formule": projection.formule.name, "position": position,
                "min": minimum, "critere": CRITERE,
                "groupes": [groupe.as_dict() for groupe in groupes]}

    def demande(self, demande_id: str) -> dict[str, Any] | None:
        """One demande's figures (SPEC, ``GET /economies/demandes/{id}``), or None for an
        id never seen. Should two clients share the id, the first by name is given and
        ``autres_clients`` lists the others."""
        projection = self.projection
        entries = projection.view.demande(projection.tracking_name, demande_id)
        if not entries:
            return None
        first = entries[0]
        if len(entries) > 1:
            first["autres_clients"] = [e["client"] for e in entries[1:]]
        return first


