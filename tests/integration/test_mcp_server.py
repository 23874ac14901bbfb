"""The MCP server in process, through the MCP SDK's own client: every tool, schemas, errors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
from mcp import Client
from mcp_types import CallToolResult, TextContent

from apexmem.mcp_server import TOOLS, build_server, tool_schema
from apexmem.server.tenants import Tenant, Tenants
from apexmem.wire import FactIn


@pytest.fixture
def tenant(tmp_path: Path) -> Iterator[Tenant]:
    """One memory (hashing embedder), closed after the test."""
    directory = tmp_path / "mem"
    directory.mkdir()
    (directory / "apexmem.toml").write_text(
        '[memory.vectors]\nembedder = "hashing"\n', encoding="utf-8"
    )
    tenants = Tenants(single=directory)
    found = tenants.get()
    assert found is not None
    yield found
    tenants.close()


def calls(tenant: Tenant, *steps: tuple[str, dict[str, Any]]) -> list[CallToolResult]:
    """Call the tools in order through an in-process MCP client; their results."""

    async def run() -> list[CallToolResult]:
        async with Client(build_server(tenant)) as client:
            return [await client.call_tool(name, arguments) for name, arguments in steps]

    return anyio.run(run)


def text(result: CallToolResult) -> str:
    """The result's text content."""
    [block] = result.content
    assert isinstance(block, TextContent)
    return block.text


ALICE = {
    "subject": "Alice",
    "subject_type": "person",
    "relation": "works_at",
    "object": "Acme",
    "object_type": "organization",
    "valid_from": "2020-01-01T00:00:00Z",
}
BOB = {**ALICE, "subject": "Bob", "object": "Initech", "valid_from": "2021-01-01T00:00:00Z"}


def test_tools_are_listed_with_the_wire_types_schemas(tenant: Tenant) -> None:
    async def run() -> Any:
        async with Client(build_server(tenant)) as client:
            return await client.list_tools()

    listed = anyio.run(run)

    names = [t.name for t in listed.tools]
    assert names == [
        "remember",
        "record_message",
        "add_memory",
        "recall",
        "recall_as_of",
        "facts_about",
        "traverse",
        "forget",
        "history",
        "diff",
        "retract",
        "add_alias",
        "merge_entities",
        "link_facts",
        "fact_graph",
        "search_entities",
        "get_episodes",
        "get_episode",
        "communities",
        "record_fades",
        "get_status",
        "stats",
        "verify",
    ]
    remember = listed.tools[0]
    assert remember.input_schema == tool_schema(FactIn)
    assert remember.input_schema["type"] == "object"
    assert set(remember.input_schema["required"]) == {"subject", "relation"}
    assert all(t.output_schema and t.output_schema["type"] == "object" for t in listed.tools)


def test_remember_then_read_back_with_every_read_tool(tenant: Tenant) -> None:
    [remembered] = calls(tenant, ("remember", ALICE))
    fact_id = remembered.structured_content["results"][0]["fact_id"]

    results = calls(
        tenant,
        ("record_message", {"episode": "c1", "speaker": "user", "text": "Alice works at Acme"}),
        ("recall", {"query": "Where does Alice work?"}),
        ("facts_about", {"entity": "Alice"}),
        ("traverse", {"start": "Alice", "max_hops": 1}),
        ("history", {"fact": fact_id}),
    )

    message, recalled, facts, graph, history = results
    assert not any(r.is_error for r in [remembered, *results])
    assert "created" in text(remembered)
    assert message.structured_content["kind"] == "message"
    assert "Alice works_at Acme" in text(recalled)
    assert recalled.structured_content["hits"][0]["why"]
    assert [f["object"] for f in facts.structured_content["facts"]] == ["Acme"]
    assert "Acme (organization, 1 hops)" in text(graph)
    assert "fact-asserted.v1" in text(history)


def test_recall_as_of_sees_only_what_was_known_then(tenant: Tenant) -> None:
    [first] = calls(tenant, ("remember", ALICE))
    told = first.structured_content["results"][0]["position"]
    [history] = calls(tenant, ("history", {"entity": "Alice"}))
    known = next(e for e in history.structured_content["events"] if e["position"] == told)
    rust = {**ALICE, "relation": "uses", "object": "Rust", "object_type": "language"}

    calls(tenant, ("remember", rust))
    now, then = calls(
        tenant,
        ("recall", {"query": "What does Alice use?"}),
        ("recall_as_of", {"query": "What does Alice use?", "known_at": known["recorded_at"]}),
    )

    assert "Alice uses Rust" in text(now)
    assert "Alice uses Rust" not in text(then)


