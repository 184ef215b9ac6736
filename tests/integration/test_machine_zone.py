"""The machine's zone comes from ``TZ`` when it is set (issue 21.4): any name the zone
database knows (``PST8PDT``, ``EST5EDT``, ``US/East-Indiana``, ``:Europe/Paris``, a path
into the zone database) is taken as such; a ``TZ`` no zone database knows is refused with
``--fuseau``'s message, never replaced by another zone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.settings import Settings, UnknownZone, machine_fuseau
from miam_economies.domain.acceptance import accept_batch
from tests.conftest import EXAMPLE_BATCH, TOKEN

SCRIPT = Path(sys.executable).with_name("miam-economies")
DELEGATION = EXAMPLE_BATCH["evenements"][0]


@pytest.mark.parametrize(("tz", "zone"), [
    ("PST8PDT", "PST8PDT"), ("EST5EDT", "EST5EDT"), ("US/East-Indiana", "US/East-Indiana"),
    (":Europe/Paris", "Europe/Paris"), ("/usr/share/zoneinfo/Asia/Tokyo", "Asia/Tokyo"),
])
def test_a_tz_the_zone_database_knows_is_the_machines_zone(
        monkeypatch: pytest.MonkeyPatch, tz: str, zone: str) -> None:
    monkeypatch.setenv("TZ", tz)
    assert machine_fuseau() == zone


@pytest.mark.parametrize("tz", ["Nowhere/Land", "CET-1CEST", "../etc/passwd"])
def test_a_tz_no_zone_database_knows_is_refused(monkeypatch: pytest.MonkeyPatch,
                                                tz: str) -> None:
    monkeypatch.setenv("TZ", tz)
    with pytest.raises(UnknownZone, match="is not an IANA time zone"):
        machine_fuseau()


def run(data: Path, tz: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "MIAM_ECONOMIES_TZ"} | {"TZ": tz}
    return subprocess.run([str(SCRIPT), "bilan", "--data", str(data), *args], env=env,
                          capture_output=True, text=True)


def test_the_bilan_cuts_days_in_the_tz_zone_and_refuses_an_unknown_one(
        tmp_path: Path) -> None:
    data = tmp_path / "data"
    with open_services(Settings(data=data, token=TOKEN, fuseau="UTC"),
                       run_projections=False) as services:  # creates the store only
        late = {**DELEGATION, "date": "2026-10-31T06:30:00.000Z"}  # 23:30 in Los Angeles
        services.store.append(accept_batch({"evenements": [late]}))
    (data / "projections.sqlite").unlink()  # a new projection takes the machine's zone
    refused = run(data, "Nowhere/Land")
    fuseau = subprocess.run([str(SCRIPT), "bilan", "--data", str(data), "--fuseau",
                             "Nowhere/Land"], capture_output=True, text=True)
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    message = "'Nowhere/Land' is not an IANA time zone (such as Europe/Paris)"
    assert message in fuseau.stderr and message in refused.stderr
    answer = run(data, "PST8PDT", "--par", "jour", "--json")
    assert answer.returncode == 0, answer.stderr
    assert '"fuseau": "PST8PDT"' in answer.stdout
    assert '"2026-10-30"' in answer.stdout and '"2026-10-31"' not in answer.stdout
