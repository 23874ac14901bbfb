"""POST /v1/decay in process: a decay pass over HTTP, and the fade in /history and /diff."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from litestar.testing import TestClient
from serving import make_memory

from apexmem import Memory
from apexmem.domain.embedding import HashingEmbedder
from apexmem.server.app import create_app
from apexmem.server.tenants import Tenants

TOKEN: Final = "test-token-0123456789"
AUTH: Final = {"Authorization": f"Bearer {TOKEN}"}


def test_a_decay_pass_over_http_records_the_fade_that_history_and_diff_show(
    tmp_path: Path,
) -> None:
    directory = make_memory(tmp_path)
    with Memory.open(directory, embedder=HashingEmbedder()) as memory:
        tea = memory.assert_fact(
            subject="Alice", relation="likes", object="tea", observed_at="2020-01-01T00:00:00Z"
        ).fact_id
    client: TestClient[Any]

    with TestClient(create_app(Tenants(single=directory, token=TOKEN))) as client:
        first = client.post("/v1/decay", headers=AUTH)
        again = client.post("/v1/decay", headers=AUTH)
        history = client.get("/v1/history", params={"fact": str(tea)}, headers=AUTH)
        window = {"since": "2020-01-01T00:00:00Z", "until": "2999-01-01T00:00:00Z"}
        changes = client.get("/v1/diff", params=window, headers=AUTH)
        unread = client.post("/v1/decay")

    assert first.status_code == 200, first.text
    [faded] = first.json()["faded"]
    assert (faded["fact_id"], faded["reason"], faded["rate"]) == (str(tea), "decayed", 0.01)
    assert again.json()["position"] == 0
    tags = [e["tag"] for e in history.json()["events"]]
    assert tags[-1] == "facts-faded.v1"
    assert [c["fact_id"] for c in changes.json()["faded"]] == [str(tea)]
    assert unread.status_code == 401
