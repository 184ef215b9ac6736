"""The typed results of the read side (ADR-0163): what ``Services`` answers, frozen, before
any edge turns it into a wire dict (``answers``), a CSV (``csv_answers``), a CLI table or a
report. Every figure of one result comes from one projection taken once, read in one read
transaction where the backend allows (``Services.lire``), so a replay's switch can never
pair one formula's figures with another's price.

The sums shown by an edge (the total of the rows shown, a day's cells, a model's row) are
methods here, stated once: no edge re-sums a wire dict or re-parses its money.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from miam_economies.domain.bilan import Figures, FiguresModele, total
from miam_economies.domain.classement import Groupe
from miam_economies.domain.ecarts import Comparaison
from miam_economies.domain.formulas import Prix
from miam_economies.projections.view import BilanSnapshot, Groupes, Groupes2


@dataclass(frozen=True)
class BilanLu:
    """One bilan as read (SPEC, "Interfaces", ``GET /economies/bilan``).

    ``snapshot``: the projection's figures (tokens) and breakdown, one read transaction;
    ``tete``: the store's last notification id when read; ``stockes``: events stored up to
    the snapshot's position, counted by the store; ``genere_le``: when, ISO 8601 UTC;
    ``meme_source``: whether the store's event at the position is the one folded there
    (None when unknown; ADR-0105); ``journal``: MIAM's journal as joined
    (``BilanView.journal_state``), None without one; ``prix``: the formula's price table
    under a weighted formula, else None (ADR-0130); ``champ_vu``: False when ``par`` or
    ``puis`` names a journal field while no journal line with a field has been read yet,
    so that whether the field exists cannot be known (ADR-0164), else True;
    ``attente_expiree``: a wait (``?attendre=1``) or a catch-up that expired before
    the projection caught up (ADR-0104); ``rapprochement``: the summary of the sessions
    both sources saw (``session_answers.rapprochement_resume``; ADR-0177), None while no
    relevé is folded."""

    snapshot: BilanSnapshot
    tete: int
    stockes: int
    genere_le: str
    meme_source: bool | None = True
    journal: Mapping[str, object] | None = None
    prix: Prix | None = None
    champ_vu: bool = True
    attente_expiree: bool = False
    rapprochement: Mapping[str, object] | None = None

    @property
    def total(self) -> Figures:
        """Every client's figures summed (tokens)."""
        return total(self.snapshot.clients.values())

    def anomalies(self) -> dict[str, int]:
        """Events whose plugin figures differ from the server's, by kind, every client
        summed (``domain.anomalies``)."""
        out: dict[str, int] = {}
        for kinds in (self.snapshot.anomalies or {}).values():
            for kind, n in kinds.items():
                out[kind] = out.get(kind, 0) + n
        return out

    @property
    def conflits(self) -> int:
        """Re-sent ids whose content differed from the version kept, every client."""
        return sum((self.snapshot.conflits or {}).values())

    def groupes(self) -> Groupes:
        """A one-dimension breakdown's groups, ``{key: {client: cell}}`` (empty without
        one). Raises ``TypeError`` for a two-dimension breakdown (``puis``)."""
        if self.snapshot.puis is not None:
            raise TypeError("a breakdown by two dimensions: read groupes2()")
        return cast(Groupes, self.snapshot.groupes or {})

    def groupes2(self) -> Groupes2:
        """A two-dimension breakdown's groups, ``{key of par: {key of puis: {client:
        cell}}}``. Raises ``TypeError`` for one dimension."""
        if self.snapshot.puis is None:
            raise TypeError("a breakdown by one dimension: read groupes()")
        return cast(Groupes2, self.snapshot.groupes or {})

    def groupe(self, cle: str) -> Figures:
        """The figures of group ``cle`` of a one-dimension breakdown, every client summed
        (zero figures for a key without events; a model's cells count as pilotage)."""
        return total(figures(cell) for cell in self.groupes().get(cle, {}).values())

    def cellule(self, cle: str, client: str) -> Figures | None:
        """Client ``client``'s figures in group ``cle`` of a one-dimension breakdown, None
        when it has none there (a model's cell counts as pilotage)."""
        cell = self.groupes().get(cle, {}).get(client)
        return None if cell is None else figures(cell)

    def lignes(self) -> list[tuple[tuple[str, ...], str, Figures | FiguresModele]]:
        """The rows a table or a CSV shows, ``(keys, client, cell)``, in the wire answer's
        order (``answers.bilan_answer``): without a breakdown each client by name, no key;
        with one, each group's clients (``(key,)``); with two, ``(key of par, key of
        puis)``. A model's cell is its ``FiguresModele``."""
        snapshot = self.snapshot
        if snapshot.par is None:
            return [((), client, snapshot.clients[client])
                    for client in sorted(snapshot.clients)]
        if snapshot.puis is None:
            return [((a,), client, cell) for a, clients in self.groupes().items()
                    for client, cell in clients.items()]
        return [((a, b), client, cell) for a, inner in self.groupes2().items()
                for b, clients in inner.items() for client, cell in clients.items()]

    def total_des_lignes(self) -> Figures:
        """The rows of ``lignes`` summed (tokens; a model's cell counts as pilotage):
        ``total`` without a breakdown; with one, what its groups hold, so for bounded
        days the period's total (the ``bilan`` table's total row)."""
        return total(figures(cell) for _, _, cell in self.lignes())

    def par_cle(self) -> dict[str, Figures]:
        """Each key of ``par``, every client and every key of ``puis`` summed (tokens):
        each group's figures for one dimension; for ``par=preset&puis=jour`` with bounded
        days, each preset's figures over the period."""
        out: dict[str, Figures] = {}
        for keys, _, cell in self.lignes():
            out[keys[0]] = out.get(keys[0], Figures()) + figures(cell)
        return out

    def par_client(self) -> dict[str, Figures]:
        """Each client's figures over the rows of ``lignes`` (tokens), clients by name:
        its all-time figures without a breakdown; for ``par=jour`` with bounded days, its
        figures over the period."""
        out: dict[str, Figures] = {}
        for _, client, cell in self.lignes():
            out[client] = out.get(client, Figures()) + figures(cell)
        return dict(sorted(out.items()))