def test_recall_as_of_takes_valid_at_alone_and_says_when_each_fact_held(tenant: Tenant) -> None:
    earlier = {
        **ALICE,
        "object": "Initech",
        "valid_from": "2018-01-01T00:00:00Z",
        "valid_until": "2020-06-01T00:00:00Z",
    }
    calls(tenant, ("remember", earlier))

    [then] = calls(
        tenant,
        ("recall_as_of", {"query": "Where did Alice work?", "valid_at": "2019-05-01T00:00:00Z"}),
    )

    assert not then.is_error
    assert "Alice works_at Initech [2018-01-01 to 2020-06-01]" in text(then)


def test_bad_arguments_are_a_tool_error_naming_field_and_rule_and_write_nothing(
    tenant: Tenant,
) -> None:
    bad, short, naive, missing, unknown = calls(
        tenant,
        ("remember", {**ALICE, "confidence": 3}),
        ("remember", {**ALICE, "subject": "  "}),
        ("remember", {**ALICE, "valid_from": "2020-01-01T00:00:00"}),
        ("record_message", {"episode": "c1", "speaker": "user"}),
        ("delete_everything", {}),
    )
    [stats] = calls(tenant, ("facts_about", {"entity": "Alice"}))

    assert all(r.is_error for r in (bad, short, naive, missing, unknown))
    assert "confidence: 3" in text(bad)
    assert text(short).startswith("error: subject: '  '")  # one fact sent: not facts[0]
    assert "give a timezone" in text(naive)
    assert "text" in text(missing)
    assert "no tool named 'delete_everything'" in text(unknown)
    assert stats.structured_content["facts"] == []


def test_an_unknown_entity_is_an_answer_not_an_error(tenant: Tenant) -> None:
    facts, graph = calls(
        tenant, ("facts_about", {"entity": "Nobody"}), ("traverse", {"start": "Nobody"})
    )

    assert not facts.is_error
    assert not graph.is_error
    assert "No entity" in text(graph)


def test_every_tool_result_decodes_strictly_as_its_output_type(tenant: Tenant) -> None:
    remembered, other, moved = calls(
        tenant,
        ("remember", ALICE),
        ("remember", BOB),
        (
            "remember",
            {**ALICE, "relation": "lives_in", "object": "Paris", "object_type": "location"},
        ),
    )
    fact_id = remembered.structured_content["results"][0]["fact_id"]
    bob = other.structured_content["results"][0]["fact_id"]
    paris = moved.structured_content["results"][0]["fact_id"]
    arguments: dict[str, dict[str, Any]] = {
        "remember": ALICE,
        "record_message": {"episode": "c1", "speaker": "user", "text": "hi"},
        "add_memory": {"episode": "c2", "text": "I live in Lisbon.", "wait": True},
        "recall": {"query": "Alice"},
        "recall_as_of": {"query": "Alice", "known_at": "2100-01-01T00:00:00Z"},
        "facts_about": {"entity": "Alice"},
        "traverse": {"start": "Alice"},
        "forget": {"episode": "c1", "reason": "user deleted the conversation"},
        "history": {"fact": fact_id},
        "diff": {"since": "2000-01-01T00:00:00Z", "until": "2100-01-01T00:00:00Z"},
        "retract": {"fact_id": paris, "reason": "moved"},
        "add_alias": {"entity": "Alice", "alias": "Ally", "entity_type": "person"},
        "merge_entities": {"source": "Initech", "target": "Acme", "entity_type": "organization"},
        "link_facts": {"source": fact_id, "target": bob, "link_type": "related_to"},
        "fact_graph": {"fact": fact_id, "depth": 2},
        "search_entities": {"query": "Ally"},
        "get_episodes": {"entity": "Alice"},
        "get_episode": {"conversation": "c2"},
        "communities": {"limit": 5},
        "record_fades": {},
        "get_status": {},
        "stats": {},
        "verify": {},
    }

    results = calls(tenant, *[(t.name, arguments[t.name]) for t in TOOLS])

    for tool, result in zip(TOOLS, results, strict=True):
        assert not result.is_error, text(result)
        encoded = msgspec.json.encode(result.structured_content)
        assert msgspec.json.decode(encoded, type=tool.output)


