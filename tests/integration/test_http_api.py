"""The HTTP API in process: every endpoint over a real memory directory, through Litestar.

Memories use the hashing embedder (set in their apexmem.toml, as a user would).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from litestar.testing import TestClient

from apexmem import Memory, ValidationError, parse_settings
from apexmem.server.app import create_app
from apexmem.server.config import resolve_token
from apexmem.server.tenants import Tenants

TOKEN: Final = "test-token-0123456789"
AUTH: Final = {"Authorization": f"Bearer {TOKEN}"}
SETTINGS: Final = '[memory.vectors]\nembedder = "hashing"\n'


def make_memory(directory: Path, token: str | None = None) -> Path:
    """A memory directory whose settings pick the hashing embedder (and a server token)."""
    directory.mkdir(parents=True)
    server = f'\n[server]\ntoken = "{token}"\n' if token else ""
    (directory / "apexmem.toml").write_text(SETTINGS + server, encoding="utf-8")
    return directory


def client_for(app: Any) -> TestClient[Any]:
    """A test client that runs the app's start-up and shutdown."""
    return TestClient(app)


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    """One memory directory."""
    return make_memory(tmp_path / "mem")


@pytest.fixture
def client(directory: Path) -> Iterator[TestClient[Any]]:
    """The API over `directory`, token TOKEN."""
    with client_for(create_app(Tenants(single=directory, token=TOKEN))) as test_client:
        yield test_client


def fact(subject: str, relation: str, obj: str, **extra: Any) -> dict[str, Any]:
    """An append request's fact: people working at organizations, by default."""
    return {
        "subject": subject,
        "subject_type": "person",
        "relation": relation,
        "object": obj,
        "object_type": "organization",
        **extra,
    }


def post(client: TestClient[Any], path: str, body: Any, **headers: str) -> Any:
    """POST with the token; the decoded JSON body, after checking for 200."""
    response = client.post(path, json=body, headers={**AUTH, **headers})
    assert response.status_code == 200, response.text
    return response.json()


def get(client: TestClient[Any], path: str, **params: Any) -> Any:
    """GET with the token; the decoded JSON body, after checking for 200."""
    response = client.get(path, params=params, headers=AUTH)
    assert response.status_code == 200, response.text
    return response.json()


def events(client: TestClient[Any]) -> int:
    """How many events the log holds."""
    count: int = get(client, "/v1/stats")["events"]
    return count


def test_a_batch_of_facts_is_one_atomic_append_with_one_result_per_fact(
    client: TestClient[Any],
) -> None:
    body = {"facts": [fact("Alice", "works_at", "Acme"), fact("Bob", "works_at", "Globex")]}

    results = post(client, "/v1/facts", body)["results"]

    assert [r["outcome"] for r in results] == ["created", "created"]
    history = get(client, "/v1/history", fact=results[1]["fact_id"])["events"]
    first = get(client, "/v1/history", fact=results[0]["fact_id"])["events"]
    assert history[-1]["recorded_at"] == first[-1]["recorded_at"]  # one append, one time


def test_a_batch_with_one_bad_fact_writes_nothing_and_names_field_value_and_rule(
    client: TestClient[Any],
) -> None:
    before = events(client)
    body = {"facts": [fact("Alice", "works_at", "Acme"), fact("Bob", "x", "Y", confidence=1.5)]}

    response = client.post("/v1/facts", json=body, headers=AUTH)

    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["type"] == "urn:apexmem:problem:validation"
    assert (problem["field"], problem["value"]) == ("facts[1].confidence", 1.5)
    assert "<= 1.0" in problem["rule"]
    assert events(client) == before


def test_rules_checked_after_decoding_are_problems_too_and_write_nothing(
    client: TestClient[Any],
) -> None:
    before = events(client)
    bad = fact("Alice", "works_at", "Acme", edge_type="sideways")
    body = {"facts": [fact("Bo", "x", "Acme"), bad]}

    response = client.post("/v1/facts", json=body, headers=AUTH)

    problem = response.json()
    assert response.status_code == 422
    assert problem["field"].startswith("facts[")
    assert problem["value"] in ("Bo", "bo", "sideways")
    assert events(client) == before


