"""Forget over HTTP (POST /v1/forget) and MCP (the `forget` tool), in process."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import anyio
import pytest
from litestar.testing import TestClient
from mcp import Client
from mcp_types import TextContent
from serving import TOKEN as SERVING_TOKEN
from serving import free_port, running

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


WRITER: Final = "writer-token-0123456789"
READER: Final = "reader-token-0123456789"
SCOPED: Final = f'\n[server]\nwrite_token = "{WRITER}"\nread_token = "{READER}"\n'


def _scoped_memory(directory: Path) -> Path:
    _memory(directory)
    with (directory / "apexmem.toml").open("a", encoding="utf-8") as settings:
        settings.write(SCOPED)
    return directory


def test_a_read_token_only_reads_and_a_write_token_may_not_forget(tmp_path: Path) -> None:
    directory = _scoped_memory(tmp_path / "mem")
    fact = {"facts": [{"subject": "Ann", "relation": "likes", "object": "Tea"}]}
    forget = {"entity": "Priya Shah", "entity_type": "person", "reason": "request #123"}

    def bearer(token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}

    with TestClient(create_app(Tenants(single=directory, token=TOKEN))) as client:
        read = client.get("/v1/stats", headers=bearer(READER))
        read_write = client.post("/v1/facts", json=fact, headers=bearer(READER))
        written = client.post("/v1/facts", json=fact, headers=bearer(WRITER))
        write_forget = client.post("/v1/forget", json=forget, headers=bearer(WRITER))
        forgot = client.post("/v1/forget", json=forget, headers=AUTH)

    assert read.status_code == 200
    assert read_write.status_code == 403
    assert read_write.json()["type"] == "urn:apexmem:problem:forbidden"
    assert written.status_code == 200
    assert write_forget.status_code == 403 and "needs admin" in write_forget.text
    assert forgot.status_code == 200 and forgot.json()["entities"] == 1


@pytest.mark.slow  # an apexmem mcp process over HTTP (~2 s of start-up)
def test_over_http_the_forget_tool_needs_the_admin_token(tmp_path: Path) -> None:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    directory = _scoped_memory(tmp_path / "mem")
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    forget = {"entity": "Priya Shah", "entity_type": "person", "reason": "request #123"}

    async def call(token: str) -> Any:
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            return await client.call_tool("forget", forget)

    command = ["mcp", "--db", str(directory), "--transport", "http", "--port", str(port)]
    with running(*command, ready=f"http://127.0.0.1:{port}/nowhere", log=tmp_path / "log"):
        as_writer = anyio.run(call, WRITER)
        as_admin = anyio.run(call, SERVING_TOKEN)

    assert as_writer.is_error and "needs admin" in as_writer.content[0].text
    assert not as_admin.is_error
    assert _found(directory, b"Priya") == []
