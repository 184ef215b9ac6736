"""``--csv``: the rows of ``bilan`` and ``classement`` as CSV on standard output, the
bytes the HTTP routes give for ``?format=csv`` (``api.service.csv_answers``; ADR-0134)."""

from __future__ import annotations

import sys

import click

csv_option = click.option(
    "--csv", "as_csv", is_flag=True,
    help="Print one row per group as CSV (RFC 4180, a header row) for a spreadsheet: the "
         "HTTP route's ?format=csv. Not with --json.")
"""The ``--csv`` flag (a command takes ``as_csv``)."""


def one_output(as_json: bool, as_csv: bool) -> None:
    """Raise ``click.UsageError`` (exit status 2) when both ``--json`` and ``--csv`` are
    given: they are two answers to one question, so the command refuses to pick."""
    if as_json and as_csv:
        raise click.UsageError("--json and --csv are mutually exclusive: give one")


def print_csv(text: str) -> None:
    """``text`` on standard output as UTF-8 bytes, its ``\\r\\n`` line ends as they are
    (RFC 4180; a text stream could translate them)."""
    sys.stdout.flush()  # anything written as text goes first
    sys.stdout.buffer.write(text.encode("utf-8"))
    sys.stdout.buffer.flush()
