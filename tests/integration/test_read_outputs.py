"""Every read output, byte for byte, against the bytes recorded at 4953be3 (issue 32, item
2; ADR-0163): the bilan and the classement as the CLI prints them (table, ``--json``,
``--csv``) and as the HTTP routes answer them (JSON, ``?format=csv``), and the report's
figures (``report_data``), for every route and parameter set the docs show, on a copy of
the fixture store (``tests/fixtures/store_ca63dfe``: anomalies, a conflict, a journal with
presets and formats, days cut in Europe/Paris) under ``v1`` and ``pondere-v2``.

The recorded outputs are in ``read_outputs/<formule>.json`` (case -> text, ``genere_le``
masked; a text over ``LONG`` characters by its SHA-256, to keep the files small). What
changed on purpose since 4953be3 is in those files' history: each addition is documented
(docs/api.md, ADR-0165). After changing an output on purpose, write them again with
``MIAM_WRITE_READ_OUTPUTS=1 .venv/bin/python -m pytest
tests/integration/test_read_outputs.py`` and read the diff."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from miam_economies.api.cli import main
from miam_economies.api.http.app import create_app
from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.replay import replay
from miam_economies.api.service.report import report_data
from miam_economies.api.service.settings import Settings
from tests.fixtures.store_ca63dfe.make import fixture_copy

RECORDED = Path(__file__).with_name("read_outputs")
WRITE = os.environ.get("MIAM_WRITE_READ_OUTPUTS") == "1"
TOKEN = "read-outputs-token"
PERIOD = {"depuis": "2026-10-01", "jusqu_au": "2026-10-31"}

BILANS: dict[str, dict[str, str]] = {
    "total": {},
    "client": {"par": "client"},
    "jour": {"par": "jour"},
    "jour-periode": {"par": "jour", **PERIOD},
    "semaine-periode": {"par": "semaine", **PERIOD},
    "mois": {"par": "mois"},
    "modele": {"par": "modele"},
    "demande": {"par": "demande"},
    "preset": {"par": "preset"},
    "format": {"par": "format"},
    "journal.preset": {"par": "journal.preset"},
    "preset-semaine": {"par": "preset", "puis": "semaine"},
    "modele-jour-periode": {"par": "modele", "puis": "jour", **PERIOD},
    "jour-modele-periode": {"par": "jour", "puis": "modele", **PERIOD},
    "preset-format": {"par": "preset", "puis": "format"},
    "client-modele": {"par": "client", "puis": "modele"},
    "mois-preset": {"par": "mois", "puis": "preset"},
}
"""The bilan's parameter sets of docs/api.md and operations.md, by name."""

CLASSEMENTS: dict[str, dict[str, str]] = {
    "preset": {"par": "preset"},
    "format": {"par": "format"},
    "client": {"par": "client"},
    "preset-net": {"par": "preset", "selon": "net"},
    "preset-min": {"par": "preset", "min": "10"},
    "preset-apparier": {"par": "preset", "apparier": "format"},
    "format-net-min": {"par": "format", "selon": "net", "min": "1"},
}
"""The classement's parameter sets of docs/api.md, by name."""

LONG = 4_000
"""Texts longer than this are recorded by their SHA-256 (``recorded``)."""

_GENERE_LE = re.compile(r'(genere_le"?:? ?"?)[0-9T:.+\-Z]+')


def masked(text: str) -> str:
    """``text`` with every ``genere_le`` instant replaced: the only part that differs
    between two reads of one projection."""
    return _GENERE_LE.sub(r"\1<genere_le>", text)


def _flags(params: dict[str, str]) -> list[str]:
    out = []
    for name, value in params.items():
        out += [{"jusqu_au": "--jusqu-au"}.get(name, f"--{name}"), value]
    return out


def outputs(data: Path) -> dict[str, str]:
    """Every output of ``data``'s bilan and classement, by case name."""
    runner = CliRunner()
    out: dict[str, str] = {}

    def cli(*args: str) -> str:
        result = runner.invoke(main, [*args, "--data", str(data)], catch_exceptions=False)
        assert result.exit_code == 0, (args, result.output)
        return result.stdout_bytes.decode("utf-8")

    settings = Settings(data=data, token=TOKEN)
    for name, params in BILANS.items():
        for form, extra in (("table", []), ("json", ["--json"]), ("csv", ["--csv"])):
            out[f"cli bilan {name} {form}"] = cli("bilan", *_flags(params), *extra)
    for name, params in CLASSEMENTS.items():
        for form, extra in (("table", []), ("json", ["--json"]), ("csv", ["--csv"])):
            out[f"cli classement {name} {form}"] = cli("classement", *_flags(params), *extra)
    with TestClient(create_app(settings)) as client:
        client.headers["Authorization"] = f"Bearer {TOKEN}"
        for route, cases in (("bilan", BILANS), ("classement", CLASSEMENTS)):
            for name, params in cases.items():
                for form in ("json", "csv"):
                    answer = client.get(f"/economies/{route}",
                                        params={**params, "attendre": "1", "format": form})
                    assert answer.status_code == 200, (route, name, answer.text)
                    out[f"http {route} {name} {form}"] = (
                        f"{answer.headers['content-type']}\n{answer.text}")
    with open_services(settings, run_projections=False) as services:
        for name, params in (("all", {}), ("periode", PERIOD)):
            data_ = report_data(services, today="2026-10-15", **params)
            out[f"report_data {name}"] = json.dumps(data_, indent=1, sort_keys=True)
    return {case: masked(text) for case, text in out.items()}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Path]:
    """A copy of the fixture store (the fixture itself stays as made)."""
    yield fixture_copy(tmp_path)


def recorded(text: str) -> str:
    """How ``text`` is recorded: itself, or ``sha256:<hex>`` past ``LONG`` characters."""
    if len(text) <= LONG:
        return text
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _compare(formule: str, got: dict[str, str], tmp_path: Path) -> None:
    path = RECORDED / f"{formule}.json"
    if WRITE:
        RECORDED.mkdir(exist_ok=True)
        path.write_text(json.dumps({case: recorded(text) for case, text in got.items()},
                                   indent=0, ensure_ascii=False) + "\n", encoding="utf-8")
        return
    expected: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    assert sorted(got) == sorted(expected)
    (tmp_path / "got.json").write_text(json.dumps(got, indent=0), encoding="utf-8")
    for case, text in expected.items():
        # On a difference, the whole text read is in tmp_path/got.json.
        assert recorded(got[case]) == text, case


def test_v1_outputs_are_the_recorded_bytes(store: Path) -> None:
    _compare("v1", outputs(store), store.parent)


def test_pondere_v2_outputs_are_the_recorded_bytes(store: Path) -> None:
    replay(Settings(data=store), "pondere-v2")
    _compare("pondere-v2", outputs(store), store.parent)
