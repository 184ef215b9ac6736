"""The CSV of a breakdown over HTTP and on the command line (issue 24, point 5; ADR-0134),
against a real ``miam-economies serve``: ``?format=csv`` and ``Accept: text/csv`` give the
same bytes, each row equals the JSON answer's cell for the same request, the CLI's
``--csv`` prints those bytes too, integers past 2^63 stay exact, a client's name that a
spreadsheet would evaluate is guarded, and refusals stay JSON."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import LiveServer
from tests.corpus import generate, journal_lines
from tests.integration.test_exact_figures import history

SCRIPT = Path(sys.executable).with_name("miam-economies")
FIGURES = ["delegations", "evites", "pilotage", "corrections", "net", "taux_reprise"]
USAGE = ["input_tokens", "output_tokens", "cache_read_input_tokens",
         "cache_creation_input_tokens"]
EVIL = "=HYPERLINK(\"http://example.invalid\",\"clic\")"
"""A client's name as a hostile plugin could send it: a formula if opened as is."""


def plain(value: Any) -> str:
    """How the test expects a JSON value in a cell: null empty, a float its repr."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def guarded(text: str) -> str:
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r", "\0") else text


def expected_bilan_rows(answer: dict[str, Any]) -> list[dict[str, str]]:
    """The rows the bilan's CSV must have, walked out of its JSON answer by the test."""
    par = answer.get("par")
    cells: list[tuple[dict[str, str], str, dict[str, Any]]] = []
    if par is None:
        cells = [({}, c, f) for c, f in answer["economies"].items()]
    else:
        for key, clients in answer["groupes"].items():
            keys = {} if par == "client" else {par: guarded(key)}
            cells += [(keys, c, f) for c, f in clients.items()]
    rows = []
    for keys, client, f in cells:
        row = {**keys, "client": guarded(client), **{n: plain(f[n]) for n in FIGURES}}
        if par == "modele":
            row.update(tours=plain(f["tours"]), usd=plain(f["usd"]),
                       **{n: plain(f["usage"][n]) for n in USAGE})
        rows.append(row)
    return rows


def expected_classement_rows(answer: dict[str, Any]) -> list[dict[str, str]]:
    rows = []
    for g in answer["groupes"]:
        row = {k: plain(v) for k, v in g.items()
               if not k.startswith("intervalle_") and k != "derive"}
        row["cle"] = guarded(g["cle"])
        # derive: five columns, empty for a stable group (ADR-0167).
        d = g["derive"] or {"depuis": "", "avant": None, "apres": None,
                            "intervalle": (None, None)}
        row.update({"derive_depuis": d["depuis"], "derive_avant": plain(d["avant"]),
                    "derive_apres": plain(d["apres"]),
                    "derive_bas": plain(d["intervalle"][0]),
                    "derive_haut": plain(d["intervalle"][1])})
        for name in ("intervalle_net_par_demande", "intervalle_taux_reprise"):
            low, high = g[name] or (None, None)
            row.update({f"{name}_bas": plain(low), f"{name}_haut": plain(high)})
        rows.append(row)
    return rows


def rows(body: bytes) -> list[dict[str, str]]:
    text = body.decode("utf-8")
    assert text.endswith("\r\n")
    return list(csv.DictReader(io.StringIO(text, newline="")))


def both_ways(server: LiveServer, route: str, params: dict[str, str]) -> bytes:
    """The CSV of ``route`` by ``?format=csv`` and by ``Accept: text/csv``: the same
    bytes, served as CSV; returns them."""
    by_format = server.client.get(route, params={**params, "format": "csv"})
    by_accept = server.client.get(route, params=params,
                                  headers={"Accept": "text/csv, */*;q=0.1"})
    name = route.rsplit("/", 1)[1]
    for response in (by_format, by_accept):
        assert response.status_code == 200, response.text
        assert response.headers["content-type"] == "text/csv; charset=utf-8"
        assert response.headers["content-disposition"] == f'inline; filename="{name}.csv"'
        assert response.headers["vary"] == "Accept"
    assert by_format.content == by_accept.content
    return by_format.content


def cli(data: Path, *args: str) -> bytes:
    """``miam-economies ARGS --data DATA --csv``'s standard output, as bytes (no newline
    translation)."""
    return subprocess.run([str(SCRIPT), *args, "--data", str(data), "--csv"], check=True,
                          capture_output=True).stdout


