"""docs/reference/surfaces.md against the real surfaces: Memory's and the view's methods, the
CLI's commands, the OpenAPI document of a real `apexmem serve` process, the MCP server's
tool list."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import anyio
import httpx
import pytest
from mcp import Client
from mcp_types import Tool
from serving import AUTH, CLI, free_port, make_memory, running

from apexmem.cli.main import cli
from apexmem.events.link import LINK_TYPES
from apexmem.mcp_server import build_server
from apexmem.memory import Memory
from apexmem.server.tenants import Tenants
from apexmem.service.view import View

TABLE: Final = Path(__file__).parents[2] / "docs" / "reference" / "surfaces.md"
SURFACES: Final = ("Python", "CLI", "HTTP", "MCP")
ABSENT: Final = "not on this surface: "
UNLISTED: Final = {("GET", "/v1/health")}
"""Not an operation on a memory: a probe's, without a token."""


def rows() -> dict[str, dict[str, str]]:
    """The table's cells by operation, then by surface."""
    lines = [
        line for line in TABLE.read_text(encoding="utf-8").splitlines() if line.startswith("|")
    ]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    assert header == ["operation", *SURFACES]
    found: dict[str, dict[str, str]] = {}
    for line in lines[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert len(cells) == len(header), line
        found[cells[0]] = dict(zip(SURFACES, cells[1:], strict=True))
    return found


def names(cell: str) -> list[str]:
    """The backticked names of a cell, leaving out what parentheses say about them."""
    return re.findall(r"`([^`]+)`", re.sub(r"\([^()]*\)", "", cell))


def http_operations(cell: str) -> set[tuple[str, str]]:
    """`METHOD /path` pairs named in a cell."""
    pairs = (name.split(" ", 1) for name in names(cell))
    return {(method, path) for method, path in pairs if method in {"GET", "POST", "DELETE"}}


@pytest.fixture(scope="module")
def openapi(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The OpenAPI document a real `apexmem serve` publishes."""
    directory = make_memory(tmp_path_factory.mktemp("surfaces"))
    base = f"http://127.0.0.1:{free_port()}"
    port = base.rsplit(":", 1)[1]
    log = directory.parent / "serve.log"
    with running(
        "serve", "--db", str(directory), "--port", port, ready=f"{base}/v1/health", log=log
    ):
        yield httpx.get(f"{base}/v1/openapi.json", headers=AUTH).json()


@pytest.fixture(scope="module")
def listed_tools(tmp_path_factory: pytest.TempPathFactory) -> list[Tool]:
    """The tools the MCP server lists, through the MCP SDK's client."""
    tenants = Tenants(single=make_memory(tmp_path_factory.mktemp("mcp")))
    tenant = tenants.get()
    assert tenant is not None

    async def listed() -> list[Tool]:
        async with Client(build_server(tenant)) as client:
            return list((await client.list_tools()).tools)

    try:
        return anyio.run(listed)
    finally:
        tenants.close()


@pytest.fixture(scope="module")
def tools(listed_tools: list[Tool]) -> list[str]:
    """The names of the tools the MCP server lists."""
    return [tool.name for tool in listed_tools]


def test_every_cell_is_filled_or_says_why_the_surface_lacks_it() -> None:
    table = rows()

    for operation, cells in table.items():
        for surface, cell in cells.items():
            if cell.startswith(ABSENT):
                assert len(cell) > len(ABSENT) + 20, (operation, surface, "give the reason")
            else:
                assert names(cell), (operation, surface, cell)
    assert len(table) >= 20


def test_the_http_column_and_the_openapi_document_name_the_same_operations(
    openapi: dict[str, Any],
) -> None:
    served = {
        (method.upper(), path)
        for path, item in openapi["paths"].items()
        for method in item
        if method in {"get", "post", "put", "patch", "delete"}
    }
    listed = set().union(*(http_operations(cells["HTTP"]) for cells in rows().values()))

    assert listed - served == set(), "the table names operations the server lacks"
    assert served - UNLISTED - listed == set(), "the server has operations the table lacks"


def test_the_mcp_column_and_the_tool_list_name_the_same_tools(tools: list[str]) -> None:
    listed = {
        name
        for cells in rows().values()
        if not cells["MCP"].startswith(ABSENT)
        for name in names(cells["MCP"])
    }

    assert listed == set(tools)


def test_the_cli_column_names_real_commands() -> None:
    named = {
        name.split()[1]
        for cells in rows().values()
        for name in names(cells["CLI"])
        if name.startswith("apexmem ")
    }

    assert named - set(cli.commands) == set()
    assert {"assert", "retract", "export", "episode", "link", "fact-graph", "status"} <= named


def test_the_python_column_names_public_methods_and_functions() -> None:
    for operation, cells in rows().items():
        cell = cells["Python"]
        methods = re.findall(r"\b(mem|view)\.([a-z_]+)\(", cell)
        functions = re.findall(r"\b(apexmem(?:\.[a-z_]+)+)\(", cell)
        assert methods or functions, operation
        for owner, name in methods:
            kind = Memory if owner == "mem" else View
            assert not name.startswith("_") and callable(getattr(kind, name, None)), (owner, name)
        for dotted in functions:
            module, _, function = dotted.rpartition(".")
            assert callable(getattr(importlib.import_module(module), function))


def test_an_episodes_messages_read_the_same_on_the_cli_and_over_mcp(tmp_path: Path) -> None:
    directory = make_memory(tmp_path)
    line = '{"op": "message", "episode": "conv-7", "speaker": "Priya", "text": "I live in Lisbon."}'
    told = subprocess.run(
        [*CLI, "--db", str(directory), "ingest", "-"],
        check=False,
        input=line,
        text=True,
        capture_output=True,
    )
    shown = subprocess.run(
        [*CLI, "--db", str(directory), "--json", "episode", "conv-7"],
        capture_output=True,
        text=True,
        check=False,
    )
    tenants = Tenants(single=directory)
    tenant = tenants.get()
    assert tenant is not None

    async def called() -> Any:
        async with Client(build_server(tenant)) as client:
            return await client.call_tool("get_episode", {"conversation": "conv-7"})

    try:
        over_mcp = anyio.run(called)
    finally:
        tenants.close()

    assert told.returncode == 0, told.stderr
    assert shown.returncode == 0, shown.stderr
    assert "Priya: I live in Lisbon." in over_mcp.content[0].text
    events = over_mcp.structured_content["events"]
    assert [e["data"]["text"] for e in events if e["tag"] == "message-recorded.v1"] == [
        "I live in Lisbon."
    ]
    assert '"I live in Lisbon."' in shown.stdout


def _undescribed(properties: dict[str, Any]) -> list[str]:
    return [name for name, prop in properties.items() if not prop.get("description")]


def test_every_mcp_input_property_is_described_and_fixed_values_are_listed(
    listed_tools: list[Tool],
) -> None:
    undescribed = {
        tool.name: _undescribed(schema.get("properties", {}))
        for tool in listed_tools
        for schema in [tool.input_schema, *tool.input_schema.get("$defs", {}).values()]
        if _undescribed(schema.get("properties", {}))
    }
    remember = next(t for t in listed_tools if t.name == "remember").input_schema["properties"]
    link = next(t for t in listed_tools if t.name == "link_facts").input_schema["properties"]

    assert undescribed == {}
    assert "person" in remember["subject_type"]["description"]
    assert "semantic" in remember["edge_type"]["enum"]
    assert sorted(link["link_type"]["enum"]) == sorted(LINK_TYPES)


def test_every_openapi_request_field_and_parameter_is_described(openapi: dict[str, Any]) -> None:
    requests = {
        ref.rsplit("/", 1)[1]
        for item in openapi["paths"].values()
        for operation in item.values()
        for ref in re.findall(r'"\$ref": "([^"]+)"', json.dumps(operation.get("requestBody", {})))
    }
    fields = {
        name: _undescribed(openapi["components"]["schemas"][name].get("properties", {}))
        for name in requests | {"ChatMessageIn"}
    }
    parameters = [
        (path, parameter["name"])
        for path, item in openapi["paths"].items()
        for operation in item.values()
        for parameter in operation.get("parameters", [])
        if not parameter.get("description")
    ]

    assert len(requests) >= 9
    assert {name: missing for name, missing in fields.items() if missing} == {}
    assert parameters == []
    episodes = openapi["paths"]["/v1/episodes"]["get"]["parameters"]
    entity_type = next(p for p in episodes if p["name"] == "entity_type")["schema"]
    assert "person" in json.dumps(entity_type)
