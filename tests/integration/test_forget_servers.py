"""Forget over HTTP (POST /v1/forget) and MCP (the `forget` tool), in process."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import anyio
from litestar.testing import TestClient
from mcp import Client
from mcp_types import TextContent

from apexmem import Memory
from apexmem.domain.embedding import HashingEmbedder
from apexmem.mcp_server import build_server
from apexmem.server.app import create_app
from apexmem.server.tenants import Tenants

TOKEN: Final = "test-token-0123456789"
AUTH: Final = {"Authorization": f"Bearer {TOKEN}"}


def _memory(directory: Path) -> Path:
    directory.mkdir()
    (directory / "apexmem.toml").write_text('[memory.vectors]\nembedder = "hashing"\n')
    with Memory.open(directory, embedder=HashingEmbedder()) as memory:
        memory.assert_fact(
            subject="Priya Shah", subject_type="person", relation="works_at",
            object="Acme Corp", object_type="organization",
        )  # fmt: skip
        memory.add_messages(
            episode="conv-7", messages=[{"speaker": "user", "text": "Priya Shah likes tea"}]
        )
    return directory


def _found(directory: Path, word: bytes) -> list[str]:
    return [p.name for p in directory.rglob("*") if p.is_file() and word in p.read_bytes()]


def test_post_forget_erases_and_refuses_a_request_without_a_reason(tmp_path: Path) -> None:
    directory = _memory(tmp_path / "mem")

    with TestClient(create_app(Tenants(single=directory, token=TOKEN))) as client:
        refused = client.post("/v1/forget", json={"entity": "Priya Shah"}, headers=AUTH)
        unknown = client.post("/v1/forget", json={"entity": "X Y", "reason": "r"}, headers=AUTH)
        done = client.post(
            "/v1/forget",
            json={"entity": "Priya Shah", "entity_type": "person", "reason": "request #123"},
            headers=AUTH,
        )
        verified = client.get("/v1/verify", headers=AUTH).json()

    assert refused.status_code == 422 and "reason" in refused.text
    assert unknown.status_code == 422 and "entity" in unknown.text
    assert done.status_code == 200, done.text
    assert done.json()["entities"] == 1
    assert verified["ok"]
    assert _found(directory, b"Priya") == []


def test_the_forget_tool_erases_a_conversation(tmp_path: Path) -> None:
    directory = _memory(tmp_path / "mem")
    tenants = Tenants(single=directory)
    tenant = tenants.get()
    assert tenant is not None

    async def run() -> Any:
        async with Client(build_server(tenant)) as client:
            return await client.call_tool(
                "forget", {"episode": "conv-7", "reason": "user deleted the conversation"}
            )

    try:
        result = anyio.run(run)
    finally:
        tenants.close()

    [block] = result.content
    assert isinstance(block, TextContent) and block.text.startswith("Erased ")
    assert not result.is_error and result.structured_content["messages"] == 1
    assert _found(directory, b"tea") == []
