"""`apexmem serve` and `apexmem mcp` as real processes on real loopback ports."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from serving import AUTH, CLI, free_port, make_memory, running

from apexmem import Memory


@pytest.mark.slow
def test_a_served_memory_answers_over_a_real_port_and_keeps_what_it_acknowledged(
    tmp_path: Path,
) -> None:
    directory = make_memory(tmp_path)
    base = f"http://127.0.0.1:{free_port()}"
    body = {"facts": [{"subject": "Alice", "relation": "works_at", "object": "Acme"}]}
    key = {**AUTH, "Idempotency-Key": "once"}

    port = base.rsplit(":", 1)[1]
    log = tmp_path / "serve.log"

    command = ["serve", "--db", str(directory), "--port", port]

    with running(*command, ready=f"{base}/v1/stats", log=log) as server:
        first = httpx.post(f"{base}/v1/facts", json=body, headers=key).json()
        retried = httpx.post(f"{base}/v1/facts", json=body, headers=key).json()
        recalled = httpx.post(f"{base}/v1/recall", json={"query": "Alice"}, headers=AUTH).json()
        refused = httpx.get(f"{base}/v1/stats", headers={"Authorization": "Bearer nope"})

    assert server.returncode == 0, log.read_text(encoding="utf-8")
    assert retried == first
    assert recalled["hits"][0]["text"] == "Alice works_at Acme"
    assert refused.status_code == 401
    with Memory.open(directory) as memory:
        assert memory.verify().ok
        asserted = list(memory.events(tags=["fact-asserted.v1"]))
        assert [e.position for e in asserted] == [first["results"][0]["position"]]


def test_serve_refuses_a_public_address_without_a_token(tmp_path: Path) -> None:
    directory = make_memory(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "APEXMEM_TOKEN"}

    done = subprocess.run(
        [*CLI, "serve", "--db", str(directory), "--host", "0.0.0.0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 2
    assert "refusing to serve on 0.0.0.0 without a token" in done.stderr


@pytest.mark.slow
def test_mcp_over_streamable_http_needs_the_token_and_serves_the_tools(tmp_path: Path) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    directory = make_memory(tmp_path)
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    fact = {"subject": "Alice", "relation": "works_at", "object": "Acme"}

    async def session() -> tuple[list[str], Any]:
        async with (
            httpx2.AsyncClient(headers=AUTH) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            listed = await client.list_tools()
            result = await client.call_tool("remember", fact)
            return [t.name for t in listed.tools], result

    log = tmp_path / "mcp.log"

    command = ["mcp", "--db", str(directory), "--transport", "http", "--port", str(port)]

    with running(*command, ready=f"http://127.0.0.1:{port}/nowhere", log=log) as server:
        refused = httpx.post(url, json={})
        names, result = anyio.run(session)

    assert server.returncode == 0, log.read_text(encoding="utf-8")
    assert refused.status_code == 401
    assert "remember" in names
    assert not result.is_error


@pytest.mark.slow
def test_mcp_over_stdio_serves_the_tools(tmp_path: Path) -> None:
    from mcp import Client, StdioServerParameters

    directory = make_memory(tmp_path)
    parameters = StdioServerParameters(
        command=CLI[0], args=[*CLI[1:], "mcp", "--db", str(directory)]
    )
    fact = {"subject": "Alice", "relation": "works_at", "object": "Acme"}

    async def session() -> Any:
        async with Client(parameters) as client:
            await client.call_tool("remember", fact)
            return await client.call_tool("facts_about", {"entity": "Alice"})

    found = anyio.run(session)

    assert [f["object"] for f in found.structured_content["facts"]] == ["Acme"]


@pytest.mark.slow
def test_a_tenants_token_opens_no_other_tenant_by_any_spelling_of_its_path(
    tmp_path: Path,
) -> None:
    root = tmp_path / "tenants"
    root.mkdir()
    for name in ("alpha", "beta"):
        make_memory(root).rename(root / name)
        with (root / name / "apexmem.toml").open("a", encoding="utf-8") as settings:
            settings.write(f'\n[server]\ntoken = "{name}-token-0123456789"\n')
    port = free_port()
    alpha = {"Authorization": "Bearer alpha-token-0123456789", "Content-Type": "application/json"}
    body = json.dumps({"facts": [{"subject": "Mallory", "relation": "owns", "object": "Beta"}]})
    statuses = {}

    with running(
        "serve", "--tenants", str(root), "--port", str(port),
        ready=f"http://127.0.0.1:{port}/v1/openapi.json", log=tmp_path / "serve.log",
    ):  # fmt: skip
        for path in ("//v1/tenants/{}/facts", "/v1//tenants/{}/facts", "/%2Fv1/tenants/{}/facts"):
            for tenant in ("alpha", "beta"):
                # http.client sends the path as written; httpx would read `//v1` as a host.
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                connection.request("POST", path.format(tenant), body=body, headers=alpha)
                statuses[path.format(tenant)] = connection.getresponse().status
                connection.close()

    assert statuses == {
        **{p.format("alpha"): 200 for p in ("//v1/tenants/{}/facts", "/v1//tenants/{}/facts")},
        "/%2Fv1/tenants/alpha/facts": 200,
        **{p.format("beta"): 401 for p in ("//v1/tenants/{}/facts", "/v1//tenants/{}/facts")},
        "/%2Fv1/tenants/beta/facts": 401,
    }
    with Memory.open(root / "beta") as memory:
        assert memory.stats().graph.current_facts == 0
