"""Issue 12, "Installed as a library" (SPEC): the wheel holds one import package and its
metadata asks for the PostgreSQL driver, the report's packages and the command line's
only under their extras (ADR-0041, ADR-0044).

The wheel is built from a clean clone of HEAD (committed work only), so that no ignored
``build/`` or ``*.egg-info`` of the working tree can leak into it (ecosystem review, §3 E);
with the lock's setuptools and no build isolation, nothing is downloaded.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).parents[2]
EXTRAS = ("postgres", "report", "cli", "all", "test")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    """The wheel of a fresh clone of HEAD, opened."""
    where = tmp_path_factory.mktemp("wheel")
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()
    subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(ROOT), str(where / "src")],
                   check=True)
    subprocess.run(["git", "-C", str(where / "src"), "checkout", "--quiet", head], check=True)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "--wheel-dir", str(where / "dist"),
                    str(where / "src")], check=True, capture_output=True)
    (built,) = (where / "dist").glob("miam_economies-*.whl")
    return zipfile.ZipFile(built)


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
