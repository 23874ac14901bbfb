"""The one rule for the text an entity is embedded by, and the vectors projection using it."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import uuid4

import pytest

from apexmem.domain.embedding import entity_text
from apexmem.events.entity import EntityObserved
from apexmem.events.envelope import RecordedEvent
from apexmem.projections.vectors import text_of


@pytest.mark.parametrize(
    ("name", "summary", "text"),
    [
        ("Ann", None, "Ann"),
        ("Ann", "", "Ann"),
        ("Ann", "a nurse", "Ann: a nurse"),
        ("Zoë Ng", " a violin maker ", "Zoë Ng:  a violin maker "),
    ],
)
def test_an_entity_is_embedded_by_its_name_then_its_summary(
    name: str, summary: str | None, text: str
) -> None:
    assert entity_text(name, summary) == text


@pytest.mark.parametrize("summary", [None, "", "a nurse"])
def test_the_vectors_projection_embeds_an_observed_entity_by_that_text(
    summary: str | None,
) -> None:
    entity = uuid4()
    observed = EntityObserved(
        entity_id=entity, entity_type="person", canonical_name="ann", name="Ann", summary=summary
    )
    event = RecordedEvent(
        position=1,
        stream_id=entity,
        version=1,
        tag="entity-observed.v1",
        recorded_at=datetime(2024, 1, 1, tzinfo=UTC),
        actor=None,
        episode=None,
        cause=None,
        data=observed,
    )

    found = text_of(event)

    assert found is not None
    assert found.text == entity_text("Ann", summary)
