"""A conversation in through the real servers (`apexmem serve`, `apexmem mcp`), memory out."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Final

import anyio
import httpx
import pytest
from serving import AUTH, CLI, free_port, running


def make_memory(tmp_path: Path) -> Path:
    """A memory directory with the default settings (WordLlama vectors, as a user has), but
    a recall never cut short by its time budget (a cold first recall on a loaded machine)."""
    directory = tmp_path / "mem"
    directory.mkdir()
    (directory / "apexmem.toml").write_text(
        "[memory.graph.spreading_activation]\nrecall_timeout_ms = 60000\n", encoding="utf-8"
    )
    return directory


PRIYA: Final = [
    {
        "speaker": "Priya",
        "text": "I'm vegetarian and I live in Lisbon.",
        "at": "2024-05-01T09:00:00Z",
    },
    {
        "speaker": "Priya",
        "text": "My manager Tom Baker wants us to migrate to Snowflake.",
        "at": "2024-05-01T09:01:00Z",
    },
    {
        "speaker": "Priya",
        "text": "Actually I just moved to Berlin last week.",
        "at": "2024-05-20T10:00:00Z",
    },
]


@pytest.mark.slow
def test_http_messages_are_extracted_in_the_background_and_answer_where_priya_lives(
    tmp_path: Path,
) -> None:
    directory = make_memory(tmp_path)
    base = f"http://127.0.0.1:{free_port()}"
    port = base.rsplit(":", 1)[1]

    with running(
        "serve", "--db", str(directory), "--port", port,
        ready=f"{base}/v1/stats", log=tmp_path / "serve.log",
    ):  # fmt: skip
        added = httpx.post(
            f"{base}/v1/episodes/conv-7/messages", json={"messages": PRIYA}, headers=AUTH
        )
        waiting = _extracted(base)
        lives = _recall(base, "Where does Priya live now?")
        vegetarian = _recall(base, "Is Priya vegetarian?")

    assert added.status_code == 200, added.text
    assert len(added.json()["messages"]) == 3
    assert waiting == 0
    assert lives[0]["text"] == "Priya lives in Berlin"
    assert lives[0]["fact"]["valid_from"] == "2024-05-13T10:00:00Z"
    assert any("vegetarian" in hit["text"] for hit in vegetarian[:3])


def test_http_refuses_messages_without_text_and_writes_nothing(tmp_path: Path) -> None:
    from litestar.testing import TestClient

    from apexmem.server.app import create_app
    from apexmem.server.tenants import Tenants

    directory = make_memory(tmp_path)
    tenants = Tenants(single=directory, token=AUTH["Authorization"].split()[1])
    with TestClient(create_app(tenants)) as client:
        refused = client.post(
            "/v1/episodes/conv-1/messages",
            json={"messages": [{"speaker": "Ann"}]},
            headers=AUTH,
        )
        stats = client.get("/v1/stats", headers=AUTH).json()

    assert refused.status_code == 422
    assert "text" in refused.text
    assert stats["graph"]["messages"] == 0


@pytest.mark.slow
def test_mcp_add_memory_takes_raw_text_or_messages_and_recall_answers_from_them(
    tmp_path: Path,
) -> None:
    from mcp import Client, StdioServerParameters

    directory = make_memory(tmp_path)
    parameters = StdioServerParameters(
        command=CLI[0], args=[*CLI[1:], "mcp", "--db", str(directory)]
    )

    async def session() -> tuple[Any, Any, Any, Any]:
        async with Client(parameters) as client:
            listed = await client.call_tool(
                "add_memory", {"episode": "conv-7", "messages": PRIYA, "wait": True}
            )
            raw = await client.call_tool(
                "add_memory",
                {
                    "episode": "conv-8",
                    "speaker": "Omar",
                    "text": "I work at Globex since 2019.",
                    "reference_time": "2024-06-01T12:00:00Z",
                    "wait": True,
                },
            )
            lives = await client.call_tool("recall", {"query": "Where does Priya live now?"})
            works = await client.call_tool("recall", {"query": "Where does Omar work?"})
            return listed, raw, lives, works

    listed, raw, lives, works = anyio.run(session)

    assert not listed.is_error and listed.structured_content["pending"] == 0
    assert not raw.is_error and raw.structured_content["facts"] >= 1
    assert lives.structured_content["hits"][0]["text"] == "Priya lives in Berlin"
    assert works.structured_content["hits"][0]["text"] == "Omar works at Globex"


def _recall(base: str, query: str) -> list[dict[str, Any]]:
    found = httpx.post(f"{base}/v1/recall", json={"query": query, "limit": 10}, headers=AUTH)
    hits: list[dict[str, Any]] = found.json()["hits"]
    return hits


def _extracted(base: str) -> int:
    """Messages still waiting once the background extraction is done (it is not waited for
    by the call that added them: stats shows the count going down)."""
    deadline = time.monotonic() + 120  # a loaded 2-core machine
    while True:
        waiting: int = httpx.get(f"{base}/v1/stats", headers=AUTH).json()["graph"][
            "unextracted_messages"
        ]
        if waiting == 0 or time.monotonic() > deadline:
            return waiting
        time.sleep(0.2)