def figures(cell: Figures | FiguresModele) -> Figures:
    """A breakdown's cell as ``Figures`` (tokens): a model's cell (``FiguresModele``) is
    the pilotage cost of its turns (``cout``; a model saves nothing itself: ADR-0006), as
    its wire cell says (``FiguresModele.as_dict``); any other is itself."""
    return Figures(pilotage=cell.cout) if isinstance(cell, FiguresModele) else cell


@dataclass(frozen=True)
class ModeleLu:
    """One model's row of a breakdown by ``modele``, every client summed: ``pilotage``
    (the formula's cost, tokens), ``tours`` (pilotage turns) and ``usd`` (the model's own
    prices, float: each client's cell rounded to the micro-dollar, then summed; None when
    the model has no known price)."""

    modele: str
    pilotage: int
    tours: int
    usd: float | None


def modeles(lu: BilanLu) -> list[ModeleLu]:
    """The models of ``lu`` (a bilan ``par="modele"``, or ``par="modele"&puis=<period>``:
    a model's days summed, so with bounded days its figures over the period), summed over
    clients, the most costly first, then by name. ``usd``: each client's cell (its days
    summed first) at the model's prices, rounded, then summed."""
    by_model: dict[str, dict[str, FiguresModele]] = {}
    for keys, client, cell in lu.lignes():
        clients = by_model.setdefault(keys[0], {})
        clients[client] = clients.get(client, FiguresModele()) + cast(FiguresModele, cell)
    rows = []
    for modele, clients in by_model.items():
        cells = list(clients.values())
        prices = [c.usd(modele) for c in cells]
        rows.append(ModeleLu(modele, sum(c.cout for c in cells), sum(c.tours for c in cells),
                             None if any(p is None for p in prices)
                             else round(sum(cast(list[float], prices)), 6)))
    rows.sort(key=lambda m: (-m.pilotage, m.modele))
    return rows


@dataclass(frozen=True)
class ClassementLu:
    """One classement as read (SPEC, "Ranking presets: the classement").

    ``par``, ``selon`` (``taux`` or ``net``), ``minimum`` (``min`` on the wire) and
    ``apparier`` as asked; ``formule`` and ``position``: what the figures stand for;
    ``groupes``: every group in the SPEC's order (``Groupe``); ``verdicts``: one per pair
    of the first ``MAX_COMPARED`` ranked groups; ``ranked``: how many groups are ranked;
    ``prix``: the price table under a weighted formula (ADR-0130); ``champ_vu`` and
    ``attente_expiree`` as ``BilanLu``'s (for ``par`` and ``apparier``); ``depuis`` and
    ``jusqu_au`` the window asked (``YYYY-MM-DD``, inclusive; ADR-0167)."""

    par: str
    formule: str
    position: int
    minimum: int
    selon: str
    groupes: Sequence[Groupe]
    verdicts: Sequence[Comparaison]
    ranked: int
    apparier: str | None = None
    prix: Prix | None = None
    champ_vu: bool = True
    attente_expiree: bool = False
    depuis: str | None = None
    jusqu_au: str | None = None
