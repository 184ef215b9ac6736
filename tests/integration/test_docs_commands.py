"""The commands ``README.md`` and ``docs/`` show exist as shown (ADR-0121): each
``miam-economies COMMAND --option`` is a command of the installed script that takes those
options, each ``make TARGET`` a target of the Makefile, each ``python -m MODULE --option`` a
module of the repository that names the option. What the commands print is checked where
the pages show it (``test_readme_classement.py``, ``test_prices.py``,
``test_readme_embedding.py``); this only keeps the synopses from drifting."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SCRIPT = Path(sys.executable).with_name("miam-economies")


def shown(page: Path) -> list[str]:
    """The shell the page shows: its code spans, and the lines of its fenced blocks but
    Python and plain text ones, comments left out, whitespace made single."""
    text = page.read_text(encoding="utf-8")
    found = []
    for language, block in re.findall(r"^```(\w*)\n(.*?)^```", text, re.S | re.M):
        if language not in ("python", "text"):
            found += [line.split(" #")[0] for line in block.splitlines()]
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    found += re.findall(r"`([^`]+)`", prose)
    return [" ".join(snippet.split()) for snippet in found]


def invocations(pattern: str) -> dict[str, set[str]]:
    """``{name: options}`` of every shown command matching ``pattern`` (its group 1 is
    the name), over every page; ``--help`` aside."""
    found: dict[str, set[str]] = defaultdict(set)
    for page in PAGES:
        for snippet in shown(page):
            for match in re.finditer(pattern + r"(.*)", snippet):
                found[match.group(1)] |= set(re.findall(r"--[a-z][a-z-]*",
                                                        match.group(2))) - {"--help"}
    return found


def test_every_miam_economies_command_shown_takes_the_options_shown() -> None:
    commands = invocations(r"(?:^|\s|bin/)miam-economies ([a-z]+)\b")
    assert {"serve", "bilan", "classement", "compare", "replay", "import", "export",
            "migrate", "project", "rapport", "anomalies"} <= set(commands)
    for command, options in sorted(commands.items()):
        helped = subprocess.run([str(SCRIPT), command, "--help"], capture_output=True,
                                text=True, timeout=60)
        assert helped.returncode == 0, (command, helped.stderr)
        listed = set(re.findall(r"--[a-z][a-z-]*", helped.stdout))
        assert options - listed == set(), command


def test_every_make_target_shown_is_the_makefiles() -> None:
    targets = set(re.findall(r"^([a-z]+):", (ROOT / "Makefile").read_text(), re.M))
    shown_targets = set(invocations(r"\bmake ([a-z]+)\b"))
    assert {"run", "test", "bench", "dist"} <= shown_targets
    assert shown_targets - targets == set()


def test_every_python_module_shown_exists_and_names_the_options_shown() -> None:
    modules = invocations(r"python -m ([a-z_.]+)")
    assert "bench.run" in modules
    for module, options in sorted(modules.items()):
        spec = importlib.util.find_spec(module)
        assert spec is not None and spec.origin is not None, module
        source = Path(spec.origin).read_text(encoding="utf-8")
        # argparse's BooleanOptionalAction declares "--x" and answers "--no-x" too.
        declared = {option for option in options if f'"{option}' in source
                    or (option.startswith("--no-") and "BooleanOptionalAction" in source
                        and f'"--{option[5:]}' in source)}
        assert set(options) - declared == set(), module
