"""Weeks, months and two dimensions (issue 24; ADR-0132, ADR-0133), read from a real
database against a recomputation written apart from ``domain/`` and ``projections/``: days
cut in Europe/Paris across the autumn DST change and the 2026/2027 year boundary, the
journal joined before the events, after them, and rebuilt by a replay; and conservation:
the groups of ``par`` then ``puis`` sum to the one-dimension breakdowns."""

from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from miam_economies.api.service.answers import bilan_answer
from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.replay import replay
from miam_economies.api.service.services import Services
from miam_economies.api.service.settings import Settings
from miam_economies.domain.acceptance import accept_batch
from tests.conftest import TOKEN
from tests.corpus import generate, journal_lines

ZONE = "Europe/Paris"
FIGURES = ("delegations", "evites", "pilotage", "corrections")
WINDOWS = ((datetime(2026, 10, 24, 18, tzinfo=UTC), 60 * 3600),  # DST ends 25 Oct, 01:00Z
           (datetime(2026, 12, 26, tzinfo=UTC), 12 * 86400))  # 26 Dec 2026 - 7 Jan 2027


def corpus(n: int = 1500) -> tuple[list[dict[str, Any]], list[str]]:
    """Events dated in the two windows (some at the minutes around local midnight), and
    MIAM's journal for them."""
    rng = random.Random(24)
    events = generate(n, seed=24)
    for e in events:
        start, span = rng.choice(WINDOWS)
        moment = start + timedelta(seconds=rng.randrange(span))
        if rng.random() < 0.2:  # right around midnight in Paris
            local = moment.astimezone(ZoneInfo(ZONE)).replace(hour=0, minute=0, second=0)
            moment = local + timedelta(seconds=rng.randrange(-120, 120))
        e["date"] = moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    return events, journal_lines(events, seed=24)


def iso_week(day: str) -> str:
    """ISO 8601's week, by its Thursday rule (not ``isocalendar``)."""
    d = date.fromisoformat(day)
    thursday = d + timedelta(days=3 - d.weekday())
    return f"{thursday.year}-W{(thursday.timetuple().tm_yday - 1) // 7 + 1:02d}"


def contributions(events: list[dict[str, Any]], journal: list[str]
                  ) -> Iterator[tuple[dict[str, str], str, dict[str, int]]]:
    """What each event gives each of its demandes (the plugin's figures, a pilotage split
    as ADR-0101 says), with its keys: day (in Paris), week, month, demande and the
    demande's journal values (the first line with the demande wins)."""
    values: dict[str, dict[str, str]] = {}
    for line in journal:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("demande_id"), str):
            values.setdefault(entry["demande_id"], entry)
    seen: set[str] = set()
    zone = ZoneInfo(ZONE)
    for e in events:
        if e["id"] in seen:
            continue
        seen.add(e["id"])
        moment = datetime.fromisoformat(e["date"].replace("Z", "+00:00"))
        day = moment.astimezone(zone).date().isoformat()
        if e["type"] == "pilotage":
            ids = sorted(set(e["demande_ids"]))
            base, rest = divmod(e["cout"], len(ids))
            parts = [(d, {"pilotage": base + (i < rest)}) for i, d in enumerate(ids)]
        elif e["type"] == "delegation":
            parts = [(e["demande_id"], {"delegations": 1,
                                        "evites": e["estimation"]["evites"]})]
        else:
            parts = [(e["demande_id"], {"corrections": e["cout"]})]
        for demande, figures in parts:
            line = values.get(demande, {})
            keys = {"jour": day, "semaine": iso_week(day), "mois": day[:7],
                    "demande": demande, "client": e["client"],
                    "preset": str(line.get("preset", "(inconnu)")),
                    "format": str(line.get("format", "(inconnu)")),
                    # A field without groups by day: read from the demandes' days.
                    "ok": json.dumps(line["ok"]) if "ok" in line else "(inconnu)"}
            yield keys, e["client"], figures


def expected(events: list[dict[str, Any]], journal: list[str], par: str,
             puis: str | None = None, depuis: str = "", jusqu_au: str = "~") -> Any:
    out: Any = defaultdict(lambda: defaultdict(lambda: defaultdict(lambda: dict.fromkeys(
        FIGURES, 0))))
    for keys, client, figures in contributions(events, journal):
        if not depuis <= keys["jour"] <= jusqu_au:
            continue
        cell = out[keys[par]][keys[puis] if puis else client][client]
        for k, v in figures.items():
            cell[k] += v
    if puis is None:
        return {a: {c: cells[c] for c in by_client} for a, by_client in out.items()
                for cells in [{c: v[c] for v in by_client.values() for c in v}]}
    return out


def sums(groupes: dict[str, Any], two: bool) -> dict[tuple[str, ...], tuple[int, ...]]:
    flat: dict[tuple[str, ...], tuple[int, ...]] = {}
    for a, inner in groupes.items():
        cells = inner.items() if two else [("", inner)]
        for b, by_client in cells:
            for client, f in by_client.items():
                flat[(a, b, client) if two else (a, client)] = tuple(f[k] for k in FIGURES)
    return {k: v for k, v in flat.items() if any(v)}