def test_a_fact_ending_later_is_current_and_a_position_opens_the_log_there(
    tenant: Tenant,
) -> None:
    until_2099 = {**ALICE, "object": "Globex", "valid_until": "2099-01-01T00:00:00Z"}
    [first] = calls(tenant, ("remember", {**ALICE, "relation": "uses", "object": "Rust"}))
    told = first.structured_content["results"][0]["position"]
    calls(tenant, ("remember", until_2099))

    recalled, facts, then = calls(
        tenant,
        ("recall", {"query": "Where does Alice work?"}),
        ("facts_about", {"entity": "Alice"}),
        ("recall_as_of", {"query": "Where does Alice work?", "position": told}),
    )

    assert "Alice works_at Globex [2020-01-01 to 2099-01-01]" in text(recalled)
    assert "until 2099-01-01" in text(facts)
    assert "Globex" not in text(then)


def test_recall_takes_a_window_and_a_reference_time(tenant: Tenant) -> None:
    calls(
        tenant, ("remember", {**ALICE, "object": "Initech", "valid_until": "2021-06-01T00:00:00Z"})
    )
    calls(tenant, ("remember", {**ALICE, "object": "Globex", "valid_from": "2021-06-01T00:00:00Z"}))

    windowed, summer, bad = calls(
        tenant,
        (
            "recall",
            {"query": "Alice work", "window": ["2021-01-01T00:00:00Z", "2022-01-01T00:00:00Z"]},
        ),
        (
            "recall",
            {
                "query": "Where did Alice work last summer?",
                "reference_time": "2020-10-01T00:00:00Z",
            },
        ),
        ("recall_as_of", {"query": "Alice", "position": -1}),
    )

    assert "Initech" in text(windowed) and "Globex" in text(windowed)
    assert "Initech" in text(summer) and "Globex" not in text(summer)
    assert bad.is_error and "position" in text(bad)


def test_the_upkeep_and_audit_tools_answer_as_the_python_api_does(tenant: Tenant) -> None:
    first, second = calls(tenant, ("remember", ALICE), ("remember", BOB))
    alice = first.structured_content["results"][0]["fact_id"]
    bob = second.structured_content["results"][0]["fact_id"]

    results = calls(
        tenant,
        ("link_facts", {"source": alice, "target": bob, "link_type": "caused_by", "strength": 0.8}),
        ("fact_graph", {"fact": alice}),
        ("history", {"fact": alice}),
        ("diff", {"since": "2000-01-01T00:00:00Z", "until": "2100-01-01T00:00:00Z"}),
        ("search_entities", {"query": "ali"}),
        ("get_episodes", {"entity": "Alice"}),
        ("communities", {}),
        ("get_status", {}),
        ("stats", {}),
        ("verify", {}),
        ("record_fades", {}),
        ("retract", {"fact_id": bob, "reason": "wrong"}),
        ("recall", {"query": "Where does Alice work?", "trace": True}),
    )
    linked, graph, history, diffed, found, episodes, groups, status, stats, verified = results[:10]
    faded, retracted, recalled = results[10:]

    assert not any(r.is_error for r in results), [text(r) for r in results if r.is_error]
    assert linked.structured_content["link_type"] == "caused_by"
    with tenant.memory() as memory:
        expected = msgspec.to_builtins(memory.fact_graph(alice))
        assert graph.structured_content["links"] == expected["links"]
        assert graph.structured_content["hops"] == expected["hops"] == {alice: 0, bob: 1}
        now = msgspec.to_builtins(memory.status())
    assert status.structured_content.keys() == now.keys()
    assert status.structured_content["counts"]["facts_believed"] == 2  # before the retraction
    assert now["counts"]["facts_believed"] == 1
    assert status.structured_content["counts"]["fact_links"] == now["counts"]["fact_links"] == 1
    assert "linked" in text(history) and "Alice works_at Acme" in text(history)
    assert "2 asserted" in text(diffed) and "1 linked" in text(diffed)
    assert [e["name"] for e in found.structured_content["entities"]] == ["Alice"]
    assert episodes.structured_content == {"episodes": []}
    assert groups.structured_content == {"communities": []}
    assert stats.structured_content["graph"]["entities"] >= 3
    assert verified.structured_content["ok"] is True
    assert faded.structured_content["position"] == 0
    assert retracted.structured_content["fact_id"] == bob
    assert recalled.structured_content["trace"][0]["stage"] == "question"


def test_a_link_of_an_unknown_type_is_refused_naming_the_field(tenant: Tenant) -> None:
    [first] = calls(tenant, ("remember", ALICE))
    alice = first.structured_content["results"][0]["fact_id"]

    [refused] = calls(
        tenant, ("link_facts", {"source": alice, "target": alice, "link_type": "likes"})
    )

    assert refused.is_error
    assert "link_type" in text(refused)
