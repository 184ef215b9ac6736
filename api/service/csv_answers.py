"""The bilan's and the classement's rows as CSV (issue 24, point 5; ADR-0134): pure
functions of the typed results (``results.BilanLu``, ``ClassementLu``; ADR-0163), their
columns from the types (a weighted formula's ``prix``, ``Groupe``'s fields), never from
which keys a dict holds; so every edge (``?format=csv``, ``Accept: text/csv``, the CLI's
``--csv``) gives the same bytes for the same answer, and the same values as its JSON
(``answers``: the money made by the same functions).

RFC 4180 as the standard library's ``csv`` writes it (``\\r\\n`` line ends, a field quoted
when it holds a comma, a quote or a line end), UTF-8 without a byte-order mark, a header
row naming the columns, then one row per group. Integers are written as Python writes
them, never through a float, so sums past 2^63 stay exact (ADR-0051); a ratio or a bound
as ``repr`` of its float (the shortest text that reads back to the same float); money as
the exact decimal text the answer carries (ADR-0130); null as an empty cell; booleans as
JSON spells them. A text cell that comes from user data (a group's key, a client's name:
MIAM's journal and the plugin write them) and begins with a character a spreadsheet takes
for a formula gets a leading ``'`` (OWASP, "CSV Injection"; ASVS 1.2.10); a numeric cell
never does.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Sequence
from dataclasses import fields
from typing import Any

from miam_economies.api.service.answers import GROUPE_EN_USD, en_usd, groupe_en_usd
from miam_economies.api.service.results import BilanLu, ClassementLu, figures
from miam_economies.domain.bilan import FIGURES, Figures, FiguresModele
from miam_economies.domain.classement import Groupe

MODELE = ("tours", "input_tokens", "output_tokens", "cache_read_input_tokens",
          "cache_creation_input_tokens", "usd")
"""A model cell's extra columns (``FiguresModele.as_dict``): its turns, the four usage
counters (tokens) and ``usd`` (a float, or null without a known price)."""

EN_USD = ("evites", "pilotage", "corrections", "net")
"""The figures a weighted formula also gives in USD (``en_usd``, ADR-0130): columns
``<figure>_usd``."""

FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\0")
"""First characters that make a spreadsheet read a cell as a formula (OWASP, "CSV
Injection"; NUL from ASVS 1.2.10)."""

INTERVALS = frozenset(f.name for f in fields(Groupe) if "Intervalle" in str(f.type))
"""The ``Groupe`` fields that are a ``[low, high]`` pair on the wire (``Groupe.as_dict``):
two columns each."""

_DECIMAL = re.compile(r"-?[0-9]+(\.[0-9]+)?\Z")


def text_cell(value: str) -> str:
    """A text cell from user data: ``value``, with a leading ``'`` when it begins with a
    ``FORMULA_START`` character, so a spreadsheet shows it rather than evaluating it."""
    return "'" + value if value.startswith(FORMULA_START) else value


def number_cell(value: Any) -> str:
    """A figure's cell: an ``int`` in full (never through a float), a ``float`` as its
    ``repr``, a ``bool`` as ``true``/``false``, None as empty, and a ``str`` (money: exact
    decimal text, ADR-0130) as is when it is a decimal number, else as a ``text_cell``.
    Raises ``TypeError`` for anything else (a list or a dict is no cell)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return value if _DECIMAL.match(value) else text_cell(value)
    raise TypeError(f"no CSV cell for a {type(value).__name__}")


def _write(header: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")  # RFC 4180, section 2.1
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def bilan_csv(lu: BilanLu) -> str:
    """The bilan ``lu`` as CSV, one row per client and group, in the wire answer's order
    (``answers.bilan_answer``): ``client,<FIGURES>`` without a breakdown (every client;
    no total row, a spreadsheet sums); ``<par>,client,<FIGURES>`` for a breakdown;
    ``<par>,<puis>,client,<FIGURES>`` for two dimensions. Each key column is named by the
    text of ``par`` (or ``puis``) as given, and left out when that text is ``client`` (it
    repeats the client column); one whose name another column has is written
    ``journal.<name>`` (how the query reaches such a journal field). With ``modele`` as
    ``par`` or ``puis``, the ``MODELE`` columns follow (``FiguresModele``: turns, usage
    counters, ``usd`` at the model's own prices); under a weighted formula (``lu.prix``,
    ADR-0130), the ``<figure>_usd`` columns of ``EN_USD`` close the row, exact decimal
    text (``answers.en_usd``; a model's cell: its pilotage)."""
    snapshot = lu.snapshot
    dimensions = [d for d in (snapshot.par, snapshot.puis) if d is not None]
    modele = "modele" in dimensions
    rate = None if lu.prix is None else lu.prix.usd_par_million
    columns = [*FIGURES, *(MODELE if modele else ()),
               *((f"{name}_usd" for name in EN_USD) if rate is not None else ())]
    kept = [i for i, d in enumerate(dimensions) if d != "client"]
    taken = {"client", *columns}
    header = [text_cell(f"journal.{d}" if d in taken else d)  # query text: user data too
              for d in (dimensions[i] for i in kept)]

    def row(keys: tuple[str, ...], client: str, cell: Figures | FiguresModele) -> list[str]:
        out = [text_cell(keys[i]) for i in kept] + [text_cell(client)]
        shown = figures(cell)
        wire = shown.as_dict()
        out += [number_cell(wire[name]) for name in FIGURES]
        if modele:
            out += (["", *("" for _ in MODELE[1:-1]), ""]
                    if not isinstance(cell, FiguresModele) else
                    [number_cell(cell.tours),
                     *(number_cell(getattr(cell, name)) for name in MODELE[1:-1]),
                     number_cell(cell.usd(keys[dimensions.index("modele")]))])
        if rate is not None:
            money = en_usd(shown, rate)
            out += [number_cell(money[name]) for name in EN_USD]
        return out

    return _write([*header, "client", *columns], (row(*r) for r in lu.lignes()))


DERIVE_COLUMNS = ("derive_depuis", "derive_avant", "derive_apres", "derive_bas",
                  "derive_haut")
"""A classement group's ``derive`` in CSV: the first day of its recent period, the
criterion before and since, the interval of their difference (ADR-0167)."""


def classement_csv(lu: ClassementLu) -> str:
    """The classement ``lu`` as CSV, one row per group in its order: every field of
    ``domain.classement.Groupe`` in its order, each interval ``(low, high)`` as two
    columns ``<name>_bas,<name>_haut`` (both empty for a null interval, one for a null
    bound), ``cle`` as a ``text_cell``. Under a weighted formula (``lu.prix``, ADR-0130)
    a column ``<name>_usd`` for each of ``answers.GROUPE_EN_USD`` follows, in its
    order (an interval's as ``_usd_bas``, ``_usd_haut``): the header is the same whether
    or not there are groups. ``derive`` is five columns (``DERIVE_COLUMNS``, empty for a
    stable group). The pairwise verdicts are not in this table: they are pairs of groups,
    not groups (the JSON answer has them)."""
    names = [f.name for f in fields(Groupe)]
    money = () if lu.prix is None else GROUPE_EN_USD
    header: list[str] = []
    for name in names:
        header += ([f"{name}_bas", f"{name}_haut"] if name in INTERVALS else
                   list(DERIVE_COLUMNS) if name == "derive" else [name])
    for key in money:
        header += [f"{key}_usd_bas", f"{key}_usd_haut"] if key in INTERVALS else [f"{key}_usd"]

    def pair(value: Sequence[Any] | None) -> list[str]:
        return ["", ""] if value is None else [number_cell(b) for b in value]

    def row(g: Groupe) -> list[str]:
        out: list[str] = []
        for name in names:
            value = getattr(g, name)
            if name == "derive":
                d = g.derive
                out += (["", "", "", "", ""] if d is None else
                        [d.depuis, number_cell(d.avant), number_cell(d.apres),
                         *pair(d.intervalle)])
                continue
            out += (pair(value) if name in INTERVALS else
                    [text_cell(value) if name == "cle" else number_cell(value)])
        if lu.prix is not None:
            en_usd_g = groupe_en_usd(g, lu.prix)
            for key in money:
                out += (pair(en_usd_g[key]) if key in INTERVALS
                        else [number_cell(en_usd_g[key])])
        return out

    return _write(header, (row(g) for g in lu.groupes))
