"""Issue 32, item 1 (ADR-0164): a typo on a read is refused, not answered, on every read
edge: HTTP (a real ``serve``), the command line and MIAM's Python functions. Each refusal
names what it did not understand, lists what exists and the nearest spelling, and changes
nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from miam_economies.api.service.reading import (
    economies_section,
    read_bilan,
    read_classement,
)
from miam_economies.api.service.services import Services
from miam_economies.domain.acceptance import accept_batch
from miam_economies.domain.errors import MiamEconomiesError
from miam_economies.domain.known_names import NotUnderstood
from tests.conftest import LiveServer
from tests.corpus import generate, journal_lines

SCRIPT = Path(sys.executable).with_name("miam-economies")
EVENTS = generate(600, seed=32)

# (route, query, the parameter named, the nearest spelling offered)
REFUSED = [
    ("/economies/bilan", {"par": "jours"}, "par", "jour"),
    ("/economies/bilan", {"par": "model"}, "par", "modele"),
    ("/economies/bilan", {"par": "presets"}, "par", "preset"),
    ("/economies/bilan", {"par": "Preset"}, "par", "preset"),
    ("/economies/bilan", {"par": "jour", "puis": "fromat"}, "puis", "format"),
    ("/economies/bilan", {"par": "jour", "jusqu-au": "2026-11-30"}, "jusqu-au", "jusqu_au"),
    ("/economies/bilan", {"attendre": "yes"}, "attendre", None),
    ("/economies/bilan", {"attente": "1"}, "attente", "attendre"),
    ("/economies/bilan", {"pas": "client"}, "pas", "par"),
    ("/economies/classement", {"par": "presets"}, "par", "preset"),
    ("/economies/classement", {"par": "preset", "apparier": "tset_id"}, "apparier",
     "test_id"),
    ("/economies/classement", {"par": "preset", "selom": "net"}, "selom", "selon"),
    ("/economies/classement", {"par": "preset", "minimum": "5"}, "minimum", "min"),
    ("/economies/demandes/d-1", {"attendre": "oui"}, "attendre", None),
    ("/economies/demandes/d-1", {"atendre": "1"}, "atendre", "attendre"),
    ("/economies/rapport", {"depuis": "2026-11-01", "jusquau": "2026-11-30"}, "jusquau",
     "jusqu_au"),
    ("/healthz", {"verbose": "1"}, "verbose", None),
    ("/metrics", {"name": "x"}, "name", None),
    ("/openapi.json", {"v": "3"}, "v", None),
]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory whose journal has preset, format, ok, duree_s and details, and
    whose test_id field comes from a second line set (the tasks)."""
    data = tmp_path_factory.mktemp("says-no") / "data"
    data.mkdir()
    lines = journal_lines(EVENTS, seed=32)
    lines.append('{"demande_id": "tache-1", "test_id": "t1"}')
    (data / "delegations.jsonl").write_text("\n".join(lines) + "\n")
    return data


@pytest.fixture(scope="module")
def server(data: Path) -> Iterator[LiveServer]:
    """A real ``serve`` with the corpus posted and folded."""
    live = LiveServer(data)
    live.start()
    try:
        for start in range(0, len(EVENTS), 300):
            assert live.post({"evenements": EVENTS[start:start + 300]}).status_code == 200
        live.bilan()  # folded
        yield live
    finally:
        live.close()


@pytest.mark.parametrize(("route", "query", "parametre", "meant"), REFUSED)
def test_http_refuses_what_it_does_not_understand(
        server: LiveServer, route: str, query: dict[str, str], parametre: str,
        meant: str | None) -> None:
    tete = server.bilan()["provenance"]["tete"]
    response = server.client.get(route, params=query)
    assert response.status_code == 400, (route, query, response.text)
    erreur = response.json()["erreur"]
    assert response.json()["ok"] is False
    assert erreur.startswith(f"{parametre}:"), erreur
    if meant is not None:
        assert f"did you mean {meant!r}?" in erreur
    assert server.bilan()["provenance"]["tete"] == tete  # nothing changed


def test_http_refuses_a_parameter_given_twice(server: LiveServer) -> None:
    response = server.client.get("/economies/bilan?par=jour&par=preset")
    assert response.status_code == 400
    assert response.json()["erreur"] == "par: given more than once"


def test_what_is_understood_is_answered(server: LiveServer) -> None:
    for query in ({"par": "jour"}, {"par": "preset"}, {"par": "journal.format"},
                  {"par": "ok"}, {"par": "preset", "puis": "jour"}, {"attendre": "true"},
                  {"attendre": "1"}):
        response = server.client.get("/economies/bilan", params=query)
        assert response.status_code == 200, (query, response.text)
        assert "champ_vu" not in response.json()
    # attendre=true waits, as attendre=1 does: every stored event is folded.
    bilan = server.client.get("/economies/bilan", params={"attendre": "true"}).json()
    assert bilan["position"] == bilan["provenance"]["tete"]
    ranked = server.client.get("/economies/classement",
                               params={"par": "preset", "apparier": "test_id"})
    assert ranked.status_code == 200, ranked.text
    assert server.client.get("/healthz").status_code == 200


def test_the_command_line_refuses_a_typo_with_the_same_words(data: Path,
                                                             server: LiveServer) -> None:
    for args, words in ((["bilan", "--par", "jours"], "did you mean 'jour'?"),
                        (["bilan", "--par", "jour", "--puis", "presets"],
                         "did you mean 'preset'?"),
                        (["classement", "--par", "preset", "--apparier", "tset_id"],
                         "did you mean 'test_id'?"),
                        (["classement", "--par", "fromat"], "did you mean 'format'?")):
        done = subprocess.run([str(SCRIPT), *args, "--data", str(data)],
                              capture_output=True, text=True, check=False)
        assert done.returncode != 0, args
        assert words in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr
        assert done.stdout == ""


