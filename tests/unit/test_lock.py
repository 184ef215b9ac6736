"""The lock files the standalone service installs from (ADR-0044, ADR-0160) agree with
``pyproject.toml``: every requirement of the base, of the extras each installs and of the
build is pinned, at a version its range allows, with hashes. ``requirements.lock`` (``make
test`` and the other targets) holds the service and its test tools; ``requirements-run.lock``
(``make run``) the service alone, at the same versions, with no test tool. A dependency added
or a range moved without ``make lock`` fails here, not on a fresh machine."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).parents[2]
RUN_EXTRAS = ("postgres", "report", "cli")
"""The extras of the standalone service, `make lock`'s RUN_EXTRAS (``requirements-run.lock``)."""
SERVICE_EXTRAS = (*RUN_EXTRAS, "test")
"""The extras `make lock` resolves into ``requirements.lock`` (the Makefile's EXTRAS)."""
LOCKS = {"requirements.lock": SERVICE_EXTRAS, "requirements-run.lock": RUN_EXTRAS}
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _locked(lock: str) -> dict[str, tuple[Version, frozenset[str]]]:
    """Package -> (pinned version, its hashes) of the lock file ``lock``."""
    text = (ROOT / lock).read_text(encoding="utf-8")
    pins: dict[str, tuple[Version, frozenset[str]]] = {}
    # One entry: "name==version [; marker] \" then its "--hash=sha256:..." lines.
    for match in re.finditer(r"^([A-Za-z0-9._-]+)==(\S+)(?: ;[^\\\n]+)?((?: \\\n +--hash=\S+)+)",
                             text, re.MULTILINE):
        name, version, hashes = match.groups()
        pins[canonicalize_name(name)] = (Version(version),
                                         frozenset(re.findall(r"--hash=(\S+)", hashes)))
    return pins


def _declared(extras: tuple[str, ...]) -> list[Requirement]:
    return [Requirement(line) for line in (
        *PROJECT["project"]["dependencies"],
        *(r for extra in extras for r in PROJECT["project"]["optional-dependencies"][extra]),
        *PROJECT["build-system"]["requires"])]


@pytest.mark.parametrize("lock", LOCKS)
def test_every_requirement_is_locked_within_its_range_with_hashes(lock: str) -> None:
    pins = _locked(lock)
    for requirement in _declared(LOCKS[lock]):
        name = canonicalize_name(requirement.name)
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue  # not for this platform (pgserver's wheels): pip-compile left it out
        assert name in pins, f"{name} is not in {lock}: run `make lock`"
        version, hashes = pins[name]
        assert requirement.specifier.contains(version, prereleases=True), (
            f"{lock} pins {name} {version}, outside {requirement.specifier}: run `make lock`")
        assert hashes, name


@pytest.mark.parametrize("lock", LOCKS)
def test_the_lock_has_no_unhashed_or_unpinned_line(lock: str) -> None:
    # pip --require-hashes refuses the whole file for one such line (a path, a URL, the
    # project itself through a self-referring extra).
    for line in (ROOT / lock).read_text(encoding="utf-8").splitlines():
        if line and not line.startswith((" ", "#")):
            assert re.fullmatch(r"[A-Za-z0-9._-]+==\S+(?: ;[^\\]+)? \\", line), line


def test_the_runtime_lock_is_the_full_locks_versions_without_a_test_tool() -> None:
    full, run = _locked("requirements.lock"), _locked("requirements-run.lock")
    # make run then make test in one .venv: the full install only adds packages.
    assert {name: full.get(name) for name in run} == run, "run `make lock`"
    test_tools = {canonicalize_name(r.name) for r in _declared(("test",))}
    runtime = {canonicalize_name(r.name) for r in _declared(RUN_EXTRAS)}
    assert not (test_tools - runtime) & set(run), "a test tool in requirements-run.lock"
    assert len(run) < len(full) / 2
