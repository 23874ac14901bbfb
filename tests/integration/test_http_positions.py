"""A log position past the end names no state the memory has had: 404, as an id naming no
fact is (a real `apexmem serve` process)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from serving import AUTH, free_port, make_memory, running

from apexmem.wire_fields import VISIBLE


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real server over a memory where Alice works at Acme."""
    directory: Path = make_memory(tmp_path_factory.mktemp("positions"))
    url = f"http://127.0.0.1:{free_port()}"
    log = directory.parent / "serve.log"
    with running(
        "serve", "--db", str(directory), "--port", url.rsplit(":", 1)[1],
        ready=f"{url}/v1/health", log=log,
    ):  # fmt: skip
        seed = {"facts": [{"subject": "Alice", "relation": "works_at", "object": "Acme"}]}
        assert httpx.post(f"{url}/v1/facts", json=seed, headers=AUTH).status_code == 200
        yield url


def _last(base: str) -> int:
    head: int = httpx.get(f"{base}/v1/status", headers=AUTH).json()["lags"]["head"]
    return head


@pytest.mark.parametrize(
    ("method", "path", "asked"),
    [
        ("GET", "/v1/facts", {"entity": "Alice"}),
        ("GET", "/v1/traverse", {"start": "Alice"}),
        ("GET", "/v1/episodes", {"entity": "Alice"}),
        ("POST", "/v1/recall", {"query": "Where does Alice work?"}),
    ],
)
def test_a_position_past_the_log_end_is_not_found(
    base: str, method: str, path: str, asked: dict[str, str]
) -> None:
    last = _last(base)

    def ask(position: int) -> httpx.Response:
        given: dict[str, str | int] = {**asked, "position": position}
        if method == "GET":
            return httpx.get(f"{base}{path}", params=given, headers=AUTH)
        return httpx.post(f"{base}{path}", json=given, headers=AUTH)

    past, at_end = ask(last + 1), ask(last)

    assert past.status_code == 404, past.text
    assert past.json()["detail"] == f"position {last + 1}: this log ends at position {last}"
    assert at_end.status_code == 200, at_end.text


def test_a_position_with_known_at_is_still_refused(base: str) -> None:
    asked: dict[str, str | int] = {
        "entity": "Alice",
        "position": 1,
        "known_at": "2030-01-01T00:00:00Z",
    }

    refused = httpx.get(f"{base}/v1/facts", params=asked, headers=AUTH)

    assert refused.status_code == 422
    assert refused.json()["field"] == "position"


def test_the_schema_states_the_rules_the_server_keeps(base: str) -> None:
    document = httpx.get(f"{base}/v1/openapi.json", headers=AUTH).json()
    schemas = document["components"]["schemas"]
    both = {"subject": "Alice", "relation": "age", "object": "Acme", "value": "41"}

    refused = httpx.post(f"{base}/v1/facts", json={"facts": [both]}, headers=AUTH)

    assert schemas["FactIn"]["not"]["required"] == ["object", "value"]
    assert refused.status_code == 422
    assert schemas["LinkIn"]["properties"]["source"]["pattern"].startswith("^[0-9a-fA-F]")
    assert schemas["MergeIn"]["properties"]["target"]["pattern"] == VISIBLE
