"""The lock file the standalone service installs from (ADR-0044) agrees with
``pyproject.toml``: every requirement of the base, of the extras the service installs and
of the build is pinned, at a version its range allows, with hashes. A dependency added or
a range moved without ``make lock`` fails here, not on a fresh machine."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).parents[2]
SERVICE_EXTRAS = ("postgres", "report", "cli", "test")
"""The extras `make lock` resolves (the Makefile's EXTRAS)."""


def _locked() -> dict[str, tuple[Version, int]]:
    """Package -> (pinned version, number of hashes) of ``requirements.lock``."""
    text = (ROOT / "requirements.lock").read_text(encoding="utf-8")
    pins: dict[str, tuple[Version, int]] = {}
    # One entry: "name==version \" then its "--hash=sha256:..." lines.
    for match in re.finditer(r"^([A-Za-z0-9._-]+)==(\S+)((?: \\\n +--hash=\S+)+)", text,
                             re.MULTILINE):
        name, version, hashes = match.groups()
        pins[canonicalize_name(name)] = (Version(version), hashes.count("--hash="))
    return pins


def test_every_requirement_is_locked_within_its_range_with_hashes() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    declared = [*project["project"]["dependencies"],
                *(r for extra in SERVICE_EXTRAS
                  for r in project["project"]["optional-dependencies"][extra]),
                *project["build-system"]["requires"]]
    pins = _locked()
    for line in declared:
        requirement = Requirement(line)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is not in requirements.lock: run `make lock`"
        version, hashes = pins[name]
        assert requirement.specifier.contains(version, prereleases=True), (
            f"requirements.lock pins {name} {version}, outside {requirement.specifier}: "
            "run `make lock`")
        assert hashes >= 1, name


def test_the_lock_has_no_unhashed_or_unpinned_line() -> None:
    # pip --require-hashes refuses the whole file for one such line (a path, a URL, the
    # project itself through a self-referring extra).
    for line in (ROOT / "requirements.lock").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith((" ", "#")):
            assert re.fullmatch(r"[A-Za-z0-9._-]+==\S+ \\", line), line
