"""A replay folds its pages without the journal-field groups and computes them once at its
end (``BilanView.rebuild_groups``, ADR-0062): the groups it serves equal an independent
recomputation from the events and the journal, and the live projection's (folded page
by page), on both backends; sums past 2^63 stay exact (ADR-0051)."""

from __future__ import annotations

import json
import time
from collections import defaultdict
from dataclasses import replace
from typing import Any

import pytest

from miam_economies.api.service.answers import bilan_answer
from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.replay import replay
from miam_economies.api.service.services import Services
from miam_economies.api.service.serving import build_projection
from miam_economies.api.service.settings import Settings
from miam_economies.domain.acceptance import accept_batch
from tests.corpus import generate, journal_lines
from tests.integration import test_exact_figures as big

FIGURES = ("delegations", "evites", "pilotage", "corrections")


def expected_groups(events: list[dict[str, Any]], journal: list[str]
                    ) -> dict[str, dict[str, dict[str, dict[str, int]]]]:
    """``{champ: {valeur: {client: four sums}}}`` of the demandes with a journal value,
    every field of the first line of each demande, recomputed apart from ``domain/``
    (each id once, first wins; pilotage parts as ADR-0006 splits them)."""
    first: dict[str, dict[str, Any]] = {}
    for e in events:
        first.setdefault(e["id"], e)
    demandes: dict[tuple[str, str], dict[str, int]] = defaultdict(
        lambda: dict.fromkeys(FIGURES, 0))
    for e in first.values():
        if e["type"] == "delegation":
            d = demandes[(e["demande_id"], e["client"])]
            d["delegations"] += 1
            d["evites"] += e["estimation"]["evites"]
        elif e["type"] == "pilotage":
            ids = sorted(e["demande_ids"])
            base, rest = divmod(e["cout"], len(ids))
            for i, demande_id in enumerate(ids):
                demandes[(demande_id, e["client"])]["pilotage"] += base + (i < rest)
        else:
            demandes[(e["demande_id"], e["client"])]["corrections"] += e["cout"]
    values: dict[str, dict[str, str]] = {}
    for line in journal:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("demande_id"), str):
            values.setdefault(entry["demande_id"], {
                k: v if isinstance(v, str) else json.dumps(v) for k, v in entry.items()
                if k != "demande_id" and v is not None and not isinstance(v, (dict, list))})
    out: dict[str, dict[str, dict[str, dict[str, int]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(lambda: dict.fromkeys(FIGURES, 0))))
    for (demande_id, client), sums in demandes.items():
        for champ, valeur in values.get(demande_id, {}).items():
            row = out[champ][valeur][client]
            for k in FIGURES:
                row[k] += sums[k]
    return out


def served_groups(settings: Settings, champ: str) -> dict[str, dict[str, dict[str, int]]]:
    """The known values of journal field ``champ`` as the active projection serves them
    (without the ``(inconnu)`` rest), the four sums of each cell."""
    with open_services(replace(settings, fuseau=None), run_projections=False) as services:
        services.runner.catch_up()
        groupes = bilan_answer(services.bilan(champ))["groupes"]
    return {valeur: {client: {k: cell[k] for k in FIGURES} for client, cell in cells.items()}
            for valeur, cells in groupes.items() if valeur != "(inconnu)"}


def load(services: Services, events: list[dict[str, Any]], journal: list[str]) -> None:
    services.settings.journal_path.write_text("\n".join(journal) + "\n")
    for start in range(0, len(events), 500):
        services.store.append(accept_batch({"evenements": events[start:start + 500]}))
    services.runner.catch_up()


def plain(groups: Any) -> Any:
    return {champ: {v: {c: dict(s) for c, s in cells.items()} for v, cells in vals.items()}
            for champ, vals in groups.items()}


def stopped_after_its_pages(services: Services, size: int, seed: int
                            ) -> tuple[list[dict[str, Any]], list[str]]:
    """Store ``size`` generated events and their journal, then build the serving
    projection from its first event and kill the build after its last page, before its
    groups' rebuild (ADR-0179); return the events and the journal's lines."""
    events = generate(size, seed=seed)
    journal = journal_lines(events, seed=seed)
    services.settings.journal_path.write_text("\n".join(journal) + "\n")
    for start in range(0, len(events), 500):
        services.store.append(accept_batch({"evenements": events[start:start + 500]}))

    def killed_after_the_last_page(done: int, total: int) -> None:
        if done == total:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        build_projection(services.store, services.projection.view,
                         services.projection.tracking_name, killed_after_the_last_page,
                         page_size=600, data=services.settings.data)
    return events, journal


class ReplayGroupsContract:
    """Groups after a replay, on one backend."""

    def test_groups_after_a_replay_are_the_recomputed_ones(self, services: Services) -> None:
        events = generate(3_000, seed=11)
        journal = journal_lines(events, seed=11)
        load(services, events, journal)
        expected = plain(expected_groups(events, journal))
        assert set(expected) == {"preset", "format", "ok", "duree_s"}
        settings = services.settings
        live = {champ: served_groups(settings, champ) for champ in expected}
        assert live == expected  # folded page by page
        replay(settings, "v1", fuseau="Etc/GMT-3", page_size=700)
        for champ in expected:
            assert served_groups(settings, champ) == expected[champ], champ

    def test_journal_lines_joined_during_a_replay_reach_its_groups(
            self, services: Services) -> None:
        events = generate(1_500, seed=12)
        journal = journal_lines(events, seed=12)
        half = len(journal) // 2
        load(services, events, journal[:half])
        settings = services.settings
        progress_calls = []

        def more_lines(done: int, total: int) -> None:
            # The journal grows while the replay folds: its follower joins the new lines.
            if not progress_calls:
                settings.journal_path.write_text("\n".join(journal) + "\n")
            progress_calls.append(done)

        before = services.projection.tracking_name
        replay(settings, "v1", fuseau="Etc/GMT+4", progress=more_lines, page_size=400)
        assert len(progress_calls) > 1
        expected = plain(expected_groups(events, journal))
        for champ in expected:
            assert served_groups(settings, champ) == expected[champ], champ
        # The lines the replay's follower joined reached the projection that served
        # meanwhile too, whose groups were never deferred (ADR-0179).
        view = services.projection.view
        assert view.groups_deferred(before) is None
        served = view.snapshot(before, "v1", par="preset").groupes
        assert served is not None
        assert {valeur: {client: {k: getattr(f, k) for k in FIGURES}
                         for client, f in cells.items()}
                for valeur, cells in served.items()
                if valeur != "(inconnu)"} == expected["preset"]

    def test_the_live_runner_computes_the_groups_a_stopped_build_left(
            self, services: Services) -> None:
        # The serving projection built from its first event (the bench's case, or a
        # restored store): a kill after its last page and before the groups' rebuild
        # leaves them marked, not wrong for good: once the mark has been left alone for
        # stopped_after seconds, the live runner rebuilds them (ADR-0179).
        events, journal = stopped_after_its_pages(services, 2_000, seed=13)
        view, name = services.projection.view, services.projection.tracking_name
        idle = view.groups_deferred(name)
        assert idle is not None and idle < 60
        left = view.snapshot(name, "v1", par="preset").groupes
        assert left is not None and set(left) <= {"(inconnu)"}  # none joined yet
        runner = services.runner
        runner.catch_up()  # joins the journal: not into the marked groups
        assert not runner.finish_stopped_build()  # the build might still be at work
        assert view.snapshot(name, "v1", par="preset").groupes == left
        assert not view.rebuild_stopped_groups(name, idle=60)
        runner.stopped_after = 0.0  # as if it had been quiet long enough
        runner.start()
        deadline = time.monotonic() + 30
        while view.groups_deferred(name) is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        runner.stop()
        assert view.groups_deferred(name) is None
        expected = plain(expected_groups(events, journal))
        for champ in expected:
            assert served_groups(services.settings, champ) == expected[champ], champ

    def test_a_build_of_the_serving_projection_with_events_keeps_its_groups(
            self, services: Services) -> None:
        # Serving some events already, its groups are served meanwhile: not marked.
        events = generate(1_500, seed=15)
        journal = journal_lines(events, seed=15)
        load(services, events[:500], journal)
        for start in range(500, len(events), 500):
            services.store.append(accept_batch({"evenements": events[start:start + 500]}))
        view, name = services.projection.view, services.projection.tracking_name
        marks: list[float | None] = []
        build_projection(services.store, view, name,
                         lambda done, total: marks.append(view.groups_deferred(name)),
                         page_size=500, data=services.settings.data)
        assert len(marks) >= 2 and set(marks) == {None}
        expected = plain(expected_groups(events, journal))
        for champ in expected:
            assert served_groups(services.settings, champ) == expected[champ], champ

    def test_a_build_run_again_computes_the_groups_it_left(
            self, services: Services) -> None:
        events, journal = stopped_after_its_pages(services, 1_200, seed=14)
        view, name = services.projection.view, services.projection.tracking_name
        # Run again: nothing left to fold, the groups rebuilt all the same.
        build_projection(services.store, view, name, data=services.settings.data)
        assert view.groups_deferred(name) is None
        served = view.snapshot(name, "v1", par="preset").groupes
        expected = plain(expected_groups(events, journal))["preset"]
        assert served is not None
        assert {valeur: {client: {k: getattr(f, k) for k in FIGURES}
                         for client, f in cells.items()}
                for valeur, cells in served.items() if valeur != "(inconnu)"} == expected

    def test_group_sums_past_2_63_stay_exact(self, services: Services) -> None:
        events = big.history()
        journal = [json.dumps({"demande_id": big.demande(i),
                               "preset": "rapide" if i % 2 else "precis"})
                   for i in range(big.N + 1)]
        load(services, events, journal)
        expected = plain(expected_groups(events, journal))["preset"]
        assert expected["precis"][big.CLIENT]["corrections"] > 2**63
        settings = services.settings
        replay(settings, "v1", fuseau="Etc/GMT-5")
        served = served_groups(settings, "preset")
        assert served == expected
        for cells in served.values():
            for figures in cells[big.CLIENT].values():
                big.exact(figures, figures)


class TestReplayGroupsSQLite(ReplayGroupsContract):
    backend = "sqlite"


class TestReplayGroupsPostgres(ReplayGroupsContract):
    backend = "postgresql"
