"""A traversal counts an entity merged into another as that one, in the views that know of
the merge; a view of a moment before it still shows the two apart."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import pytest

from apexmem import Memory


@pytest.fixture
def merged(memory: Memory, clock: Callable[[], datetime]) -> tuple[Memory, datetime]:
    """Alicia Smithers (who uses a tool, and whom Bob knows) merged into Alice Smith (who
    works at Acme); and a moment before the merge."""
    memory.assert_facts(
        [
            {
                "subject": "Alicia Smithers",
                "subject_type": "person",
                "relation": "uses",
                "object": "Rustacean Tool",
                "object_type": "tool",
            },
            {
                "subject": "Alice Smith",
                "subject_type": "person",
                "relation": "works_at",
                "object": "Acme Widgets",
                "object_type": "organization",
            },
            {
                "subject": "Bob Jones",
                "subject_type": "person",
                "relation": "knows",
                "object": "Alicia Smithers",
                "object_type": "person",
            },
        ]
    )
    before = clock()
    memory.merge(source="Alicia Smithers", target="Alice Smith", entity_type="person")
    return memory, before


def test_traversing_from_a_merged_name_reaches_only_the_entity_it_was_merged_into(
    merged: tuple[Memory, datetime],
) -> None:
    memory, _ = merged

    found = memory.traverse("Alicia Smithers")

    assert [(e.name, e.hops) for e in found.entities] == [
        ("Alice Smith", 0),
        ("Acme Widgets", 1),
        ("Bob Jones", 1),
        ("Rustacean Tool", 1),
    ]


def test_an_edge_to_a_merged_entity_reaches_the_entity_it_was_merged_into(
    merged: tuple[Memory, datetime],
) -> None:
    memory, _ = merged

    found = memory.traverse("Bob Jones", max_hops=1)

    assert [(e.name, e.hops) for e in found.entities] == [("Bob Jones", 0), ("Alice Smith", 1)]
    assert [f.fact for f in found.facts] == ["Bob Jones knows Alicia Smithers"]


def test_a_view_before_the_merge_still_traverses_the_two_apart(
    merged: tuple[Memory, datetime],
) -> None:
    memory, before = merged

    found = memory.as_of(known_at=before).traverse("Alicia Smithers")
    from_bob = memory.as_of(known_at=before).traverse("Bob Jones", max_hops=1)

    assert [(e.name, e.hops) for e in found.entities] == [
        ("Alicia Smithers", 0),
        ("Bob Jones", 1),
        ("Rustacean Tool", 1),
    ]
    assert [e.name for e in from_bob.entities] == ["Bob Jones", "Alicia Smithers"]


def test_bfs_at_a_timestamp_folds_the_merge_too(merged: tuple[Memory, datetime]) -> None:
    memory, _ = merged

    found = memory.bfs_at_timestamp("Alicia Smithers", max_hops=0, at=None)

    assert [e.name for e in found.entities] == ["Alice Smith"]
