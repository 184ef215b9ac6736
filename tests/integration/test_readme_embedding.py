"""The two MCP host shapes of ``docs/embedding.md`` ("Using it from MIAM", once the
README's) are code that runs as printed (issue 20: "the embedding section alone is enough
to build both shapes"): each block, whole as a host would copy it, is loaded as a module,
served by a real uvicorn, refuses a request without MIAM's token, takes the contract's
example and shows net 2900, and its ``bilan`` tool answers MIAM's bilan with our section
added; MIAM's ``mypy --strict`` and our ``ruff`` find nothing to say of either, and mypy
names a host's two mistakes (issue 33). The page's read functions run as printed too,
over the data directory the host wrote; the quick build's pins are the lock's."""

from __future__ import annotations

import copy
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import httpx
import pytest
from mypy import api as mypy_api

from tests.conftest import EXAMPLE_BATCH, EXAMPLES
from tests.integration.uvicorn_thread import serving

ROOT = Path(__file__).parents[2]
PAGE = ROOT / "docs" / "embedding.md"
TOKEN = "miam-token-of-the-readme"


def snippets() -> dict[str, str]:
    """``{"shape1": code, "shape2": code}`` as the page prints them, each block whole."""
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index("*Shape 1: our routes"):text.index("To guard them with")]
    first, second = re.findall(r"```python\n(.*?)```", section, re.S)
    return {"shape1": first, "shape2": second}


