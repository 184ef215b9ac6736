"""Issue 33: a data directory this process cannot write is refused in one
``DataDirectoryError`` (a ``MiamEconomiesError`` and an ``OSError``) naming the directory
and the file, by ``open_economies`` and by ``read_bilan`` alike, instead of the OS's error
without context or SQLite's ``OperationalError`` through the library's pool."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from miam_economies import MiamEconomiesError, Settings
from miam_economies.api.service.bootstrap import open_services
from miam_economies.api.service.data_directory import DataDirectoryError
from tests.conftest import EXAMPLES

SCRIPT = Path(sys.executable).with_name("miam-economies")

# Both ways MIAM opens the directory, in a process of their own (below).
READER = """
import json, sys
import anyio
from starlette.applications import Starlette
from miam_economies import Settings, economies_routes, open_economies, read_bilan

data, said = sys.argv[1], {}
try:
    read_bilan(data)
except Exception as exc:
    said["read_bilan"] = [[c.__name__ for c in type(exc).__mro__], str(exc)]

async def host() -> None:
    app = Starlette(routes=economies_routes(auth="t"))
    async with open_economies(Settings(data=data), app):
        pass

try:
    anyio.run(host)
except Exception as exc:
    said["open_economies"] = [[c.__name__ for c in type(exc).__mro__], str(exc)]
print(json.dumps(said))
"""


def _as_a_plain_user() -> list[str]:
    # root writes anything (CAP_DAC_OVERRIDE): drop those powers in the child, as the
    # embedding review did, so that file modes hold for it.
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: file modes cannot hold")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search,-fowner"]


@pytest.fixture
def read_only_store(tmp_path: Path) -> Iterator[Path]:
    """A data directory holding the example, then made read-only, files and all."""
    data = tmp_path / "mcp"
    subprocess.run([str(SCRIPT), "import", "--data", str(data),
                    str(EXAMPLES / "contract-batch.json")], check=True, capture_output=True)
    for each in data.iterdir():
        each.chmod(0o444)
    data.chmod(0o555)
    try:
        yield data
    finally:
        data.chmod(0o755)


def test_a_read_only_store_is_refused_naming_the_directory_and_the_file(
        read_only_store: Path) -> None:
    before = (read_only_store / "economies.sqlite").read_bytes()
    done = subprocess.run([*_as_a_plain_user(), sys.executable, "-c", READER,
                           str(read_only_store)], capture_output=True, text=True, timeout=60)
    said = json.loads(done.stdout)
    for entry in ("read_bilan", "open_economies"):
        classes, message = said[entry]
        assert classes[:3] == ["DataDirectoryError", "MiamEconomiesError", "OSError"], entry
        assert f"cannot write its data directory {read_only_store} (" in message
        assert f"{read_only_store / 'economies.sqlite'}: attempt to write a readonly" \
               in message
        assert "Mend: make the directory and its files writable" in message
    assert (read_only_store / "economies.sqlite").read_bytes() == before


def test_a_data_directory_through_a_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "logs").write_text("a file, not a directory")
    with pytest.raises(DataDirectoryError) as refused, \
            open_services(Settings(data=str(tmp_path / "logs" / "mcp"))):
        pass
    assert isinstance(refused.value, MiamEconomiesError | OSError)
    assert str(refused.value).startswith(
        f"miam-economies cannot write its data directory {tmp_path / 'logs' / 'mcp'} "
        f"(creating it: Not a directory)")


def test_serve_on_a_data_directory_it_cannot_make_says_so_in_one_line(tmp_path: Path) -> None:
    # Issue 33.3 for the first thing serve writes, the token file: a path through a file.
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    env = {k: v for k, v in os.environ.items() if k != "MIAM_ECONOMIES_TOKEN"}
    done = subprocess.run([str(SCRIPT), "serve", "--data", str(blocker / "data"),
                           "--port", "0"], capture_output=True, text=True, env=env,
                          timeout=60)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert f"cannot write its data directory {blocker / 'data'}" in done.stderr