@pytest.mark.parametrize(
    ("body", "field", "rule"),
    [
        (b"{not json", "body", "is not valid JSON"),
        (b'{"facts": []}', "facts", "is invalid: expected `array` of length >= 1"),
        (b'{"facts": [{"subject": "Alice"}]}', "facts[0].relation", "is required"),
        (b'{"facts": [{"subject": "Al", "relation": "r"}], "extra": 1}', "extra", "is not a known"),
        (
            b'{"facts": [{"subject": "Al", "relation": "r", "valid_from": "2024-01-01T00:00:00"}]}',
            "facts[0].valid_from",
            "is a naive datetime; give a timezone, e.g. 2024-01-01T00:00:00Z",
        ),
        (
            b'{"facts": [{"subject": "Alice", "relation": "r", "confidence": 1e400}]}',
            "facts[0].confidence",
            "is invalid: number out of range",
        ),
    ],
)
def test_bad_bodies_are_validation_problems(
    client: TestClient[Any], body: bytes, field: str, rule: str
) -> None:
    response = client.post(
        "/v1/facts", content=body, headers={**AUTH, "content-type": "application/json"}
    )

    assert response.status_code == 422, response.text
    assert response.json()["field"] == field
    assert response.json()["rule"].startswith(rule)


def test_a_retried_write_returns_the_first_result_and_writes_nothing_even_after_a_restart(
    directory: Path,
) -> None:
    body = {"facts": [fact("Alice", "works_at", "Acme")]}
    key = {"Idempotency-Key": "retry-1"}
    with client_for(create_app(Tenants(single=directory, token=TOKEN))) as first:
        original = post(first, "/v1/facts", body, **key)
        count = events(first)
        assert post(first, "/v1/facts", body, **key) == original

    with client_for(create_app(Tenants(single=directory, token=TOKEN))) as second:
        again = post(second, "/v1/facts", body, **key)
        assert again == original
        assert events(second) == count


def test_the_same_key_with_another_body_is_another_write(client: TestClient[Any]) -> None:
    key = {"Idempotency-Key": "same-key"}
    one = post(client, "/v1/facts", {"facts": [fact("Alice", "works_at", "Acme")]}, **key)

    other = post(client, "/v1/facts", {"facts": [fact("Bob", "works_at", "Acme")]}, **key)

    assert other["results"][0]["fact_id"] != one["results"][0]["fact_id"]


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/messages", {"speaker": "user", "text": "hello there", "episode": "c1"}),
        ("/v1/aliases", {"entity": "Alice", "alias": "Ali", "entity_type": "person"}),
    ],
)
def test_every_write_takes_an_idempotency_key(
    client: TestClient[Any], path: str, body: dict[str, Any]
) -> None:
    first = post(client, path, body, **{"Idempotency-Key": "k-1"})
    count = events(client)

    again = post(client, path, body, **{"Idempotency-Key": "k-1"})

    assert again == first
    assert events(client) == count


def test_an_idempotency_key_with_a_space_is_refused(client: TestClient[Any]) -> None:
    response = client.post(
        "/v1/facts",
        json={"facts": [fact("Alice", "works_at", "Acme")]},
        headers={**AUTH, "Idempotency-Key": "two words"},
    )

    assert response.status_code == 422
    assert response.json()["field"] == "Idempotency-Key"


@pytest.mark.parametrize(
    ("headers", "shown"),
    [
        ([(b"Idempotency-Key", b"k-1"), (b"Idempotency-Key", b"k-2")], "k-1, k-2"),
        ([(b"Idempotency-Key", "clé".encode())], "clé"),
    ],
)
def test_two_idempotency_keys_or_one_not_in_ascii_are_refused_as_sent(
    client: TestClient[Any], headers: list[tuple[bytes, bytes]], shown: str
) -> None:
    count = events(client)
    response = client.post(
        "/v1/facts",
        json={"facts": [fact("Alice", "works_at", "Acme")]},
        headers=[*((k.encode(), v.encode()) for k, v in AUTH.items()), *headers],
    )

    assert response.status_code == 422
    assert response.json()["field"] == "Idempotency-Key"
    assert response.json()["value"] == shown
    assert events(client) == count


def test_messages_aliases_and_retractions_are_recorded(client: TestClient[Any]) -> None:
    body = {"facts": [fact("Alice", "works_at", "Acme", valid_from="2024-01-01T00:00:00Z")]}
    [made] = post(client, "/v1/facts", body)["results"]

    message = post(
        client,
        "/v1/messages",
        {"episode": "conv-1", "speaker": "user", "text": "Alice joined Acme", "ref": "D1:3"},
    )
    ali = {"entity": "Alice", "alias": "Ali", "entity_type": "person"}
    alias = post(client, "/v1/aliases", ali)
    retracted = post(
        client,
        "/v1/retractions",
        {"fact_id": made["fact_id"], "valid_until": "2025-06-01T00:00:00Z", "reason": "left"},
    )

    assert message["kind"] == "message"
    assert alias["outcome"] == "claimed"
    assert retracted["fact_id"] == made["fact_id"]
    assert get(client, "/v1/facts", entity="Ali")["facts"] == []
    tags = [e["tag"] for e in get(client, "/v1/history", fact=made["fact_id"])["events"]]
    assert tags[-1] == "fact-retracted.v1"


