"""A replay's groups and samples are rebuilt streaming (ADR-0114): the database aggregates
and ``REBUILD_ROWS`` rows at a time are read and written, or, where a sum may pass 2^63,
the joined rows come in key order and are summed one key at a time in Python. Either way
every row of ``bilan_groupes``, ``bilan_echantillons`` and ``bilan_sessions`` equals the
live projection's, folded page by page through another path (``GroupsWriter.fold``,
``SamplesWriter.fold``, ``SessionsWriter.apply``, ``GroupsWriter.join``), on both
backends: with keys spanning chunks, demandes without a delegation, journal lines without
a demande, and no journal at all. A replay into another zone cuts other days, so other
clusters (ADR-0167): its rows are compared where no day enters, and the live projection's
rebuilt in place everywhere."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from miam_economies.api.service.replay import replay
from miam_economies.api.service.services import Services
from miam_economies.domain.acceptance import accept_batch
from miam_economies.projections import sql_groups
from miam_economies.projections.projection import projection_name
from tests.corpus import generate, journal_lines

TABLES = ("bilan_groupes", "bilan_echantillons", "bilan_echantillons_jours", "bilan_sessions")
ORDER = {"bilan_sessions": "champ, valeur, client, session, jour",
         "bilan_echantillons_jours": "champ, valeur, client, jour"}


def edge_corpus() -> tuple[list[dict[str, Any]], list[str]]:
    """A corpus whose journal has many values per field (``duree_s``: more groups than a
    chunk), lines for demandes whose delegation never came (in groups, in no sample),
    and lines for demandes with no event at all (in nothing)."""
    events = generate(2_000, seed=23)
    journal = journal_lines(events, seed=23)
    waiting = sorted({e["demande_id"] for e in events if e["type"] == "delegation"})[:25]
    events = [e for e in events
              if not (e["type"] == "delegation" and e["demande_id"] in waiting)]
    journal += [json.dumps({"demande_id": d, "preset": "en-attente"}) for d in waiting]
    journal += [json.dumps({"demande_id": f"sans-evenement-{i}", "preset": "orphelin",
                            "format": "md"}) for i in range(30)]
    return events, journal


def load(services: Services, events: list[dict[str, Any]], journal: list[str] | None
         ) -> None:
    if journal is not None:
        services.settings.journal_path.write_text("\n".join(journal) + "\n")
    for start in range(0, len(events), 300):
        services.store.append(accept_batch({"evenements": events[start:start + 300]}))
    services.runner.catch_up()


def rows(services: Services, name: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the tables for projection ``name``, without it, in key order,
    values as the database gives them back (an int and its decimal text differ)."""
    out = {}
    with services.projection.view._read() as c:  # type: ignore[attr-defined]
        for table in TABLES:
            order = ORDER.get(table, "champ, valeur, client")
            c.execute(f"SELECT * FROM {table} WHERE projection = ? ORDER BY {order}", (name,))
            out[table] = [tuple(row[1:]) for row in c.fetchall()]
    return out


def rebuilt(services: Services, name: str, monkeypatch: pytest.MonkeyPatch | None = None
            ) -> dict[str, list[tuple[Any, ...]]]:
    """Projection ``name``'s tables after its groups and samples are rebuilt in place (its
    own zone: the same days, so the same clusters), with ``monkeypatch`` on the exact path
    (summed in Python, key by key)."""
    if monkeypatch is not None:
        monkeypatch.setattr(sql_groups.GroupsWriter, "sums_exact_in_sql",
                            lambda self, c, name: False)
    services.projection.view.rebuild_groups(name)
    return rows(services, name)


def zone_free(tables: dict[str, list[tuple[Any, ...]]]) -> dict[str, list[tuple[Any, ...]]]:
    """What another zone leaves alone: the groups, and the samples' per-demande sums (a
    zone moves days, hence the clusters: ADR-0167)."""
    return {"bilan_groupes": tables["bilan_groupes"],
            "bilan_echantillons": [row[:11] for row in tables["bilan_echantillons"]]}


def replayed(services: Services, zone: str) -> dict[str, list[tuple[Any, ...]]]:
    """The tables of a replay into ``zone`` beside the live projection."""
    replay(replace(services.settings, fuseau=None), "v1", fuseau=zone)
    return rows(services, projection_name("v1", zone))


def replayed_exactly(services: Services, monkeypatch: pytest.MonkeyPatch,
                     zone: str) -> dict[str, list[tuple[Any, ...]]]:
    """``replayed``, the groups rebuilt on the exact path (summed in Python, key by key)
    as when SQL's sums might not fit."""
    monkeypatch.setattr(sql_groups.GroupsWriter, "sums_exact_in_sql",
                        lambda self, c, name: False)
    return replayed(services, zone)


class StreamingContract:
    """The rebuild against the page-by-page fold, on one backend."""

    def test_chunks_split_keys_and_nothing_changes(
            self, services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
        events, journal = edge_corpus()
        load(services, events, journal)
        name = services.projection.tracking_name  # a replay's switch moves it: kept
        live = rows(services, name)
        assert len(live["bilan_groupes"]) > 100
        groupes = {row[:2] for row in live["bilan_groupes"]}
        echantillons = {row[:2] for row in live["bilan_echantillons"]}
        assert ("preset", "en-attente") in groupes - echantillons
        # Sessions of several demandes: their sums are no per-demande ones.
        assert any(row[11] < row[3] for row in live["bilan_echantillons"])
        assert not any(valeur == "orphelin" for _, valeur in groupes)
        monkeypatch.setattr(sql_groups, "REBUILD_ROWS", 7)
        assert zone_free(replayed(services, "Etc/GMT-1")) == zone_free(live)
        assert rebuilt(services, name) == live
        # The exact path: joined rows in key order, 7 at a time, summed per key.
        assert zone_free(replayed_exactly(services, monkeypatch, "Etc/GMT-2")) == zone_free(
            live)
        assert rebuilt(services, name, monkeypatch) == live

    def test_without_a_journal_only_the_clients_samples(
            self, services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
        events, _ = edge_corpus()
        load(services, events, None)
        name = services.projection.tracking_name
        live = rows(services, name)
        assert live["bilan_groupes"] == []
        assert {row[:2] for row in live["bilan_echantillons"]} == {("", "")}
        assert {row[:2] for row in live["bilan_sessions"]} == {("", "")}
        monkeypatch.setattr(sql_groups, "REBUILD_ROWS", 1)
        assert zone_free(replayed(services, "Etc/GMT-1")) == zone_free(live)
        assert rebuilt(services, name) == live
        assert zone_free(replayed_exactly(services, monkeypatch, "Etc/GMT-2")) == zone_free(
            live)
        assert rebuilt(services, name, monkeypatch) == live

    def test_an_empty_store_rebuilds_nothing(self, services: Services) -> None:
        load(services, [], ["{\"demande_id\": \"d\", \"preset\": \"p\"}"])
        assert replayed(services, "Etc/GMT-1") == {table: [] for table in TABLES}


class TestStreamingSQLite(StreamingContract):
    backend = "sqlite"


class TestStreamingPostgres(StreamingContract):
    backend = "postgresql"
