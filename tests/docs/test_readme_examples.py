"""The Python blocks of README.md and docs/ run as written; every CLI command is documented.

A tutorial's blocks (docs/tutorial/) are one session, run in order as one program: each
step builds on the one before.
"""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from apexmem.cli import cli

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def _blocks() -> list[tuple[str, str]]:
    found = []
    for path in DOCS:
        blocks = _BLOCK.findall(path.read_text(encoding="utf-8"))
        if path.parent.name == "tutorial" and blocks:
            found.append((f"{path.relative_to(ROOT)}", "\n".join(blocks)))
            continue
        for i, block in enumerate(blocks):
            found.append((f"{path.relative_to(ROOT)}#{i}", block))
    return found


@pytest.mark.parametrize(("where", "code"), _blocks(), ids=[w for w, _ in _blocks()])
def test_each_python_block_of_the_docs_runs(
    where: str, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    exec(compile(code, where, "exec"), {"__name__": "__docs__"})

    assert where


def test_every_command_has_help_with_an_example() -> None:
    assert isinstance(cli, click.Group)

    missing = [
        name for name, command in cli.commands.items() if "Example:" not in (command.help or "")
    ]

    assert missing == []


def test_every_command_is_listed_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")

    missing = [name for name in cli.commands if f"`apexmem {name}" not in readme]

    assert missing == []