def test_retracting_an_unknown_fact_is_a_not_found_problem(client: TestClient[Any]) -> None:
    body = {"fact_id": "00000000-0000-0000-0000-000000000001"}

    response = client.post("/v1/retractions", json=body, headers=AUTH)

    assert response.status_code == 404
    assert response.json()["type"] == "urn:apexmem:problem:not-found"


def test_facts_about_an_entity_answer_on_both_time_axes(client: TestClient[Any]) -> None:
    acme = fact("Alice", "works_at", "Acme", valid_from="2020-01-01T00:00:00Z")
    globex = fact("Alice", "works_at", "Globex", valid_from="2025-03-01T00:00:00Z")
    post(client, "/v1/facts", {"facts": [acme]})
    told = get(client, "/v1/history", entity="Alice")["events"][-1]["recorded_at"]
    post(client, "/v1/facts", {"facts": [globex]})

    def employers(**params: Any) -> list[str]:
        return [f["object"] for f in get(client, "/v1/facts", entity="Alice", **params)["facts"]]

    assert employers() == ["Globex"]
    assert employers(valid_at="2024-06-01T00:00:00Z") == ["Acme"]
    assert employers(known_at=told) == ["Acme"]


def test_a_log_position_opens_facts_and_recall_where_the_log_stood(
    client: TestClient[Any],
) -> None:
    acme = fact("Alice", "works_at", "Acme", valid_from="2020-01-01T00:00:00Z")
    until_2099 = fact(
        "Alice",
        "works_at",
        "Globex",
        valid_from="2025-03-01T00:00:00Z",
        valid_until="2099-01-01T00:00:00Z",
    )
    [first] = post(client, "/v1/facts", {"facts": [acme]})["results"]
    post(client, "/v1/facts", {"facts": [until_2099]})

    def employers(**params: Any) -> list[str]:
        return [f["object"] for f in get(client, "/v1/facts", entity="Alice", **params)["facts"]]

    then = post(
        client, "/v1/recall", {"query": "Where does Alice work?", "position": first["position"]}
    )
    refused = client.get("/v1/facts", params={"entity": "Alice", "position": -1}, headers=AUTH)

    assert employers() == ["Globex"]  # ending in 2099: current
    assert employers(position=first["position"]) == ["Acme"]
    assert [h["text"] for h in then["hits"] if h["kind"] == "fact"] == ["Alice works_at Acme"]
    assert refused.status_code == 422 and refused.json()["field"] == "position"


def test_a_naive_time_in_a_query_is_a_problem_that_says_how_to_fix_it(
    client: TestClient[Any],
) -> None:
    response = client.get(
        "/v1/facts", params={"entity": "Alice", "valid_at": "2024-01-01T00:00:00"}, headers=AUTH
    )

    assert response.status_code == 422
    assert response.json()["field"] == "valid_at"
    assert "give a timezone" in response.json()["rule"]


def test_recall_finds_facts_and_as_of_recall_sees_only_what_was_known(
    client: TestClient[Any],
) -> None:
    post(client, "/v1/facts", {"facts": [fact("Alice", "works_at", "Acme")]})
    told = get(client, "/v1/history", entity="Alice")["events"][-1]["recorded_at"]
    post(client, "/v1/facts", {"facts": [fact("Alice", "uses", "Rust", object_type="language")]})

    now = post(client, "/v1/recall", {"query": "What does Alice use?", "limit": 5})
    then = post(client, "/v1/recall", {"query": "What does Alice use?", "known_at": told})

    assert "Alice uses Rust" in [h["text"] for h in now["hits"]]
    assert "Alice uses Rust" not in [h["text"] for h in then["hits"]]
    assert all(h["why"] and h["provenance"]["positions"] for h in now["hits"])