def test_python_reads_refuse_a_typo(data: Path, server: LiveServer) -> None:
    with pytest.raises(NotUnderstood, match="did you mean 'jour'"):
        economies_section(data, par="jours")
    with pytest.raises(MiamEconomiesError, match="did you mean 'modele'"):
        read_bilan(data, par="model")
    with pytest.raises(NotUnderstood, match="apparier: 'tset_id'"):
        read_classement(data, par="preset", apparier="tset_id")
    assert read_bilan(data, par="preset")["groupes"]


def test_a_field_asked_before_the_journal_has_any_is_answered_and_says_so(
        tmp_path: Path) -> None:
    # No journal line read yet: whether preset exists cannot be known. The answer is as
    # before (every demande in the unknown group) and says so, on every edge.
    data = tmp_path / "data"
    live = LiveServer(data)
    live.start()
    try:
        assert live.post({"evenements": EVENTS[:50]}).status_code == 200
        live.bilan()
        bilan = live.client.get("/economies/bilan", params={"par": "preset"}).json()
        assert bilan["champ_vu"] is False and list(bilan["groupes"]) == ["(inconnu)"]
        ranked = live.client.get("/economies/classement", params={"par": "preset"})
        assert ranked.json()["champ_vu"] is False
        assert "champ_vu" not in live.client.get("/economies/bilan",
                                                 params={"par": "jour"}).json()
        # A sure typo of a built-in name is refused all the same.
        typo = live.client.get("/economies/bilan", params={"par": "jours"})
        assert typo.status_code == 400 and "did you mean 'jour'?" in typo.json()["erreur"]
    finally:
        live.close()
    assert read_bilan(data, par="preset")["champ_vu"] is False
    for args in (["bilan", "--par", "presets"], ["classement", "--par", "preset", "--csv"]):
        done = subprocess.run([str(SCRIPT), *args, "--data", str(data)], capture_output=True,
                              text=True, check=True)
        assert "note: MIAM's journal has no line with a field yet" in done.stderr, args
    # No store at all: answered empty, saying so; a typo refused.
    missing = tmp_path / "missing"
    assert read_bilan(missing, par="preset")["champ_vu"] is False
    assert read_classement(missing, par="preset")["champ_vu"] is False
    with pytest.raises(NotUnderstood, match="did you mean 'modele'"):
        read_bilan(missing, par="model")
    assert not missing.exists()


def test_an_unopened_route_still_refuses_before_reading(server: LiveServer) -> None:
    # The refusal comes before any read: an unknown parameter on /healthz needs no token.
    response = httpx.get(server.url + "/healthz?x=1", timeout=5)
    assert response.status_code == 400


def test_a_cache_busters_parameter_is_ignored(server: LiveServer) -> None:
    # A name starting with "_" is a probe's or a proxy's, never ours (ADR-0164).
    assert httpx.get(server.url + "/healthz?_=1700000000", timeout=5).status_code == 200
    bilan = server.client.get("/economies/bilan", params={"par": "jour", "_": "1"})
    assert bilan.status_code == 200


@pytest.mark.parametrize(("fields", "held"), [
    ({"ticket": "T-1"}, []), ({"preset": "rapide"}, ["preset"]),
    ({"format": "md"}, ["format"])])
def test_the_report_reads_only_the_journal_fields_there_are(
        tmp_path: Path, fields: dict[str, str], held: list[str]) -> None:
    # The report asks for preset and format itself: a journal without them is no typo
    # of the user's (found by a fresh review: the page answered 400).
    data = tmp_path / "data"
    data.mkdir()
    demandes = sorted({e["demande_id"] for e in EVENTS[:120] if "demande_id" in e})
    (data / "delegations.jsonl").write_text("".join(
        json.dumps({"demande_id": d, **fields}) + "\n" for d in demandes))
    live = LiveServer(data)
    live.start()
    try:
        assert live.post({"evenements": EVENTS[:120]}).status_code == 200
        live.bilan()
        page = live.client.get("/economies/rapport")
        assert page.status_code == 200, page.text
        for field in ("preset", "format"):
            assert (f'id="classement-{field}"' in page.text) == (field in held), field
    finally:
        live.close()


class KnownFieldsContract:
    """Per backend: the journal's fields are read from the view (a loose index scan of
    ``journal_valeurs``), a typo refused and a field answered, on SQLite and PostgreSQL."""

    def test_the_journals_fields_decide_on_every_backend(self, services: Services) -> None:
        journal = services.settings.data / "delegations.jsonl"
        journal.write_text("\n".join(journal_lines(EVENTS, seed=32)) + "\n")
        services.store.append(accept_batch({"evenements": EVENTS[:300]}))
        services.runner.catch_up()
        with services.lire() as lecture:
            assert {"preset", "format", "ok", "duree_s"} <= (lecture.champs or set())
            assert "details" not in (lecture.champs or set())  # not a scalar
        assert services.bilan("preset").champ_vu is True
        assert services.classement("format", 1).champ_vu is True
        with pytest.raises(NotUnderstood, match="did you mean 'preset'"):
            services.bilan("presets")
        with pytest.raises(NotUnderstood, match="apparier: 'fromat' is not a field"):
            services.classement("preset", 1, "taux", "fromat")


class TestKnownFieldsSQLite(KnownFieldsContract):
    backend = "sqlite"


class TestKnownFieldsPostgres(KnownFieldsContract):
    backend = "postgresql"
