"""A writer forgets the cached states of streams another writer appended to before it decides.

Two Memory objects on one directory are two writers with caches of their own, as two
processes are. A stream a writer only reads (an entity it resolves, a slot it retracts from
or merges) never conflicts on append, so before this a stale state of it went unnoticed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from apexmem import HashingEmbedder, Memory, ValidationError

JOB: dict[str, Any] = {
    "subject_type": "person",
    "relation": "works_at",
    "object_type": "organization",
}


@pytest.fixture
def writers(tmp_path: Path) -> Iterator[tuple[Memory, Memory]]:
    first = Memory.open(tmp_path / "mem", embedder=HashingEmbedder())
    second = Memory.open(tmp_path / "mem", embedder=HashingEmbedder())
    yield first, second
    first.close()
    second.close()


def employers(memory: Memory, name: str) -> list[str | None]:
    return [f.object for f in memory.facts_about(name) if f.relation == "works_at"]


def test_a_fact_another_writer_added_to_a_cached_slot_can_be_retracted(
    writers: tuple[Memory, Memory],
) -> None:
    first, second = writers
    first.assert_fact(subject="Alice", object="Acme", valid_from="2020-01-01T00:00:00Z", **JOB)
    globex = second.assert_fact(
        subject="Alice", object="Globex", valid_from="2021-01-01T00:00:00Z", **JOB
    )

    first.retract(globex.fact_id, reason="wrong")

    assert employers(first, "Alice") == []  # Acme was closed by Globex, Globex withdrawn


def test_facts_about_a_name_another_writer_merged_land_on_the_target(
    writers: tuple[Memory, Memory],
) -> None:
    first, second = writers
    first.assert_fact(subject="Alice", subject_type="person", relation="uses", object="Vim")
    first.observe_entity(name="Alicia", entity_type="person")
    merged = second.merge(source="Alice", target="Alicia", entity_type="person")

    used = first.assert_fact(subject="Alice", subject_type="person", relation="uses", object="Git")

    assert used.subject_id == merged.target_id
    assert second.assert_fact(**{**JOB, "subject": "Alice", "object": "Acme"}).subject_id == (
        merged.target_id
    )


def test_a_merge_the_other_way_after_another_writer_merged_is_refused(
    writers: tuple[Memory, Memory],
) -> None:
    first, second = writers
    first.observe_entity(name="Bob Stone", entity_type="person")
    first.observe_entity(name="Robert Stone", entity_type="person")
    second.merge(source="Robert Stone", target="Bob Stone", entity_type="person")

    with pytest.raises(ValidationError) as caught:
        first.merge(source="Bob Stone", target="Robert Stone", entity_type="person")

    assert caught.value.field == "target"
    assert first.assert_fact(subject="Robert Stone", object="Acme", **JOB).outcome == "created"
    assert employers(second, "Bob Stone") == ["Acme"]


def test_a_merge_moves_a_fact_another_writer_gave_the_source(
    writers: tuple[Memory, Memory],
) -> None:
    first, second = writers
    first.assert_fact(subject="Alicia", object="Initech", valid_from="2020-01-01T00:00:00Z", **JOB)
    first.assert_fact(subject="Alice", object="Acme", valid_from="2019-01-01T00:00:00Z", **JOB)
    second.assert_fact(subject="Alice", object="Globex", valid_from="2021-01-01T00:00:00Z", **JOB)

    first.merge(source="Alice", target="Alicia", entity_type="person")

    assert employers(first, "Alicia") == ["Globex"]
