"""The files a command writes (``export --out``, ``rapport --html``): a path is checked
when the option is parsed, before any work and before anything is created, and a file is
then created private, or written beside and renamed once complete (issue 32, point 4;
ADR-0161).

A path is refused, as a usage error naming the option, when its folder does not exist (or
is not a folder, or cannot be written), when it names a folder, or something else than a
regular file (``/dev/null``: the rename or the ``chmod`` would replace or change it), or a
file that cannot be written. ``-`` is refused too: it would be a file named ``-`` in the
current folder, not standard output, which ``export`` writes without ``--out`` (write
``./-`` for such a file).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import click

from miam_economies.domain.errors import MiamEconomiesError


class OutputUnwritable(MiamEconomiesError, OSError):
    """A file a command writes cannot be created or opened (the folder removed or made
    read-only after the option was checked, a full disk at creation): one line naming the
    file and the system's reason."""


if TYPE_CHECKING:
    # click 8.5 made ParamType generic; the range pyproject.toml allows (>=8.0) starts
    # before it, where subscripting it fails at import: the generic for mypy only.
    _ParamType = click.ParamType[Path, "str | Path"]
else:
    _ParamType = click.ParamType


class OutputFile(_ParamType):
    """A click parameter type for a file a command writes: the value as a ``Path``, once
    ``refusal`` found nothing wrong with it; else ``click.BadParameter`` (exit status 2,
    one ``Error:`` line naming the option), before the command runs."""

    name = "file"

    def convert(self, value: str | Path, param: click.Parameter | None,
                ctx: click.Context | None) -> Path:
        """``value`` as a ``Path``; ``self.fail`` with ``refusal``'s reason."""
        if isinstance(value, Path):
            return value
        why = refusal(str(value))
        if why is not None:
            self.fail(why, param, ctx)
        return Path(value)


OUTPUT_FILE = OutputFile()
"""The type of every option naming a file a command writes."""


def refusal(text: str) -> str | None:
    """Why the file ``text`` (a path as typed) cannot be written, or None when it can be:
    ``-``; a path that is a folder, or exists as something else than a regular file, or
    cannot be written; a folder that does not exist, is not a folder, or cannot be
    written into. Reads the file system only (``os.stat``, ``os.access``); creates
    nothing."""
    if text == "-":
        return ("'-' would be a file named '-', not standard output: name a file "
                "(./- for that one)")
    if not text:
        return "name a file"
    path = Path(text)
    folder = path.parent
    if path.is_dir():
        return f"{text} is a folder: name a file in it ({os.path.join(text, 'NAME')})"
    if path.exists() and not path.is_file():
        return f"{text} exists and is not a regular file: name a file"
    if not folder.exists():
        return f"folder {folder} does not exist: create it first (mkdir -p {folder})"
    if not folder.is_dir():
        return f"{folder} is not a folder"
    # Both the file and, for a file written beside and renamed, its folder: as root
    # os.access says yes to everything, and _private then reports what the OS refuses.
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"folder {folder} cannot be written into"
    if path.exists() and not os.access(path, os.W_OK):
        return f"{text} cannot be written"
    return None


@contextmanager
def writing(out: Path | None) -> Iterator[TextIO]:
    """Standard output when ``out`` is None, or ``out`` written beside (``NAME.partiel``)
    and renamed once complete: an interrupted export never leaves a truncated file under
    the asked name. Raises ``OutputUnwritable`` when the file beside cannot be created."""
    if out is None:
        yield sys.stdout
        sys.stdout.flush()
        return
    partial = out.with_name(out.name + ".partiel")
    try:
        with private(partial) as f:
            yield f
        os.replace(partial, out)
    finally:
        partial.unlink(missing_ok=True)


def private(path: Path) -> TextIO:
    """``path`` opened for writing text, created (or truncated) with mode 0600: exports
    and reports hold session ids and figures, like the data files (ADR-0010). Raises
    ``OutputUnwritable`` (one line) when the system refuses to create or open it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    except OSError as exc:
        raise OutputUnwritable(f"cannot write {path}: {exc.strerror or exc}") from None
    os.fchmod(fd, 0o600)  # an existing file keeps its mode otherwise
    return open(fd, "w", encoding="utf-8", newline="\n")
