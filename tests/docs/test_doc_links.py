"""Every link from README.md or a docs page to another file of the repository resolves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
_EXTERNAL = ("http://", "https://", "mailto:", "#")


def _links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    return [t for t in _LINK.findall(text) if not t.startswith(_EXTERNAL)]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_internal_link_of_a_page_resolves(page: Path) -> None:
    broken = [
        target for target in _links(page) if not (page.parent / target.split("#")[0]).exists()
    ]

    assert broken == []


def test_the_docs_are_linked_from_the_readme() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")

    assert "docs/index.md" in readme