def test_each_csv_row_is_the_json_answers_cell_by_route_and_by_command(
        tmp_path: Path) -> None:
    events = generate(1500, seed=24)
    evil = next(e for e in events if e["type"] == "delegation")
    events.append({**evil, "id": f"{EVIL}:{evil['demande_id']}", "client": EVIL})
    data = tmp_path / "data"
    data.mkdir()
    (data / "delegations.jsonl").write_text("\n".join(journal_lines(events, seed=24)) + "\n")
    server = LiveServer(data)
    server.start()
    served: dict[tuple[str, ...], bytes] = {}
    try:
        for start in range(0, len(events), 500):
            assert server.post({"evenements": events[start:start + 500]}).status_code == 200
        server.bilan()  # everything folded
        for par in (None, "jour", "modele", "client", "preset"):
            params: dict[str, str] = {} if par is None else {"par": par}
            answer = server.client.get("/economies/bilan", params=params).json()
            assert server.client.get("/economies/bilan", params={
                **params, "format": "json"}).json()["economies"] == answer["economies"]
            body = both_ways(server, "/economies/bilan", params)
            expected = expected_bilan_rows(answer)
            assert len(expected) >= 2
            assert rows(body) == expected
            served[("bilan",) + (("--par", par) if par else ())] = body
        assert rows(served[("bilan",)])[0]["client"] == "'" + EVIL  # sorted first

        ranked = {"par": "preset", "min": "5"}
        answer = server.client.get("/economies/classement", params=ranked).json()
        assert answer["comparaisons"] and len(answer["groupes"]) >= 3
        body = both_ways(server, "/economies/classement", ranked)
        assert rows(body) == expected_classement_rows(answer)
        served[("classement", "--par", "preset", "--min", "5")] = body

        for route, good in (("/economies/bilan", {}), ("/economies/classement", ranked)):
            refused = server.client.get(route, params={**good, "format": "xml"},
                                        headers={"Accept": "text/csv"})
            assert refused.status_code == 400
            assert refused.headers["content-type"] == "application/json"
            assert refused.json()["erreur"].startswith("format")
        # The route's own refusals come first, as JSON, whatever is asked.
        for route, bad, named in (("/economies/bilan", {"depuis": "hier"}, "depuis"),
                                  ("/economies/classement", {"par": "jour"}, "par")):
            for ask in ({"format": "csv"}, {"format": "xml"}):
                refused = server.client.get(route, params={**bad, **ask})
                assert refused.status_code == 400
                assert refused.json()["erreur"].startswith(named), refused.text
        assert server.client.get("/economies/bilan", params={"format": "csv"}, headers={
            "Authorization": "Bearer x"}).headers["content-type"] == "application/json"
    finally:
        server.close()
    for args, body in served.items():
        assert cli(data, *args) == body, args
    both = subprocess.run([str(SCRIPT), "bilan", "--data", str(data), "--csv", "--json"],
                          capture_output=True, text=True)
    assert both.returncode == 2 and "mutually exclusive" in both.stderr


def test_sums_past_2_63_are_exact_in_the_csv(tmp_path: Path) -> None:
    events = history()
    server = LiveServer(tmp_path / "data")
    server.start()
    try:
        for start in range(0, len(events), 500):
            assert server.post({"evenements": events[start:start + 500]}).status_code == 200
        server.bilan()
        printed: dict[str | None, list[dict[str, str]]] = {}
        for params in ({}, {"par": "jour"}):
            answer = server.client.get("/economies/bilan", params=params).json()
            body = both_ways(server, "/economies/bilan", params)
            assert rows(body) == expected_bilan_rows(answer)
            printed[params.get("par")] = rows(body)
    finally:
        server.close()
    (whole,) = printed[None]
    for name in ("evites", "pilotage", "corrections"):
        assert int(whole[name]) > 2**63
        assert sum(int(day[name]) for day in printed["jour"]) == int(whole[name])
    assert int(whole["evites"]) == (2**53 - 1) * 1_100 + 1  # N of 2^53 - 1, then one of 1
    assert rows(cli(server.data, "bilan")) == printed[None]


def test_an_unknown_format_is_refused_before_anything_is_served(tmp_path: Path) -> None:
    server = LiveServer(tmp_path / "data")
    server.start()
    try:
        for value in ("xml", "CSV", ""):
            refused = server.client.get("/economies/bilan", params={"format": value})
            assert refused.status_code == 400, value
            assert refused.json() == {"ok": False,
                                      "erreur": f"format must be json or csv, not {value!r}"}
        empty = httpx.get(server.url + "/economies/bilan?format=csv",
                          headers=server.client.headers)
        assert empty.content == b"client," + ",".join(FIGURES).encode() + b"\r\n"
    finally:
        server.close()