def test_traverse_diff_verify_and_stats(client: TestClient[Any]) -> None:
    start = get(client, "/v1/stats")
    post(client, "/v1/facts", {"facts": [fact("Alice", "works_at", "Acme")]})
    told = get(client, "/v1/history", entity="Alice")["events"][-1]["recorded_at"]

    graph = get(client, "/v1/traverse", start="Alice", max_hops=1, edge_types=["semantic"])
    changes = get(client, "/v1/diff", since="2000-01-01T00:00:00Z", until=told)
    report = get(client, "/v1/verify")
    stats = get(client, "/v1/stats")

    assert {e["name"] for e in graph["entities"]} == {"Alice", "Acme"}
    assert [c["fact"] for c in changes["asserted"]] == ["Alice works_at Acme"]
    assert report["ok"] is True
    assert stats["graph"]["current_facts"] == start["graph"]["current_facts"] + 1


def test_history_needs_exactly_one_of_fact_entity_and_slot(client: TestClient[Any]) -> None:
    response = client.get("/v1/history", headers=AUTH)

    assert response.status_code == 422
    assert response.json()["field"] == "history"


def test_a_body_over_the_limit_is_refused_with_413(directory: Path) -> None:
    app = create_app(Tenants(single=directory, token=TOKEN), max_body_bytes=2_048)
    body = {"episode": "c", "speaker": "u", "text": "x" * 4_096}

    with client_for(app) as small:
        response = small.post("/v1/messages", json=body, headers=AUTH)

    assert response.status_code == 413
    assert response.json()["type"] == "urn:apexmem:problem:too-large"


def _operations(client: TestClient[Any]) -> list[tuple[str, str]]:
    document = client.get("/v1/openapi.json", headers=AUTH).json()
    return [(method.upper(), path) for path, item in document["paths"].items() for method in item]


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong-token-0123456789"}, {"Authorization": f"Basic {TOKEN}"}],
    ids=["missing", "wrong", "not-bearer"],
)
def test_every_endpoint_refuses_a_missing_or_wrong_token(
    client: TestClient[Any], headers: dict[str, str]
) -> None:
    operations = [*_operations(client), ("GET", "/v1/openapi.json"), ("GET", "/v1/nowhere")]
    closed = [(method, path) for method, path in operations if path != "/v1/health"]

    statuses = {
        f"{method} {path}": client.request(method, path, headers=headers, json={}).status_code
        for method, path in closed
    }
    health = client.get("/v1/health", headers=headers)

    assert len(closed) == 27
    assert set(statuses.values()) == {401}, statuses
    assert health.status_code == 200
    assert health.json()["status"] == "ok"
    assert client.get("/v1/stats", headers=headers).headers["www-authenticate"].startswith("Bearer")


def test_the_openapi_document_describes_every_endpoint_and_bearer_auth(
    client: TestClient[Any],
) -> None:
    document = client.get("/v1/openapi.json", headers=AUTH).json()

    names = ["facts", "aliases", "messages", "retractions", "recall", "traverse", "history"]
    paths = [*names, "diff", "verify", "stats", "episodes/{episode}/messages"]
    paths += ["entities", "timeline"]  # the explorer's lookups (GET /v1/recall shares recall)
    paths += ["forget", "decay"]
    paths += ["links", "fact-graph", "episodes", "communities", "merges", "status", "export"]
    paths += ["health"]
    assert {f"/v1/{p}" for p in paths} <= set(document["paths"])  # the rest: test_surfaces
    assert document["security"] == [{"bearer": []}]
    problem = document["paths"]["/v1/facts"]["post"]["responses"]["422"]["content"]
    assert "application/problem+json" in problem


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """Two tenants with their own tokens, and one without a token."""
    make_memory(tmp_path / "tenants" / "alpha", token="alpha-token-0123456789")
    make_memory(tmp_path / "tenants" / "beta", token="beta-token-01234567890")
    make_memory(tmp_path / "tenants" / "no-token")
    return tmp_path / "tenants"


def test_each_tenant_reaches_its_own_memory_and_no_other(root: Path) -> None:
    alpha = {"Authorization": "Bearer alpha-token-0123456789"}
    beta = {"Authorization": "Bearer beta-token-01234567890"}
    body = {"facts": [fact("Alice", "works_at", "Acme")]}

    with client_for(create_app(Tenants(root=root))) as client:
        written = client.post("/v1/tenants/alpha/facts", json=body, headers=alpha)
        own = client.get("/v1/tenants/alpha/facts", params={"entity": "Alice"}, headers=alpha)
        other = client.get("/v1/tenants/beta/facts", params={"entity": "Alice"}, headers=beta)
        crossed = client.get("/v1/tenants/beta/stats", headers=alpha)
        tokenless = client.get("/v1/tenants/no-token/stats", headers=alpha)
        missing = client.get("/v1/tenants/gamma/stats", headers=alpha)
        schema = client.get("/v1/openapi.json", headers=beta)

    assert written.status_code == 200
    assert [f["object"] for f in own.json()["facts"]] == ["Acme"]
    assert other.json()["facts"] == []
    assert (crossed.status_code, tokenless.status_code, missing.status_code) == (401, 401, 401)
    assert "/v1/tenants/{tenant}/facts" in schema.json()["paths"]
    with Memory.open(root / "beta") as memory:
        assert memory.stats().graph.current_facts == 0


