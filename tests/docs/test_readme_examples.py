"""Every CLI command has help with an example and a line in the command-line overview.

The code blocks of README.md and docs/ run in tests/docs/test_doc_blocks.py.
"""

from __future__ import annotations

from pathlib import Path

import click

from apexmem.cli import cli

ROOT = Path(__file__).resolve().parents[2]
OVERVIEW = ROOT / "docs" / "reference" / "command-line.md"


def test_every_command_has_help_with_an_example() -> None:
    assert isinstance(cli, click.Group)

    missing = [
        name for name, command in cli.commands.items() if "Example:" not in (command.help or "")
    ]

    assert missing == []


def test_every_command_is_listed_in_the_command_line_overview() -> None:
    overview = OVERVIEW.read_text(encoding="utf-8")

    missing = [name for name in cli.commands if f"| `apexmem {name}" not in overview]

    assert missing == []


def test_the_readme_links_the_command_line_overview() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")

    assert "docs/reference/command-line.md" in readme
