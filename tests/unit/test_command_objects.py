"""Commands made by their constructors, and idempotency keys, are validated before a write.

A msgspec struct's constructor checks neither types nor constraints, so `AssertFact(...,
confidence=5.0)` is made as asked. Before these checks such a command reached the log, and
its event then failed to decode on every read, reopen and rebuild of the memory.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from apexmem import (
    AssertFact,
    HashingEmbedder,
    Memory,
    ObserveEntity,
    RecordMessage,
    SetDecayRate,
    ValidationError,
)
from apexmem.events.base import MAX_KEY_BYTES

NOW = datetime(2024, 1, 1, tzinfo=UTC)


def alice(**extra: Any) -> AssertFact:
    fields: dict[str, Any] = {"subject": "Alice", "relation": "likes", "object": "Carol"}
    return AssertFact(**{**fields, **extra})


def still_readable(directory: Path, position: int) -> None:
    """The memory reopens, reads and rebuilds, and holds nothing past `position`."""
    with Memory.open(directory, embedder=HashingEmbedder()) as memory:
        assert memory.log.last_position() == position
        assert [f.object for f in memory.facts_about("Alice")] == ["Bobby"]
        memory.rebuild()
        assert memory.verify().ok


@pytest.fixture
def seeded(tmp_path: Path) -> tuple[Path, int]:
    directory = tmp_path / "mem"
    with Memory.open(directory, embedder=HashingEmbedder()) as memory:
        memory.assert_fact(subject="Alice", relation="knows", object="Bobby")
        return directory, memory.log.last_position()


@pytest.mark.parametrize(
    ("command", "field", "value"),
    [
        (alice(confidence=5.0), "confidence", 5.0),
        (alice(confidence=float("nan")), "confidence", None),
        (alice(subject=42), "subject", 42),
        (alice(valid_from=datetime(2024, 1, 1)), "valid_from", None),
        (alice(actor="é" * 200), "actor", None),
        (alice(edge_type="sematic"), "edge_type", "sematic"),
        (alice(value="x"), "value", "x"),
        (RecordMessage(episode="conv-1", speaker="user", text="   "), "text", "   "),
        (ObserveEntity(name="Dana", summary="s" * 5000), "summary", None),
        (SetDecayRate(edge_type="semantic", rate=50.0), "rate", 50.0),
    ],
)
def test_a_bad_command_object_is_refused_by_field_and_nothing_is_written(
    seeded: tuple[Path, int], command: Any, field: str, value: object
) -> None:
    directory, position = seeded
    with Memory.open(directory, embedder=HashingEmbedder()) as memory:
        with pytest.raises(ValidationError) as caught:
            memory.execute([command])
        assert caught.value.field == field
        if value is not None:
            assert caught.value.value == value
        assert memory.log.last_position() == position
    still_readable(directory, position)


def test_a_bad_command_object_in_a_batch_is_named_by_its_index(seeded: tuple[Path, int]) -> None:
    directory, position = seeded
    with Memory.open(directory, embedder=HashingEmbedder()) as memory:
        with pytest.raises(ValidationError) as caught:
            memory.execute([alice(), alice(relation="knows", object="Erin", confidence=-1.0)])
        assert caught.value.field == "[1].confidence"
        with pytest.raises(ValidationError) as caught:
            memory.assert_facts(
                [{"subject": "Alice", "relation": "likes", "object": "Dana"}, alice(confidence=2.0)]
            )
        assert caught.value.field == "facts[1].confidence"
        assert memory.log.last_position() == position
    still_readable(directory, position)


@pytest.mark.parametrize("facts", ["Alice likes Carol", {"subject": "Alice"}, [alice(), 5]])
def test_assert_facts_refuses_what_is_not_a_list_of_facts(
    seeded: tuple[Path, int], facts: Any
) -> None:
    directory, position = seeded
    with Memory.open(directory, embedder=HashingEmbedder()) as memory:
        with pytest.raises(ValidationError) as caught:
            memory.assert_facts(facts)
        assert caught.value.field in {"facts", "facts[1]"}
        assert memory.log.last_position() == position


def test_a_valid_command_object_is_written(seeded: tuple[Path, int]) -> None:
    directory, _ = seeded
    with Memory.open(directory, embedder=HashingEmbedder()) as memory:
        [ref] = memory.assert_facts([alice(valid_from=NOW, confidence=0.5)])
        assert ref.outcome == "created"
        [fact] = [f for f in memory.facts_about("Alice") if f.relation == "likes"]
        assert (fact.object, fact.confidence, fact.valid_from) == ("Carol", 0.5, NOW)


@pytest.mark.parametrize(
    ("key", "rule"),
    [
        (42, "is not a non-empty string"),
        ("", "is not a non-empty string"),
        ("k" * (MAX_KEY_BYTES + 1), f"is longer than {MAX_KEY_BYTES} bytes"),
        ("é" * (MAX_KEY_BYTES // 2 + 1), f"is longer than {MAX_KEY_BYTES} bytes"),
    ],
)
def test_a_bad_idempotency_key_is_refused_and_nothing_is_written(
    seeded: tuple[Path, int], key: Any, rule: str
) -> None:
    directory, position = seeded
    with Memory.open(directory, embedder=HashingEmbedder()) as memory:
        with pytest.raises(ValidationError) as caught:
            memory.assert_fact(
                subject="Alice", relation="likes", object="Carol", idempotency_key=key
            )
        assert (caught.value.field, caught.value.rule) == ("idempotency_key", rule)
        assert memory.log.last_position() == position
    still_readable(directory, position)


def test_the_longest_idempotency_key_is_taken(seeded: tuple[Path, int]) -> None:
    directory, _ = seeded
    key = "é" * (MAX_KEY_BYTES // 2)
    with Memory.open(directory, embedder=HashingEmbedder()) as memory:
        first = memory.assert_fact(
            subject="Alice", relation="likes", object="Carol", idempotency_key=key
        )
        again = memory.assert_fact(
            subject="Alice", relation="likes", object="Carol", idempotency_key=key
        )
        assert again == first
