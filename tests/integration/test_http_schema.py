"""schemathesis against the API's own OpenAPI document: no server errors, and every answer
(status, content type, body) is one the document promises.

Bounded: a few generated requests per operation and mode, derandomized by the ci profile.
Valid-by-schema requests may still be refused with 422 (a name empty after normalization,
an unknown edge type), so acceptance of positive data is not checked.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from litestar.testing import TestClient
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

from apexmem.server.app import create_app
from apexmem.server.tenants import Tenants

TOKEN: Final = "schema-token-0123456789"
AUTH: Final = {"Authorization": f"Bearer {TOKEN}"}
EXAMPLES: Final = 8
CHECKS: Final = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    negative_data_rejection,
]
SEED: Final = {
    "facts": [
        {
            "subject": "Alice",
            "subject_type": "person",
            "relation": "works_at",
            "object": "Acme",
            "object_type": "organization",
        }
    ]
}


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The API over a memory holding one fact, started once for the module."""
    directory: Path = tmp_path_factory.mktemp("schema") / "mem"
    directory.mkdir()
    (directory / "apexmem.toml").write_text(
        '[memory.vectors]\nembedder = "hashing"\n', encoding="utf-8"
    )
    tenants = Tenants(single=directory, token=TOKEN)
    guarded = create_app(tenants)
    with TestClient(guarded) as client:
        assert client.post("/v1/facts", json=SEED, headers=AUTH).status_code == 200
    yield guarded
    tenants.close()


def _operations() -> list[str]:
    return [
        "POST /v1/facts",
        "GET /v1/facts",
        "POST /v1/messages",
        "POST /v1/aliases",
        "POST /v1/retractions",
        "POST /v1/recall",
        "GET /v1/traverse",
        "GET /v1/history",
        "GET /v1/diff",
        "GET /v1/verify",
        "GET /v1/stats",
        "GET /v1/entities",
        "GET /v1/timeline",
        "GET /v1/recall",
    ]


@pytest.mark.slow
@pytest.mark.parametrize("label", _operations())
@pytest.mark.parametrize("mode", list(schemathesis.GenerationMode))
def test_every_operation_answers_as_its_schema_says(
    app: Any, label: str, mode: schemathesis.GenerationMode
) -> None:
    schema = schemathesis.openapi.from_asgi("/v1/openapi.json", app, headers=AUTH)
    operation = schema.find_operation_by_label(label)
    assert operation is not None, label

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        case = data.draw(operation.as_strategy(generation_mode=mode))
        response = case.call(headers=AUTH)
        case.validate_response(response, checks=CHECKS, headers=AUTH)

    check()