@pytest.mark.parametrize("name", ["..", ".hidden", "a.b", "Alpha", "a b", "-x", "x" * 64])
def test_a_tenant_name_that_is_not_a_plain_name_is_refused(root: Path, name: str) -> None:
    alpha = {"Authorization": "Bearer alpha-token-0123456789"}

    with client_for(create_app(Tenants(root=root))) as client:
        response = client.get(f"/v1/tenants/{name}/stats", headers=alpha)

    assert response.status_code in (401, 404, 422)
    if response.status_code == 422:
        assert response.json()["field"] == "tenant"
    assert not (root.parent / "stats").exists()


def test_a_tenant_named_with_an_encoded_separator_is_refused(root: Path) -> None:
    alpha = {"Authorization": "Bearer alpha-token-0123456789"}

    with client_for(create_app(Tenants(root=root))) as client:
        response = client.get("/v1/tenants/..%2Falpha/stats", headers=alpha)

    assert response.status_code == 422
    assert response.json()["value"] in ("..", "../alpha", "..%2Falpha")


@pytest.mark.parametrize(
    "path", ["/v1//tenants/{}/stats", "/%2Fv1/tenants/{}/stats", "/v1/tenants//{}/stats/"]
)
def test_a_path_the_router_normalizes_still_opens_only_the_tokens_tenant(
    root: Path, path: str
) -> None:
    alpha = {"Authorization": "Bearer alpha-token-0123456789"}
    body = {"facts": [fact("Mallory", "owns", "Beta")]}

    with client_for(create_app(Tenants(root=root))) as client:
        own = client.get(path.format("alpha"), headers=alpha)
        crossed = client.get(path.format("beta"), headers=alpha)
        tokenless = client.get(path.format("no-token"), headers=alpha)
        written = client.post(
            path.format("beta").replace("stats", "facts"), json=body, headers=alpha
        )

    assert own.status_code == 200
    assert (crossed.status_code, tokenless.status_code, written.status_code) == (401, 401, 401)
    assert crossed.headers["content-type"].startswith("application/problem+json")
    with Memory.open(root / "beta") as memory:
        assert memory.stats().graph.current_facts == 0


def test_a_tenant_with_bad_settings_is_unreachable_and_its_settings_are_not_shown(
    root: Path,
) -> None:
    make_memory(root / "zeta")
    settings = root / "zeta" / "apexmem.toml"
    settings.write_text(settings.read_text() + '\n[server]\ntoken = "hunter2pass"\n')
    alpha = {"Authorization": "Bearer alpha-token-0123456789"}

    with client_for(create_app(Tenants(root=root))) as client:
        anonymous = client.get("/v1/tenants/zeta/stats")
        schema = client.get("/v1/openapi.json", headers=alpha)
        unknown = client.get("/nope")

    assert anonymous.status_code == 401
    assert "hunter2pass" not in anonymous.text and "apexmem.toml" not in anonymous.text
    assert schema.status_code == 200
    assert unknown.status_code == 401
    assert unknown.headers["content-type"].startswith("application/problem+json")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param(b"[" * 1_000 + b"]" * 1_000, "body", id="top-level"),
        pytest.param(b'{"facts":[' + b"[" * 1_000 + b"]" * 1_000 + b"]}", "facts[0]", id="a-fact"),
    ],
)
def test_a_body_nested_too_deeply_is_a_validation_problem(
    client: TestClient[Any], body: bytes, field: str
) -> None:
    response = client.post(
        "/v1/facts", content=body, headers={**AUTH, "content-type": "application/json"}
    )

    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["field"] == field
    assert events(client) == 0


def test_a_long_bad_value_is_shown_by_its_start(client: TestClient[Any]) -> None:
    body = {"facts": [fact("Alice", "works_at", f"Acme {i}") for i in range(1_001)]}

    response = client.post("/v1/facts", json=body, headers=AUTH)

    problem = response.json()
    assert (response.status_code, problem["field"]) == (422, "facts")
    assert len(problem["value"]) == 200 and problem["value"].endswith("...")
    assert len(response.content) < 1_000


