"""Merge groups on random merge sequences: an entity's name resolves to the root its merges
lead to as known at S, and the root lists exactly the entities merged into it by S."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final
from uuid import UUID

from hypothesis import given, settings
from hypothesis import strategies as st

from apexmem import Memory
from apexmem.domain.embedding import HashingEmbedder
from apexmem.events.errors import ApexmemError

NAMES: Final = ("Ann", "Ben", "Cat", "Dan", "Eve", "Fay")

merges = st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(NAMES)), min_size=1, max_size=8)


def ticking() -> tuple[Callable[[], datetime], list[datetime]]:
    now = [datetime(2024, 1, 1, tzinfo=UTC)]

    def tick() -> datetime:
        now[0] += timedelta(milliseconds=1)
        return now[0]

    return tick, now


def expected_owners(
    entities: list[UUID], into: list[tuple[UUID, UUID, datetime]], at: datetime | None
) -> tuple[dict[UUID, UUID], dict[UUID, set[UUID]]]:
    """Each entity's root, and root -> members (root included), from the merges recorded
    by `at`, the plain way."""
    forward = {s: t for s, t, when in into if at is None or when <= at}

    def root(entity: UUID) -> UUID:
        seen = {entity}
        while (entity := forward.get(entity, entity)) not in seen:
            seen.add(entity)
        return entity

    owners = {entity: root(entity) for entity in entities}
    groups: dict[UUID, set[UUID]] = {}
    for entity, owner in owners.items():
        groups.setdefault(owner, set()).add(entity)
    return owners, groups


@settings(max_examples=20, deadline=None)
@given(merges)
def test_names_resolve_to_their_merge_root_at_every_known_time(
    asked: list[tuple[str, str]],
) -> None:
    tick, now = ticking()
    with (
        tempfile.TemporaryDirectory(prefix="apexmem-merges-") as root,
        Memory.open(Path(root), clock=tick, embedder=HashingEmbedder()) as memory,
    ):
        ids = {n: memory.observe_entity(name=n, entity_type="person").entity_id for n in NAMES}
        done: list[tuple[UUID, UUID, datetime]] = []
        moments: list[datetime] = [now[0]]
        for source, target in asked:
            try:
                ref = memory.merge(source=source, target=target, entity_type="person")
            except ApexmemError:
                continue
            done.append((ref.source_id, ref.target_id, now[0]))
            moments.append(now[0])
        for at in [*moments, None]:
            view = memory if at is None else memory.as_of(known_at=at)
            owners, groups = expected_owners(list(ids.values()), done, at)
            for name, entity in ids.items():
                [row] = view.entities(name)
                assert row.entity_id == owners[entity]
                assert {row.entity_id, *row.merged} == groups[owners[entity]]
                assert len(row.merged) == len(set(row.merged))
