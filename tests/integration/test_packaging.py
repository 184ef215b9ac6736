"""Issue 12, "Installed as a library" (SPEC): the wheel holds one import package and its
metadata asks for the PostgreSQL driver, the report's packages and the command line's
only under their extras (ADR-0041, ADR-0044). Issue 20: it ships ``py.typed``, which a
host's ``mypy --strict`` reads; ``make dist`` ships nothing stale from ``build/``; and a
checkout whose links are plain files (git's ``core.symlinks=false``) does not build
(ADR-0092).

The wheel is ``make dist`` of a clone of HEAD (committed work only) with a stray file
planted under ``build/lib``; with the lock's setuptools and no build isolation, nothing
is downloaded.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).parents[2]
EXTRAS = ("postgres", "report", "cli", "all", "test")
VENV = Path(sys.executable).parents[1]
STRAY = "build/lib/miam_economies/stale_module.py"
"""A file a previous ``pip wheel`` of the tree could have left (ecosystem review, §3 E)."""


def _clone(where: Path, *config: str) -> Path:
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()
    subprocess.run(["git", *config, "clone", "--quiet", "--no-checkout", str(ROOT),
                    str(where)], check=True)
    subprocess.run(["git", *config, "-C", str(where), "checkout", "--quiet", head],
                   check=True)
    return where


def _make_dist(tree: Path) -> subprocess.CompletedProcess[str]:
    # This test run's venv, taken as installed (-o: never remade from the clone's files).
    return subprocess.run(["make", "--no-print-directory", "-C", str(tree), "dist",
                           f"VENV={VENV}", "-o", f"{VENV}/.installed"],
                          capture_output=True, text=True)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    """``make dist`` of a fresh clone of HEAD holding a stale ``build/lib`` file, opened."""
    tree = _clone(tmp_path_factory.mktemp("wheel") / "src")
    (tree / STRAY).parent.mkdir(parents=True)
    (tree / STRAY).write_text("STALE = True\n")
    built = _make_dist(tree)
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel_path,) = (tree / "dist").glob("miam_economies-*.whl")
    return zipfile.ZipFile(wheel_path)


def _dist_info(wheel: zipfile.ZipFile, name: str) -> str:
    (path,) = [n for n in wheel.namelist() if n.endswith(f".dist-info/{name}")]
    return wheel.read(path).decode()


def test_the_wheel_holds_miam_economies_and_its_dist_info_only(wheel: zipfile.ZipFile) -> None:
    names = wheel.namelist()
    tops = {name.split("/", 1)[0] for name in names}
    (dist_info,) = tops - {"miam_economies"}
    assert dist_info.startswith("miam_economies-") and dist_info.endswith(".dist-info")
    for module in ("__init__.py", "api/extras.py", "api/cli/__init__.py",
                   "api/http/report_page.py", "api/store/application.py",
                   "domain/events.py", "projections/view.py"):
        assert f"miam_economies/{module}" in names, module
    assert "miam_economies/api/http/templates/rapport.html" in names  # the report's page
    assert "miam_economies/py.typed" in names
    assert "miam-economies = miam_economies.api.cli:main" in _dist_info(
        wheel, "entry_points.txt")


def test_the_metadata_asks_for_each_optional_part_only_under_its_extra(
        wheel: zipfile.ZipFile) -> None:
    metadata = _dist_info(wheel, "METADATA").splitlines()
    provides = {line.split(": ", 1)[1] for line in metadata
                if line.startswith("Provides-Extra: ")}
    assert provides == set(EXTRAS)
    wanted: dict[str, set[str]] = {}  # requirement -> the extras it comes with ("" = base)
    for line in metadata:
        if line.startswith("Requires-Dist: "):
            requirement = Requirement(line.split(": ", 1)[1])
            marker = requirement.marker
            wanted[canonicalize_name(requirement.name)] = {""} if marker is None else {
                extra for extra in EXTRAS if marker.evaluate({"extra": extra})}
    by_extra = {extra: {name for name, extras in wanted.items() if extras == {extra}}
                for extra in ("", *EXTRAS)}
    assert wanted["psycopg"] == wanted["psycopg-pool"] == {"postgres"}
    assert by_extra[""] == {"eventsourcing", "starlette", "orjson", "tzlocal",
                            "prometheus-client", "msgspec"}
    assert {"scipy", "numpy"} <= by_extra["test"]  # references for the tests only
    assert by_extra["postgres"] == {"psycopg", "psycopg-pool"}
    assert by_extra["report"] == {"pygal", "jinja2", "markupsafe"}
    assert by_extra["cli"] == {"click", "rich", "uvicorn"}
    assert by_extra["all"] == {"miam-economies"}  # the three extras above, by name


def test_runtime_dependencies_are_ranges_with_both_bounds(wheel: zipfile.ZipFile) -> None:
    # A host keeps its own versions within the ranges (SPEC): no exact pin, an upper bound
    # at the next major so a breaking release is not taken on trust.
    for line in _dist_info(wheel, "METADATA").splitlines():
        if not line.startswith("Requires-Dist: ") or 'extra == "test"' in line:
            continue
        requirement = Requirement(line.split(": ", 1)[1])
        if requirement.name == "miam-economies":
            continue
        operators = {spec.operator for spec in requirement.specifier}
        assert operators == {">=", "<"}, line


def test_make_dist_ships_nothing_stale_from_build(wheel: zipfile.ZipFile) -> None:
    assert not [name for name in wheel.namelist() if "stale_module" in name]


def test_a_checkout_with_its_links_as_plain_files_does_not_build(tmp_path: Path) -> None:
    tree = _clone(tmp_path / "src", "-c", "core.symlinks=false")
    assert (tree / "miam_economies" / "api").is_file()  # the link, as git wrote it
    built = _make_dist(tree)
    assert built.returncode != 0
    said = built.stdout + built.stderr
    assert "core.symlinks" in said, said
    assert "miam_economies/domain, miam_economies/projections, miam_economies/api" in said
    assert not list(tree.glob("dist/*.whl"))


def test_a_hosts_mypy_strict_reads_our_types(wheel: zipfile.ZipFile, tmp_path: Path) -> None:
    # MIAM's environment: the wheel installed (unpacked: it is pure Python) in a venv of its
    # own, our dependencies beside it; MIAM's mypy --strict on a module that uses us.
    host = tmp_path / "host"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(host)], check=True)
    (site,) = host.glob("lib/python*/site-packages")
    wheel.extractall(site)
    (site / "dependencies.pth").write_text(
        next(p for p in sys.path if p.endswith("site-packages")) + "\n")
    (tmp_path / "miam_card.py").write_text(
        "from miam_economies import read_bilan\n\n\n"
        "def net(data: str) -> int:\n"
        "    figures: dict[str, int] = read_bilan(data)[\"economies\"][\"claude-code\"]\n"
        "    return figures[\"net\"]\n"
        "\n\n"
        "wrong: str = read_bilan\n")  # a misuse the types must catch
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental",
         "--python-executable", str(host / "bin" / "python"), "miam_card.py"],
        cwd=tmp_path, env={**os.environ, "MYPYPATH": ""}, capture_output=True, text=True)
    said = checked.stdout + checked.stderr
    assert "import-untyped" not in said and "import-not-found" not in said, said
    assert "miam_card.py:9: error: Incompatible types in assignment" in said, said
