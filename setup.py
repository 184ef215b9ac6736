"""The build's own check, run by setuptools before every build of this project (sdist,
wheel, editable; ADR-0092): ``miam_economies/`` must reach ``domain/``, ``projections/``
and ``api/`` through its links (ADR-0041). A checkout made with git's
``core.symlinks=false`` (Windows' default) holds each link as a small text file instead,
and a wheel built from it would hold ``miam_economies/__init__.py`` alone, failing only at
first use: the build stops here instead, saying why. Everything else is in pyproject.toml.
"""

from __future__ import annotations

from pathlib import Path

from setuptools import setup

LINKED = ("domain", "projections", "api")
"""The sub-packages ``miam_economies/`` links to, each ``../<name>``."""


def unreachable(root: Path) -> list[str]:
    """The linked sub-packages of ``root/miam_economies`` without their ``__init__.py``."""
    return [name for name in LINKED
            if not (root / "miam_economies" / name / "__init__.py").is_file()]


def main() -> None:
    """Refuse a tree whose links are broken, then build as pyproject.toml says."""
    broken = unreachable(Path(__file__).resolve().parent)
    if broken:
        raise SystemExit(
            "miam-economies will not build: "
            + ", ".join(f"miam_economies/{name}" for name in broken)
            + " should be symbolic links to ../" + ", ../".join(broken)
            + ", and this checkout holds them as plain files (git's core.symlinks=false, "
            "Windows' default). Clone again with symbolic links: "
            "`git clone -c core.symlinks=true ...` (on Windows, with Developer Mode on), "
            "or in this clone `git config core.symlinks true` then "
            "`git checkout -- miam_economies`. A wheel built from it would hold "
            "miam_economies/__init__.py alone.")
    setup()


main()
