"""Prices a user sets (issue 24, point 2; ADR-0131): ``replay --formule NAME --tarifs
FILE`` through the command line on a real data directory (SQLite, then PostgreSQL), the
bilan against an independent recomputation from the file's prices, ``compare`` beside
``pondere-v2``, the recorded checksum, a restart folding new events under the recorded
table with the file gone, and every refusal leaving the store and the view unchanged.

The expected figures are recomputed here from the prices this test writes, with its own
arithmetic (Fractions and JavaScript's rounding), not with the code under test.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sqlite3
import subprocess
import sys
from collections import defaultdict
from contextlib import closing
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import psycopg

from miam_economies.api.service.answers import bilan_answer
from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.settings import Settings
from miam_economies.domain import tarifs_v2
from miam_economies.domain.acceptance import accept_batch
from miam_economies.projections.sqlite_view import SCHEMA_VERSION
from tests.conftest import TOKEN
from tests.corpus import generate

SCRIPT = Path(sys.executable).with_name("miam-economies")
REFERENCE = "claude-sonnet-4-5"
CHANGED = "claude-opus-5"
"""The one model whose prices the file changes from pondere-v2's table."""
KINDS = ("input", "output", "cache_write", "cache_read")
Prices = dict[str, dict[str, Fraction]]


def file_prices() -> Prices:
    """pondere-v2's table (``domain.tarifs_v2``), ``CHANGED`` at other prices (its cache
    read and output weigh otherwise against its input)."""
    prices = {name: {kind: getattr(row, kind) for kind in KINDS}
              for name, row in tarifs_v2.TARIFS.items()}
    assert prices[CHANGED] == {"input": 5, "output": 25, "cache_write": Fraction(25, 4),
                               "cache_read": Fraction(1, 2)}
    prices[CHANGED] = {"input": Fraction(7), "output": Fraction(42),
                       "cache_write": Fraction(35, 4), "cache_read": Fraction(3, 10)}
    return prices


def toml_text(prices: Prices) -> str:
    """``prices`` as a price file, each price as exact decimal text."""
    lines = ["# USD per million tokens: pondere-v2's table, Opus 5 changed",
             f'reference = "{REFERENCE}"', ""]
    for name, row in prices.items():
        lines.append(f"[modeles.{json.dumps(name)}]")
        for kind in KINDS:
            value = Decimal(row[kind].numerator) / Decimal(row[kind].denominator)
            lines.append(f"{kind} = {value:f}")
        lines.append("")
    return "\n".join(lines)


def js_round(value: Fraction) -> int:
    """JavaScript's ``Math.round``: halves up."""
    return math.floor(value + Fraction(1, 2))


def expected(events: list[dict[str, Any]], prices: Prices) -> dict[str, dict[str, int]]:
    """Each client's figures under the weighted rule on ``prices``: tokens in input tokens
    of ``REFERENCE``, each event rounded once; a pilotage at its model's prices (a table
    name, alone or dated), a delegation and a correction at the reference's."""
    unit = prices[REFERENCE]["input"]
    ref = prices[REFERENCE]
    out: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    seen: set[str] = set()
    for e in events:
        if e["id"] in seen:
            continue  # the first version is kept
        seen.add(e["id"])
        figures = out[e["client"]]
        if e["type"] == "delegation":
            est = e["estimation"]
            lus = max(0, e["tokens_entree"] - est["consigne"])
            ecrits = e["tokens_sortie"]
            rendus = ecrits if e["retour"] == "complet" else est["rendus"]
            if e["agent_id"] is None:
                read, written = lus - rendus, ecrits - est["consigne"]
            else:
                read, written = lus, ecrits
            figures["delegations"] += 1
            figures["evites"] += js_round((read * ref["input"] + written * ref["output"])
                                          / unit)
        elif e["type"] == "pilotage":
            dated = re.fullmatch(r"(.+)-(\d{8}|latest)", e["modele"])
            row = prices.get(e["modele"]) or (prices.get(dated.group(1)) if dated else None)
            row = row or ref
            u = e["usage"]
            figures["pilotage"] += js_round(
                (u["input_tokens"] * row["input"] + u["output_tokens"] * row["output"]
                 + u["cache_creation_input_tokens"] * row["cache_write"]
                 + u["cache_read_input_tokens"] * row["cache_read"]) / unit)
        else:
            figures["corrections"] += js_round(
                (e["tokens_lus"] * ref["input"] + e["tokens_ecrits"] * ref["output"]) / unit)
    for figures in out.values():
        figures["net"] = figures["evites"] - figures["pilotage"] - figures["corrections"]
    return {client: dict(figures) for client, figures in out.items()}


