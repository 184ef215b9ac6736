"""Every relative link of ``README.md``, ``docs/`` and ``ADR/`` leads somewhere: to a file
or folder of the repository and, with a ``#fragment``, to a heading of that Markdown page,
named as GitHub names it (ADR-0121: the README maps the guides, which link each other)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md"),
                *(ROOT / "ADR").glob("*.md")])
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def prose(text: str) -> str:
    """``text`` without its fenced blocks and code spans, whose brackets are code."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`]+`", "", text)


def anchors(page: Path) -> set[str]:
    """The fragments GitHub gives ``page``'s headings: lower case, punctuation dropped,
    spaces as hyphens, ``-1``, ``-2``... after a repeated one."""
    found: set[str] = set()
    counts: dict[str, int] = {}
    for line in prose(page.read_text(encoding="utf-8")).splitlines():
        heading = re.match(r"#{1,6} +(.+?) *#* *$", line)
        if heading is None:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group(1).lower()).replace(" ", "-")
        count = counts[slug] = counts.get(slug, -1) + 1
        found.add(f"{slug}-{count}" if count else slug)
    return found


def links(page: Path) -> list[str]:
    return [target for target in LINK.findall(prose(page.read_text(encoding="utf-8")))
            if not re.match(r"[a-z][a-z0-9+.-]*:", target)]  # http:, https:, mailto:...


def test_the_guides_are_where_the_readme_says() -> None:
    assert {page.name for page in (ROOT / "docs").glob("*.md")} <= {
        target.removeprefix("docs/") for target in links(ROOT / "README.md")}


def leads_somewhere(page: Path, target: str) -> bool:
    """Whether ``target``, linked from ``page``, is a path in the repository and, with a
    fragment, a heading of the Markdown page there."""
    path, _, fragment = target.partition("#")
    where = (page.parent / path).resolve() if path else page
    if not where.exists() or not where.is_relative_to(ROOT.resolve()):
        return False
    return not fragment or (where.is_file() and fragment in anchors(where))


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file_and_a_heading(page: Path) -> None:
    assert [target for target in links(page) if not leads_somewhere(page, target)] == []
