"""`similar` answers with current items only: fact versions believed now, entities not archived,
an entity merged away as the one it was merged into; still `k` of them when stale items are
the nearest."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from apexmem import HashingEmbedder, Memory


def _ids(memory: Memory, text: str, kind: str, k: int) -> list[object]:
    return [s.item_id for s in memory.similar(text, kind=kind, k=k)]


def test_a_withdrawn_fact_is_not_similar_to_anything(memory: Memory) -> None:
    gone = memory.assert_fact(
        subject="Yeti Hunter", relation="hunts", object="Yeti", fact="Yeti Hunter hunts the yeti"
    )
    memory.retract(gone.fact_id, reason="never true")
    kept = memory.assert_fact(subject="Bob", relation="likes", object="Jazz")

    found = _ids(memory, "Yeti Hunter hunts the yeti", "fact", 1)

    assert found == [kept.fact_id]


def test_a_superseded_version_gives_way_to_the_current_one(memory: Memory) -> None:
    old = memory.assert_fact(
        subject="Alice", relation="works_at", object="Acme", valid_from="2020-01-01T00:00:00Z"
    )
    new = memory.assert_fact(
        subject="Alice", relation="works_at", object="Globex", valid_from="2021-01-01T00:00:00Z"
    )

    found = _ids(memory, "Alice works_at Acme", "fact", 5)

    assert old.fact_id not in found
    assert found == [new.fact_id]


def test_k_current_facts_come_back_when_stale_ones_are_nearest(memory: Memory) -> None:
    for n in range(6):
        stale = memory.assert_fact(subject="Cat", relation="eats", value=f"fish {n}")
        memory.retract(stale.fact_id, reason="a typo")
    current = [
        memory.assert_fact(subject="Dog", relation="likes", value=v).fact_id
        for v in ("bones", "walks", "naps")
    ]

    found = _ids(memory, "Cat eats fish", "fact", 2)
    exact = memory.similarity.similar_exact("Cat eats fish", kind="fact", k=2)  # type: ignore[union-attr]

    assert len(found) == 2 and set(found) <= set(current)
    assert [s.item_id for s in exact] == found


def test_an_entity_merged_away_is_found_as_the_one_it_was_merged_into(memory: Memory) -> None:
    memory.assert_fact(subject="Yeti Hunter", subject_type="person", relation="hunts", value="yeti")
    memory.assert_fact(
        subject="Sasquatch Fan", subject_type="person", relation="likes", object="Bigfoot Club"
    )
    memory.merge(source="Sasquatch Fan", target="Yeti Hunter", entity_type="person")
    [target] = memory.entities("Yeti Hunter")

    found = memory.similar("Sasquatch Fan", kind="entity", k=2)

    assert len(found) == 2
    assert found[0].item_id == target.entity_id
    assert found[1].item_id != target.entity_id
    assert {s.item_id for s in found} <= {e.entity_id for e in memory.entities()}


class _Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = datetime(2024, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def test_an_archived_entity_is_not_similar_to_anything(tmp_path: Path) -> None:
    clock = _Clock()
    with Memory.open(tmp_path / "mem", clock=clock, embedder=HashingEmbedder()) as memory:
        memory.observe_entity(name="Lonely Lighthouse", entity_type="location")
        clock.now += timedelta(days=150)
        memory.observe_entity(name="Recent Harbour", entity_type="location")
        clock.now += timedelta(days=50)
        assert memory.evict().orphans == 1

        found = memory.similar("Lonely Lighthouse", kind="entity", k=5)
        shown = [e.name for e in memory.entities()]

    assert len(found) == 1
    assert shown == ["Recent Harbour"]