def cli(data: Path, url: str | None, *args: str) -> subprocess.CompletedProcess[str]:
    flags = ["--data", str(data)] + (["--database-url", url] if url else [])
    return subprocess.run([str(SCRIPT), *args, *flags], capture_output=True, text=True,
                          timeout=300, check=False)


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr
    return done.stdout


def load(settings: Settings, events: list[dict[str, Any]]) -> None:
    with open_services(settings, run_projections=False) as services:
        for i in range(0, len(events), 500):
            services.store.append(accept_batch({"evenements": events[i:i + 500]}))
        services.runner.catch_up()


def served(settings: Settings) -> tuple[dict[str, Any], Any]:
    """The bilan as a restarted process serves it, caught up, and its formula."""
    with open_services(settings, run_projections=False) as services:
        services.runner.catch_up()
        return bilan_answer(services.bilan()), services.projection.formule


def figures_of(bilan: dict[str, Any]) -> dict[str, dict[str, int]]:
    keys = ("delegations", "evites", "pilotage", "corrections", "net")
    return {c: {k: f[k] for k in keys} for c, f in bilan["economies"].items()}


def state(settings: Settings) -> dict[str, Any]:
    """Everything stored: the SQLite files' bytes, or every PostgreSQL table's rows."""
    url = settings.database_url
    if url is None:
        return {f.name: hashlib.sha256(f.read_bytes()).hexdigest()
                for f in sorted(settings.data.glob("*.sqlite"))}
    rows: dict[str, Any] = {}
    with psycopg.connect(url, autocommit=True) as db:
        tables = [r[0] for r in db.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")]
        for table in tables:
            rows[table] = sorted(map(repr, db.execute(f'SELECT * FROM "{table}"')))
    assert "bilan_formules" in rows and "economies_events" in rows
    return rows


class UserPrices:
    backend = "sqlite"

    def test_a_price_file_round_trips_through_replay_compare_and_a_restart(
            self, tmp_path: Path, database_url: str | None) -> None:
        data = tmp_path / "data"
        settings = Settings(data=data, token=TOKEN, fuseau="UTC", database_url=database_url)
        first = generate(1_500, seed=24)
        load(settings, first)
        prices = file_prices()
        prix = tmp_path / "mes-prix.toml"
        prix.write_text(toml_text(prices), encoding="utf-8")
        sha256 = hashlib.sha256(prix.read_bytes()).hexdigest()

        out = ok(cli(data, database_url, "replay", "--formule", "mes-prix",
                     "--tarifs", str(prix)))
        assert sha256 in out and "bilan:mes-prix:UTC" in out

        # (a) The bilan is the weighted rule on the file's prices, recomputed here.
        bilan, formula = served(settings)
        assert bilan["formule"] == "mes-prix"
        assert figures_of(bilan) == expected(first, prices)
        # (c) The table is recorded with the file's checksum and name.
        assert formula.prix.sha256 == sha256 and formula.prix.fichier == "mes-prix.toml"
        assert formula.prix.source == "price file mes-prix.toml"
        assert formula.prix.catalogue.tarifs[CHANGED].output == 42

        # (b) compare sets it beside pondere-v2: the changed model's turns weigh otherwise,
        # every other model's the same, and the delegations alike (same reference).
        compared = json.loads(ok(cli(data, database_url, "compare", "--formules",
                                     "pondere-v2,mes-prix", "--json")))
        assert compared["formules"] == ["pondere-v2", "mes-prix"]
        v2 = {name: {kind: getattr(row, kind) for kind in KINDS}
              for name, row in tarifs_v2.TARIFS.items()}
        for client, by_formula in ((c, g[c]) for c, g in compared["groupes"].items()):
            assert by_formula["mes-prix"]["net"] == expected(first, prices)[client]["net"]
            assert by_formula["pondere-v2"]["net"] == expected(first, v2)[client]["net"]
        per_model = json.loads(ok(cli(data, database_url, "compare", "--formules",
                                      "pondere-v2,mes-prix", "--par", "modele", "--json")))
        for modele, clients in per_model["groupes"].items():
            for cell in clients.values():
                same = cell["mes-prix"]["pilotage"] == cell["pondere-v2"]["pilotage"]
                assert same == (modele != CHANGED), modele
        assert CHANGED in per_model["groupes"]

        # (f) Each refusal names what is wrong and changes nothing anywhere.
        before = state(settings)
        bad = tmp_path / "bad.toml"
        refusals = {
            "bad.toml:5: not TOML": ('reference = "a"\n\n[modeles.a]\ninput = 1\noutput =\n',
                                     "mes-autres"),
            "bad.toml:4: modeles.a.input: negative": (
                'reference = "b"\n\n[modeles.a]\ninput = -1\n', "mes-autres"),
            "bad.toml:3: modeles.a.cache_read: missing price": (
                'reference = "a"\n\n[modeles.a]\ninput = 1\noutput = 5\n'
                "cache_write = 1.25\n", "mes-autres"),
            "'pondere-v2' is a built-in formula's name": (prix.read_text(), "pondere-v2"),
            "'pondere-v3' is reserved for releases": (prix.read_text(), "pondere-v3"),
            "cannot name a formula": (prix.read_text(), "Mes Prix"),
            "formula 'mes-prix' is recorded from mes-prix.toml": (
                prix.read_text().replace("42", "43"), "mes-prix"),
        }
        for message, (text, name) in refusals.items():
            bad.write_text(text, encoding="utf-8")
            done = cli(data, database_url, "replay", "--formule", name, "--tarifs", str(bad))
            assert done.returncode == 1 and message in done.stderr, (message, done.stderr)
            assert "Traceback" not in done.stderr
        unknown = cli(data, database_url, "replay", "--formule", "inconnu")
        assert unknown.returncode == 1 and "no formula 'inconnu'" in unknown.stderr
        unknown = cli(data, database_url, "compare", "--formules", "pondere-v2,inconnu")
        assert unknown.returncode == 1 and "no formula 'inconnu'" in unknown.stderr
        assert state(settings) == before

        # The same file again resumes; a recorded formula needs no file any more.
        ok(cli(data, database_url, "replay", "--formule", "mes-prix", "--tarifs", str(prix)))
        assert state(settings) == before  # caught up already: nothing to write
        prix.unlink()
        ok(cli(data, database_url, "replay", "--formule", "pondere-v2"))
        ok(cli(data, database_url, "replay", "--formule", "mes-prix"))

        # (d) A restarted process folds new events under the recorded table.
        later = generate(600, seed=25)
        load(settings, later)
        bilan, formula = served(settings)
        assert bilan["formule"] == "mes-prix" and formula.prix.sha256 == sha256
        assert figures_of(bilan) == expected(first + later, prices)
        assert figures_of(bilan) != expected(first + later, v2)

        # An upgrade drops the derived tables and folds them again: the registry stays.
        older = SCHEMA_VERSION - 1
        if database_url is None:
            with closing(sqlite3.connect(data / "projections.sqlite")) as db:
                db.execute(f"PRAGMA user_version = {older}")
        else:
            with psycopg.connect(database_url, autocommit=True) as pg:
                pg.execute("UPDATE bilan_schema SET version = %s", (older,))
        bilan, formula = served(settings)
        assert bilan["formule"] == "mes-prix" and formula.prix.sha256 == sha256
        assert bilan["provenance"]["evenements"] == len(first) + len(later)
        assert figures_of(bilan) == expected(first + later, prices)


class TestUserPricesSQLite(UserPrices):
    backend = "sqlite"


class TestUserPricesPostgres(UserPrices):
    backend = "postgresql"


def test_migrate_carries_the_price_table_of_the_projection_it_rebuilds(tmp_path: Path) -> None:
    # The target has no price file: the projection it rebuilds must fold with the table
    # recorded in the source (ADR-0131), and give the source's figures.
    from tests.conftest import fresh_postgres

    data = tmp_path / "data"
    settings = Settings(data=data, token=TOKEN, fuseau="UTC")
    events = generate(800, seed=26)
    load(settings, events)
    prix = tmp_path / "mes-prix.toml"
    prix.write_text(toml_text(file_prices()), encoding="utf-8")
    ok(cli(data, None, "replay", "--formule", "mes-prix", "--tarifs", str(prix)))
    prix.unlink()
    with fresh_postgres() as target:
        out = ok(subprocess.run(
            [str(SCRIPT), "migrate", "--data", str(data), "--from",
             f"sqlite:///{data / 'economies.sqlite'}", "--to", target],
            capture_output=True, text=True, timeout=300, check=False))
        assert "its bilan equal to the source's" in out
        moved, formula = served(Settings(data=data, token=TOKEN, database_url=target))
        assert moved["formule"] == "mes-prix" and formula.prix is not None
        assert figures_of(moved) == expected(events, file_prices())
