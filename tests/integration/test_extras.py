"""Issue 12, the extras (ADR-0044): importing the routes leaves pygal and Jinja2 alone, and
a process installed without the ``report`` or ``cli`` extra says which one to install
instead of failing with a traceback.

"Installed without" is a real process in which those packages cannot be imported: a
``sitecustomize`` on its ``PYTHONPATH`` sets their ``sys.modules`` entries to None before
anything runs, which is how Python itself marks a module as absent ("import" raises
``ModuleNotFoundError``, as when it is not installed). The console script, uvicorn and
our code then run unchanged.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import EXAMPLE_BATCH, LiveServer

SCRIPT = Path(sys.executable).with_name("miam-economies")
NOT_IMPORTED_WITH_THE_ROUTES = ("pygal", "jinja2", "markupsafe", "psycopg", "psycopg_pool")
"""Modules a host's process must not get by importing the routes: the report's (drawn on
request) and the PostgreSQL driver's (loaded for a PostgreSQL URL only)."""


def without(tmp_path: Path, *modules: str) -> dict[str, str]:
    """The environment of a process in which ``modules`` cannot be imported."""
    blocker = tmp_path / f"without-{'-'.join(modules)}"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(
        "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in modules))
    return {**os.environ, "PYTHONPATH": str(blocker)}


def test_importing_the_routes_imports_neither_pygal_nor_jinja2(tmp_path: Path) -> None:
    # A fresh interpreter, warnings as errors (as a host's pytest may run): the host
    # names load, no charting or templating package comes with them, pygal's import hook
    # is not on sys.meta_path, and a failed optional import is the plain error again.
    probe = f"""
import json, sys
from miam_economies import economies_routes, open_economies
economies_routes(auth="host")
try:
    import a_module_nobody_installed
    failed = "imported"
except ModuleNotFoundError:
    failed = "ModuleNotFoundError"
print(json.dumps({{"loaded": [m for m in {NOT_IMPORTED_WITH_THE_ROUTES!r} if m in sys.modules],
                  "finders": [type(f).__name__ for f in sys.meta_path],
                  "failed_import": failed}}))
"""
    out = subprocess.run([sys.executable, "-W", "error", "-c", probe], cwd=tmp_path,
                         check=True, capture_output=True, text=True)
    seen = json.loads(out.stdout)
    assert seen["loaded"] == []
    assert "PluginImportFixer" not in seen["finders"]
    assert seen["failed_import"] == "ModuleNotFoundError"


def test_drawing_a_report_leaves_the_hosts_import_system_as_it_was(tmp_path: Path) -> None:
    # pygal's hook is taken off once pygal is imported: after a report is drawn in the
    # host's process, a failed optional import is still the plain error.
    probe = f"""
import json, sys
from pathlib import Path
from miam_economies.api.http.report import render_report
from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.settings import Settings
with open_services(Settings(data=Path({str(tmp_path / "data")!r})),
                   run_projections=False) as services:
    page = render_report(services)
try:
    import a_module_nobody_installed
    failed = "imported"
except ModuleNotFoundError:
    failed = "ModuleNotFoundError"
print(json.dumps({{"finders": [type(f).__name__ for f in sys.meta_path],
                  "failed_import": failed, "drawn": "<svg" in page}}))
"""
    out = subprocess.run([sys.executable, "-W", "error", "-c", probe], cwd=tmp_path,
                         check=True, capture_output=True, text=True)
    seen = json.loads(out.stdout)
    assert seen["drawn"] and seen["failed_import"] == "ModuleNotFoundError"
    assert "PluginImportFixer" not in seen["finders"]


def test_without_the_report_extra_the_route_answers_501_naming_it(tmp_path: Path) -> None:
    server = LiveServer(tmp_path / "data", env=without(tmp_path, "pygal"))
    server.start()
    try:
        answer = server.client.get("/economies/rapport")
        assert answer.status_code == 501
        assert answer.json() == {
            "ok": False,
            "erreur": "the report needs the 'report' extra (pygal is not installed): "
                      "pip install 'miam-economies[report]'"}
        assert server.client.get("/economies/bilan").status_code == 200  # the rest serves
    finally:
        server.close()


def test_without_the_report_extra_rapport_says_which_to_install(tmp_path: Path) -> None:
    out = tmp_path / "rapport.html"
    done = subprocess.run([str(SCRIPT), "rapport", "--data", str(tmp_path / "data"),
                           "--html", str(out)], env=without(tmp_path, "jinja2"),
                          capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr == ("Error: the report needs the 'report' extra (jinja2 is not "
                           "installed): pip install 'miam-economies[report]'\n")
    assert not out.exists() and not (tmp_path / "data").exists()


def test_without_the_cli_extra_the_command_prints_one_line(tmp_path: Path) -> None:
    for module in ("click", "rich", "uvicorn"):
        done = subprocess.run([str(SCRIPT), "bilan", "--data", str(tmp_path)],
                              env=without(tmp_path, module), capture_output=True, text=True)
        assert done.returncode == 1, module
        assert done.stderr == (f"Error: the miam-economies command needs the 'cli' extra "
                               f"({module} is not installed): "
                               f"pip install 'miam-economies[cli]'\n")


def test_on_sqlite_the_service_runs_without_the_postgres_extra(tmp_path: Path) -> None:
    server = LiveServer(tmp_path / "data", env=without(tmp_path, "psycopg", "psycopg_pool"))
    server.start()
    try:
        assert server.post(EXAMPLE_BATCH).json() == {"ok": True, "recus": 2, "doublons": 0}
        assert server.bilan()["economies"]["claude-code"]["net"] == 2900
    finally:
        server.close()


def test_a_postgresql_url_without_the_postgres_extra_says_which_to_install(
        tmp_path: Path) -> None:
    done = subprocess.run([str(SCRIPT), "bilan", "--data", str(tmp_path / "data"),
                           "--database-url", "postgresql://miam@127.0.0.1:5432/miam"],
                          env=without(tmp_path, "psycopg"), capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.endswith("needs the 'postgres' extra (psycopg is not installed): "
                                "pip install 'miam-economies[postgres]'\n")


def test_the_classement_needs_no_numerical_stack(tmp_path: Path) -> None:
    # A base install has neither SciPy nor NumPy (ADR-0081): the whole classement, its
    # intervals, verdicts and paired verdicts, in a process where they cannot be imported.
    examples = Path(__file__).parents[2] / "examples" / "classement"
    data = tmp_path / "data"
    subprocess.run([str(SCRIPT), "import", "--data", str(data),
                    str(examples / "evenements.jsonl")], check=True, capture_output=True)
    (data / "delegations.jsonl").write_bytes((examples / "delegations.jsonl").read_bytes())
    probe = f"""
import json, sys
from miam_economies import read_classement
out = [read_classement({str(data)!r}, par="preset", selon=selon, apparier=apparier)
       for selon in ("taux", "net") for apparier in (None, "test_id")]
print(json.dumps({{"verdicts": sorted({{c["verdict"] for o in out for c in o["comparaisons"]}}),
                  "loaded": [m for m in ("scipy", "numpy") if sys.modules.get(m)]}}))
"""
    done = subprocess.run([sys.executable, "-W", "error", "-c", probe], cwd=tmp_path,
                          env=without(tmp_path, "scipy", "numpy"), check=True,
                          capture_output=True, text=True)
    assert json.loads(done.stdout) == {"verdicts": ["a_devant", "b_devant", "indiscernable"],
                                       "loaded": []}


def test_no_module_of_the_package_imports_a_numerical_stack() -> None:
    package = Path(__file__).parents[2] / "miam_economies"
    sources = [p for folder in ("domain", "projections", "api")
               for p in (package / folder).rglob("*.py")]
    assert len(sources) > 50
    for source in sources:
        text = source.read_text(encoding="utf-8")
        for name in ("scipy", "numpy"):
            assert f"import {name}" not in text and f"from {name}" not in text, source
