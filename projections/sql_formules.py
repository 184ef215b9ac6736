"""The registry of user formulas in SQL (``bilan_formules``), shared by both backends:
each formula a user set from a price file, by name, with the table as canonical JSON and
the file's checksum, so any process that opens the view rebuilds the same formula
(ADR-0131). Each function runs in the transaction the view opens."""

from __future__ import annotations

from miam_economies.domain.tarifs_fichier import FormuleEnregistree
from miam_economies.projections.sql_schema import Cursor

_COLUMNS = "nom, sha256, fichier, tarifs, enregistre_le"


def record(c: Cursor, formule: FormuleEnregistree) -> FormuleEnregistree:
    """Record ``formule`` unless a formula of that name is recorded, and return the one
    recorded (in a write transaction: concurrent callers agree; the first one wins)."""
    c.execute(f"INSERT INTO bilan_formules ({_COLUMNS}) VALUES (?, ?, ?, ?, ?) "
              "ON CONFLICT (nom) DO NOTHING",
              (formule.nom, formule.sha256, formule.fichier, formule.tarifs,
               formule.enregistre_le))
    recorded = recorded_formula(c, formule.nom)
    assert recorded is not None
    return recorded


def recorded_formula(c: Cursor, nom: str) -> FormuleEnregistree | None:
    """The user formula recorded under ``nom``, or None."""
    c.execute(f"SELECT {_COLUMNS} FROM bilan_formules WHERE nom = ?", (nom,))
    row = c.fetchone()
    return None if row is None else FormuleEnregistree(*(str(value) for value in row))


def names(c: Cursor) -> list[str]:
    """The names of every user formula recorded, sorted."""
    c.execute("SELECT nom FROM bilan_formules ORDER BY nom")
    return [str(row[0]) for row in c.fetchall()]
