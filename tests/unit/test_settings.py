"""``Settings(data=...)`` takes a ``Path`` or a ``str`` (issue 33: every read function
takes a ``str``, and ``'str' / 'str'`` at start-up said nothing), keeps a ``Path``, and
the ``__init__`` type checkers read lists the dataclass's own fields."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

from miam_economies import Settings
from miam_economies.api.service import settings as module


def test_data_given_as_a_str_is_kept_as_a_path() -> None:
    given = Settings(data="logs/mcp", token="t")
    assert given.data == Path("logs/mcp") and isinstance(given.data, Path)
    assert given == Settings(data=Path("logs/mcp"), token="t")
    assert given.database.path == Path("logs/mcp/economies.sqlite")
    assert dataclasses.replace(given, token=None).data == Path("logs/mcp")


def test_the_init_type_checkers_read_is_the_dataclass_one() -> None:
    # Written out under TYPE_CHECKING (data: Path | str): a field added to the class and
    # not there would be unknown to a host's mypy.
    tree = ast.parse(inspect.getsource(module.Settings))
    (init,) = [node for node in ast.walk(tree)
               if isinstance(node, ast.FunctionDef) and node.name == "__init__"]
    assert [arg.arg for arg in init.args.args[1:]] == [
        field.name for field in dataclasses.fields(Settings)]
