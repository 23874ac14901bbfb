"""The generated reference pages (CLI, settings, HTTP, MCP) stay in step with the code."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from apexmem.cli import reference as cli_reference
from apexmem.server import reference as server_reference

ROOT = Path(__file__).resolve().parents[2]
PAGES: list[tuple[Path, Callable[[], str], str]] = [
    (cli_reference.CLI_PATH, cli_reference.render_cli, cli_reference.REGENERATE),
    (cli_reference.SETTINGS_PATH, cli_reference.render_settings, cli_reference.REGENERATE),
    (server_reference.HTTP_PATH, server_reference.render_http, server_reference.REGENERATE),
    (server_reference.MCP_PATH, server_reference.render_mcp, server_reference.REGENERATE),
]


@pytest.mark.parametrize(("path", "render", "command"), PAGES, ids=[str(p[0]) for p in PAGES])
def test_each_generated_reference_page_matches_the_code(
    path: Path, render: Callable[[], str], command: str
) -> None:
    current = (ROOT / path).read_text(encoding="utf-8") if (ROOT / path).is_file() else None

    assert current == render(), (
        f"{path} is stale; regenerate it from the repository root: {command}"
    )


def test_every_settings_key_and_command_is_in_its_reference() -> None:
    from apexmem.cli.main import cli, msgspec_to_dict
    from apexmem.domain.settings import Settings

    settings_page = (ROOT / cli_reference.SETTINGS_PATH).read_text(encoding="utf-8")
    cli_page = (ROOT / cli_reference.CLI_PATH).read_text(encoding="utf-8")

    keys = _leaves(msgspec_to_dict(Settings()))
    assert [k for k in keys if f"| `{k}` |" not in settings_page] == []
    assert [c for c in cli.commands if f"## `apexmem {c}`" not in cli_page] == []


def _leaves(tree: dict[str, object]) -> list[str]:
    found = []
    for key, value in tree.items():
        found += _leaves(value) if isinstance(value, dict) else [key]
    return found