def load(name: str, code: str, where: Path) -> ModuleType:
    path = where / f"{name}.py"
    path.write_text(code, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"readme_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("shape", ["shape1", "shape2"])
def test_the_readmes_host_serves_the_example_behind_miams_token(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str) -> None:
    monkeypatch.setenv("MIAM_TOKEN", TOKEN)
    monkeypatch.chdir(tmp_path)  # DATA is logs/mcp under the working directory
    host = load(shape, snippets()[shape], tmp_path)
    with serving(host.app) as url:
        assert httpx.post(url + "/economies", json=EXAMPLE_BATCH).status_code == 401
        assert httpx.get(url + "/economies/bilan").status_code == 401
        auth = {"Authorization": f"Bearer {TOKEN}"}
        posted = httpx.post(url + "/economies", json=copy.deepcopy(EXAMPLE_BATCH),
                            headers=auth)
        assert posted.json() == {"ok": True, "recus": 2, "doublons": 0}
        bilan = httpx.get(url + "/economies/bilan", params={"attendre": "1"},
                          headers=auth).json()
        # The tool through the SDK's own call path (a sync tool: run in a worker thread).
        called = anyio.run(host.server.call_tool, "bilan", {})
    assert bilan["economies"]["claude-code"]["net"] == 2900
    assert (tmp_path / "logs" / "mcp").is_dir()
    # MIAM's answer kept, our section added: not the whole read_bilan.
    assert not called.is_error, called
    assert called.structured_content == {**host.miam_bilan(),
                                         "economies": bilan["economies"]}


def test_the_readmes_hosts_pass_ruff(tmp_path: Path) -> None:
    # A host lints what it copies: each block whole, under this repository's rules.
    for name, code in snippets().items():
        (tmp_path / f"{name}.py").write_text(code, encoding="utf-8")
    checked = subprocess.run(
        [str(Path(sys.executable).with_name("ruff")), "check", "--no-cache", "--config",
         str(ROOT / "pyproject.toml"), *(str(tmp_path / f"{name}.py") for name in snippets())],
        capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_quick_builds_pins_are_the_locks() -> None:
    # The page's quick path builds make dist's wheel only with the lock's build tools.
    pinned = re.findall(r"\b(build|setuptools|wheel)==(\S+)",
                        PAGE.read_text(encoding="utf-8"))
    locked = re.findall(r"^(build|setuptools|wheel)==(\S+)",
                        (ROOT / "requirements.lock").read_text(encoding="utf-8"), re.M)
    assert len(pinned) == 3 and sorted(pinned) == sorted(locked)


MISTAKES = {
    # Issue 33: both passed mypy --strict and failed at run time.
    "misspelt": ("from miam_economies import economies_secton\n"
                 "x: int = economies_secton('logs/mcp')\n",
                 'Module "miam_economies" has no attribute "economies_secton"; maybe '
                 '"economies_section"?'),
    "without_app": ("from miam_economies import Settings, open_economies\n"
                    "opened = open_economies(Settings(data='logs/mcp'))\n",
                    'Missing positional argument "app" in call to "open_economies"'),
}
"""A host's two mistakes, each with what ``mypy --strict`` must say of it."""


def test_the_readmes_hosts_pass_mypy_strict_and_a_hosts_mistakes_do_not(
        tmp_path: Path) -> None:
    # One mypy run for all (it costs seconds): the page's shapes clean, each mistake named.
    codes = {**snippets(), **{name: code for name, (code, _) in MISTAKES.items()}}
    for name, code in codes.items():
        (tmp_path / f"{name}.py").write_text(code, encoding="utf-8")
    out, err, status = mypy_api.run(["--strict", "--no-incremental", "--cache-dir",
                                     str(tmp_path / "cache"),
                                     *(str(tmp_path / f"{name}.py") for name in codes)])
    errors = [line for line in out.splitlines() if ": error: " in line]
    assert status == 1, out + err
    assert [line for line in errors if not line.startswith(tuple(
        str(tmp_path / f"{name}.py") for name in MISTAKES))] == [], out  # shapes clean
    for name, (_, said) in MISTAKES.items():
        assert [line for line in errors
                if line.startswith(str(tmp_path / f"{name}.py")) and said in line], out


def test_the_read_functions_run_as_printed(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # The example stored in logs/mcp (as MIAM's data directory is), and a journal line
    # giving its demande a preset and a test: then the page's block, MIAM's tool answer
    # being a dict.
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "logs" / "mcp"
    subprocess.run([str(Path(sys.executable).with_name("miam-economies")), "import",
                    "--data", str(data), str(EXAMPLES / "contract-batch.json")],
                   check=True, capture_output=True)
    (data / "delegations.jsonl").write_text(json.dumps(
        {"demande_id": "dem-9c8a4d0189", "preset": "rapide", "test_id": "t01"}) + "\n")
    (block,) = [code for code in re.findall(r"```python\n(.*?)```",
                                            PAGE.read_text(encoding="utf-8"), re.S)
                if "read_classement" in code]
    names: dict[str, Any] = {"answer": {}}
    exec(compile(block, str(PAGE), "exec"), names)  # the page's own code, as printed
    assert names["answer"]["economies"]["claude-code"]["net"] == 2900
    assert names["bilan"]["economies"] == names["answer"]["economies"]
    assert names["card"] == 0  # dated 2026-10-30: "today" is today, as the page says
    for ranked in (names["ranked"], names["paired"]):
        assert ranked["par"] == "preset"
    # The window echoed; the example's demande (2026-10-30) is before it, so no group.
    assert names["recent"]["depuis"] == "2026-11-01" and names["recent"]["groupes"] == []
    assert names["changed"] == []  # one demande, one day: nothing to compare


def test_the_session_read_runs_as_printed(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # The contract's example and the example transcripts of its session, stored in
    # logs/mcp; then the page's block.
    monkeypatch.chdir(tmp_path)
    data, script = tmp_path / "logs" / "mcp", Path(sys.executable).with_name("miam-economies")
    for command in (["import", "--data", str(data), str(EXAMPLES / "contract-batch.json")],
                    ["releves", "--data", str(data), str(EXAMPLES / "transcripts")]):
        subprocess.run([str(script), *command], check=True, capture_output=True)
    (block,) = [code for code in re.findall(r"```python\n(.*?)```",
                                            PAGE.read_text(encoding="utf-8"), re.S)
                if "read_session" in code]
    names: dict[str, Any] = {}
    exec(compile(block, str(PAGE), "exec"), names)  # the page's own code, as printed
    assert names["net"] == 2900 and names["spent"]["cout"] == 10_920
    assert round(names["share"], 2) == 0.21 and names["verdicts"] == {"a1": "concorde"}