@pytest.mark.parametrize("path", ["/v1/nope", "/v1/openapi", "/nope"])
def test_an_unknown_path_is_a_not_found_problem(client: TestClient[Any], path: str) -> None:
    response = client.get(path, headers=AUTH)

    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["type"] == "urn:apexmem:problem:not-found"


def test_a_wrong_method_is_a_problem_that_says_which_methods_are_allowed(
    client: TestClient[Any],
) -> None:
    response = client.delete("/v1/facts", headers=AUTH)

    assert response.status_code == 405
    assert response.headers["content-type"] == "application/problem+json"
    assert {"GET", "POST"} <= {m.strip() for m in response.headers["allow"].split(",")}


@pytest.mark.parametrize(
    "token", [" " * 16, " lead-space-token-0123", "tab\ttoken-0123456789", "é" * 16]
)
def test_a_token_a_client_could_never_send_is_refused_at_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, token: str
) -> None:
    directory = make_memory(tmp_path / "mem")
    monkeypatch.setenv("APEXMEM_TOKEN", token)

    with pytest.raises(ValidationError) as caught:
        resolve_token(directory, "0.0.0.0")

    assert caught.value.field == "APEXMEM_TOKEN"
    assert token not in str(caught.value)


def test_a_settings_token_with_a_space_is_refused() -> None:
    with pytest.raises(ValidationError) as caught:
        parse_settings('[server]\ntoken = "has a space in it 0123"\n')

    assert caught.value.field == "server.token"


@pytest.mark.parametrize(
    ("path", "field"), [("/v1/diff?since=2024-01-01T00:00:00Z", "until"), ("/v1/traverse", "start")]
)
def test_a_missing_query_parameter_is_named_as_required(
    client: TestClient[Any], path: str, field: str
) -> None:
    response = client.get(path, headers=AUTH)

    assert response.status_code == 422
    assert (response.json()["field"], response.json()["rule"]) == (field, "is required")


def test_a_write_without_a_body_says_the_body_is_required(client: TestClient[Any]) -> None:
    response = client.post("/v1/facts", headers={**AUTH, "content-type": "application/json"})

    assert response.status_code == 422
    assert (response.json()["field"], response.json()["rule"]) == (
        "body",
        "is required: a JSON object",
    )


def test_a_conversation_retried_with_its_idempotency_key_is_appended_once(
    client: TestClient[Any], directory: Path
) -> None:
    body = {
        "messages": [
            {"speaker": "Priya", "text": "I live in Lisbon.", "at": "2024-05-01T09:00:00Z"},
            {"speaker": "Priya", "text": "I use Rust.", "at": "2024-05-01T09:01:00Z"},
        ],
        "wait": True,
    }

    first = post(client, "/v1/episodes/conv-9/messages", body, **{"Idempotency-Key": "conv-9-a"})
    again = post(client, "/v1/episodes/conv-9/messages", body, **{"Idempotency-Key": "conv-9-a"})

    assert again["messages"] == first["messages"]
    with Memory.open(directory) as memory:
        recorded = list(memory.events(tags=["message-recorded.v1"]))
    assert len(recorded) == 2


def test_options_lists_every_method_of_the_path(client: TestClient[Any]) -> None:
    facts = client.options("/v1/facts", headers=AUTH)
    messages = client.options("/v1/episodes/conv-1/messages", headers=AUTH)

    assert facts.status_code == 204
    assert facts.headers["allow"] == "GET, OPTIONS, POST"
    assert messages.headers["allow"] == "OPTIONS, POST"


@pytest.mark.parametrize(
    ("path", "params", "unknown"),
    [
        ("/v1/facts", {"entity": "Alice", "entity_typ": "person"}, "entity_typ"),
        ("/v1/traverse", {"start": "Alice", "max_hop": "2"}, "max_hop"),
        ("/v1/history", {"entity": "Alice", "limit": "3"}, "limit"),
        ("/v1/entities", {"entity_type": ""}, "entity_type"),
    ],
)
def test_a_query_parameter_an_operation_does_not_take_is_refused(
    client: TestClient[Any], path: str, params: dict[str, str], unknown: str
) -> None:
    answer = client.get(path, params=params, headers=AUTH)

    assert answer.status_code == 422
    assert unknown in answer.text