def marginal(groupes: dict[str, Any], keep_outer: bool) -> dict[tuple[str, str], tuple[int, ...]]:
    """Two-dimension groups summed over one dimension: ``{(key kept, client): sums}``."""
    out: defaultdict[tuple[str, str], list[int]] = defaultdict(lambda: [0] * 4)
    for a, inner in groupes.items():
        for b, by_client in inner.items():
            for client, f in by_client.items():
                acc = out[(a if keep_outer else b, client)]
                for i, k in enumerate(FIGURES):
                    acc[i] += f[k]
    return {k: tuple(v) for k, v in out.items() if any(v)}


def bilan(services: Services, par: str, puis: str | None = None, **bounds: str) -> Any:
    answer = bilan_answer(services.bilan(par, puis=puis, **bounds))
    assert answer["par"] == par and answer.get("puis") == puis
    return answer["groupes"]


CASES = [("semaine", None), ("mois", None), ("preset", "semaine"), ("semaine", "preset"),
         ("mois", "jour"), ("preset", "format"), ("demande", "jour"), ("client", "semaine"),
         ("format", "mois"), ("ok", "semaine"), ("jour", "ok"), ("ok", None), ("ok", "client")]


class TestSqlite:
    backend = "sqlite"

    @pytest.fixture
    def data(self, tmp_path: Path, database_url: str | None) -> Iterator[Settings]:
        yield Settings(data=tmp_path / "data", token=TOKEN, fuseau=ZONE,
                       database_url=database_url)

    def check_all(self, services: Services, events: list[dict[str, Any]],
                  journal: list[str]) -> None:
        for par, puis in CASES:
            got = sums(bilan(services, par, puis), puis is not None)
            want = sums(expected(events, journal, par, puis), puis is not None)
            assert got == want, (par, puis)
        # Bounds cut the period at its days: the week of 1 Jan 2027, from 1 Jan only.
        bounded = bilan(services, "preset", "semaine", depuis="2027-01-01",
                        jusqu_au="2027-01-03")
        assert {w for inner in bounded.values() for w in inner} == {"2026-W53"}
        assert sums(bounded, True) == sums(expected(
            events, journal, "preset", "semaine", "2027-01-01", "2027-01-03"), True)

    def test_weeks_months_and_two_dimensions_equal_a_recomputation(
            self, data: Settings) -> None:
        events, journal = corpus()
        data.data.mkdir(parents=True)
        # Half the journal before the events (joined at the fold), half after (joined
        # when its lines come).
        (data.data / "delegations.jsonl").write_text("\n".join(journal[::2]) + "\n")
        with open_services(data, run_projections=False) as services:
            for i in range(0, len(events), 400):
                services.store.append(accept_batch({"evenements": events[i:i + 400]}))
                services.runner.catch_up()
            with (data.data / "delegations.jsonl").open("a") as f:
                f.write("\n".join(journal[1::2]) + "\n")
            services.runner.catch_up()
            weeks = bilan(services, "semaine")
            # The year boundary: 31 Dec 2026 to 3 Jan 2027 are one ISO week, 2026-W53.
            assert {"2026-W43", "2026-W52", "2026-W53", "2027-W01"} <= set(weeks)
            assert "2027-W53" not in weeks
            self.check_all(services, events, journal[::2] + journal[1::2])
        # The rebuild at a replay's end gives the same groups (v1-serveur recomputes the
        # corpus's figures exactly as the plugin sent them).
        replay(data, "v1-serveur")
        with open_services(data, run_projections=False) as services:
            assert bilan_answer(services.bilan())["formule"] == "v1-serveur"
            self.check_all(services, events, journal[::2] + journal[1::2])

    def test_two_dimensions_conserve_the_one_dimension_figures(self, data: Settings) -> None:
        events, journal = corpus(800)
        data.data.mkdir(parents=True)
        (data.data / "delegations.jsonl").write_text("\n".join(journal) + "\n")
        with open_services(data, run_projections=False) as services:
            services.store.append(accept_batch({"evenements": events[:500]}))
            services.store.append(accept_batch({"evenements": events[500:]}))
            services.runner.catch_up()
            pairs = [("preset", "semaine"), ("modele", "jour"), ("jour", "modele"),
                     ("mois", "client"), ("demande", "preset"), ("format", "preset"),
                     ("semaine", "mois")]
            for par, puis in pairs:
                two = bilan(services, par, puis)
                for kept, one in ((True, par), (False, puis)):
                    flat = sums(bilan(services, one), False)
                    if "modele" in (par, puis):
                        # A model carries only its turns' pilotage (ADR-0006): conserved.
                        flat = {k: v[2] for k, v in flat.items() if v[2]}
                        assert {k: v[2] for k, v in marginal(two, kept).items()} == flat
                        continue
                    assert marginal(two, kept) == flat, (par, puis, one)
            # A model's cells keep their turns and usage when split by day.
            by_day = bilan(services, "modele", "jour")
            whole = bilan(services, "modele")
            for modele, days in by_day.items():
                for client, cell in whole[modele].items():
                    turns = sum(d[client]["tours"] for d in days.values() if client in d)
                    assert turns == cell["tours"]


class TestPostgres(TestSqlite):
    backend = "postgresql"
