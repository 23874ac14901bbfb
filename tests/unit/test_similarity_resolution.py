"""Entity resolution by similarity (`use_embedding_resolution`), with the real WordLlama
embedder where the outcome depends on real similarity.

WordLlama's cosines for the names used here: "Mr John Smith"/"John Smith" 0.933 (merge),
"Jon Smith"/"John Smith" 0.761 (ambiguous), "Postgres"/"PostgreSQL" 0.679 (create).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from apexmem import Memory, ObserveEntity, parse_settings
from apexmem.domain.deciders import decide_merge
from apexmem.domain.embedding import Embedder
from apexmem.domain.resolution import Candidate, KeepSeparate, Thresholds, band
from apexmem.domain.state import EntityState
from apexmem.events.entity import EntityMerged
from apexmem.events.errors import ValidationError
from apexmem.events.similarity import EntityMatched

ON = "[memory.graph]\nuse_embedding_resolution = true\n"


class SaysSame:
    """A disambiguator that takes every ambiguous pair for one entity, and remembers them."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, Candidate]] = []

    @property
    def name(self) -> str:
        return "says-same"

    def same_entity(self, name: str, summary: str | None, candidate: Candidate) -> bool:
        self.asked.append((name, candidate))
        return True


@pytest.fixture
def opener(
    tmp_path: Path, clock: Callable[[], datetime], wordllama: Embedder
) -> Iterator[Callable[..., Memory]]:
    opened: list[Memory] = []

    def open_memory(toml: str = ON, **options: Any) -> Memory:
        settings, _ = parse_settings(toml)
        options.setdefault("embedder", wordllama)
        memory = Memory.open(
            tmp_path / f"mem{len(opened)}", settings=settings, clock=clock, **options
        )
        opened.append(memory)
        return memory

    yield open_memory
    for memory in opened:
        memory.close()


def _verdicts(memory: Memory) -> list[Any]:
    return [e.data for e in memory.events(tags=["entity-matched.v1", "entity-merged.v1"])]


def test_a_name_at_or_above_the_merge_threshold_is_merged_into_the_existing_entity(
    opener: Callable[..., Memory],
) -> None:
    memory = opener()
    john = memory.observe_entity(name="John Smith", entity_type="person")

    again = memory.observe_entity(name="Mr John Smith", entity_type="person")

    assert again.entity_id == john.entity_id
    assert not again.created
    matched, merged = _verdicts(memory)
    assert isinstance(matched, EntityMatched) and isinstance(merged, EntityMerged)
    assert (matched.verdict, matched.judge, matched.candidate) == (
        "same",
        "threshold",
        john.entity_id,
    )
    assert matched.score >= 0.85
    assert merged.entity_id == matched.entity_id and merged.into == john.entity_id


def test_a_merged_name_keeps_resolving_and_its_facts_land_on_the_target(
    opener: Callable[..., Memory],
) -> None:
    memory = opener()
    john = memory.observe_entity(name="John Smith", entity_type="person").entity_id
    memory.observe_entity(name="Mr John Smith", entity_type="person")

    fact = memory.assert_fact(
        subject="Mr John Smith", subject_type="person", relation="works_at", object="Acme"
    )

    assert fact.subject_id == john
    [row] = memory.entities("Mr John Smith")
    assert row.entity_id == john
    assert row.canonical_name == "john smith"  # canonical names never change
    assert len(row.merged) == 1
    assert [f.fact_id for f in memory.facts_about("John Smith")] == [fact.fact_id]


def test_an_ambiguous_name_is_kept_apart_by_default_and_the_pair_recorded(
    opener: Callable[..., Memory],
) -> None:
    memory = opener()
    john = memory.observe_entity(name="John Smith", entity_type="person").entity_id

    jon = memory.observe_entity(name="Jon Smith", entity_type="person")

    assert jon.created and jon.entity_id != john
    [matched] = _verdicts(memory)
    assert isinstance(matched, EntityMatched)
    assert (matched.entity_id, matched.candidate) == (jon.entity_id, john)
    assert (matched.verdict, matched.judge) == ("different", "keep-separate")
    assert 0.70 <= matched.score < 0.85


def test_the_disambiguator_decides_the_ambiguous_band_and_is_named_in_the_verdict(
    opener: Callable[..., Memory],
) -> None:
    judge = SaysSame()
    memory = opener(disambiguator=judge)
    john = memory.observe_entity(name="John Smith", entity_type="person").entity_id

    jon = memory.observe_entity(name="Jon Smith", entity_type="person")

    assert jon.entity_id == john
    [(asked, shown)] = judge.asked
    assert asked == "Jon Smith" and shown.entity_id == john and shown.name == "John Smith"
    matched, merged = _verdicts(memory)
    assert isinstance(matched, EntityMatched) and isinstance(merged, EntityMerged)
    assert (matched.verdict, matched.judge) == ("same", "says-same")


def test_a_name_below_the_ambiguous_threshold_is_created_without_a_verdict(
    opener: Callable[..., Memory],
) -> None:
    memory = opener()
    memory.observe_entity(name="PostgreSQL", entity_type="technology")

    postgres = memory.observe_entity(name="Postgres", entity_type="technology")

    assert postgres.created
    assert _verdicts(memory) == []


def test_only_entities_of_the_same_type_are_candidates(opener: Callable[..., Memory]) -> None:
    memory = opener()
    memory.observe_entity(name="John Smith", entity_type="organization")

    person = memory.observe_entity(name="Mr John Smith", entity_type="person")

    assert person.created
    assert _verdicts(memory) == []


def test_a_name_created_earlier_in_the_same_batch_is_found(
    opener: Callable[..., Memory],
) -> None:
    memory = opener()

    first, second = memory.execute(
        [
            ObserveEntity(name="John Smith", entity_type="person"),
            ObserveEntity(name="Mr John Smith", entity_type="person"),
        ]
    )

    assert getattr(second, "entity_id", None) == getattr(first, "entity_id", None)
    assert [type(v) for v in _verdicts(memory)] == [EntityMatched, EntityMerged]


def test_a_name_the_vector_index_has_not_caught_up_with_is_found_in_the_log(
    opener: Callable[..., Memory],
) -> None:
    memory = opener(ON + "[memory.projection]\ninline = false\n")
    john = memory.observe_entity(name="John Smith", entity_type="person").entity_id
    assert memory.similarity is not None
    assert memory.similarity.index.size("entity") == 0  # projection runs elsewhere

    again = memory.observe_entity(name="Mr John Smith", entity_type="person")

    assert again.entity_id == john


def test_with_the_setting_off_the_write_path_holds_no_similarity_at_all(
    memory: Memory,
) -> None:
    memory.observe_entity(name="John Smith", entity_type="person")

    again = memory.observe_entity(name="Mr John Smith", entity_type="person")

    assert memory._writer.similar is None
    assert again.created
    assert _verdicts(memory) == []


def test_verdicts_survive_a_rebuild_and_replay_embeds_nothing(
    opener: Callable[..., Memory],
) -> None:
    memory = opener()
    memory.observe_entity(name="John Smith", entity_type="person")
    memory.observe_entity(name="Mr John Smith", entity_type="person")
    memory.observe_entity(name="Jon Smith", entity_type="person")
    before = memory.entities(entity_type="person")

    memory.rebuild()

    assert memory.entities(entity_type="person") == before
    assert len(before) == 2


def test_a_merge_into_itself_is_refused_with_a_clear_error(memory: Memory) -> None:
    memory.observe_entity(name="John Smith", entity_type="person")

    with pytest.raises(ValidationError) as refused:
        memory.merge(source="John Smith", target="John Smith", entity_type="person")

    assert refused.value.field == "target"
    assert "already resolves to" in refused.value.rule


def test_a_merge_into_an_entity_of_another_type_is_refused_with_a_clear_error() -> None:
    person = EntityState(version=1, entity_id=_id(1), entity_type="person", name="Ada")
    place = EntityState(version=1, entity_id=_id(2), entity_type="location", name="Ada")

    with pytest.raises(ValidationError) as refused:
        decide_merge(person, place, [_id(2)], "similar name")

    assert refused.value.field == "target"
    assert refused.value.rule == "is a location, not a person"


def test_the_bands_split_at_the_two_thresholds() -> None:
    thresholds = Thresholds(merge=0.85, ambiguous=0.70)

    assert [band(s, thresholds) for s in (0.99, 0.85, 0.8499, 0.70, 0.6999)] == [
        "merge",
        "merge",
        "ask",
        "ask",
        "create",
    ]
    assert not KeepSeparate().same_entity(
        "x",
        None,
        Candidate(entity_id=_id(1), entity_type="person", name="y", summary=None, score=0.8),
    )


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ("[memory.graph]\nentity_similarity_threshold = nan\n", "entity_similarity_threshold"),
        ("[memory.graph]\nentity_similarity_threshold = 1.5\n", "entity_similarity_threshold"),
        ("[memory.graph]\nentity_ambiguous_threshold = 0.9\n", "entity_ambiguous_threshold"),
        ("[memory.graph]\nentity_ambiguous_threshold = -0.1\n", "entity_ambiguous_threshold"),
        (
            "[memory.graph]\nentity_similarity_threshold = 0.0\nentity_ambiguous_threshold = 0.0\n",
            "entity_similarity_threshold",  # 0 is named as itself, before the order of the two
        ),
        (
            "[memory.graph.belief_revision]\nsimilarity_threshold = 0\n",
            "belief_revision.similarity_threshold",
        ),
        (
            "[memory.graph.note_linking]\nsimilarity_threshold = inf\n",
            "note_linking.similarity_threshold",
        ),
        (
            ON + "[memory.vectors]\nenabled = false\n",
            "use_embedding_resolution",
        ),
        (
            "[memory.graph.belief_revision]\nenabled = true\n[memory.vectors]\nenabled = false\n",
            "belief_revision.enabled",
        ),
    ],
)
def test_bad_similarity_settings_are_refused_at_load_naming_the_key(toml: str, key: str) -> None:
    with pytest.raises(ValidationError) as refused:
        parse_settings(toml)

    assert refused.value.field == f"memory.graph.{key}"


def _id(n: int) -> UUID:
    return UUID(int=n)


class Fails:
    """A disambiguator whose model is down."""

    @property
    def name(self) -> str:
        return "fails"

    def same_entity(self, name: str, summary: str | None, candidate: Candidate) -> bool:
        raise TimeoutError("the model did not answer")


def test_a_failing_disambiguator_degrades_to_a_new_entity_and_records_nothing(
    opener: Callable[..., Memory],
) -> None:
    memory = opener(disambiguator=Fails())
    john = memory.observe_entity(name="John Smith", entity_type="person").entity_id

    jon = memory.observe_entity(name="Jon Smith", entity_type="person")

    assert jon.created and jon.entity_id != john
    assert _verdicts(memory) == []


def test_merges_and_kept_apart_pairs_are_listed_with_their_verdicts(
    opener: Callable[..., Memory],
) -> None:
    memory = opener()
    memory.observe_entity(name="John Smith", entity_type="person")
    memory.observe_entity(name="Mr John Smith", entity_type="person")
    memory.observe_entity(name="Jon Smith", entity_type="person")
    memory.observe_entity(name="Ada Lovelace", entity_type="person")
    memory.observe_entity(name="Countess Lovelace", entity_type="person")
    memory.merge(source="Countess Lovelace", target="Ada Lovelace", entity_type="person")

    merged = memory.merges()
    both = memory.merges(apart=True)

    assert [(m.name, m.target, m.judge) for m in merged] == [
        ("Mr John Smith", "John Smith", "threshold"),
        ("Countess Lovelace", "Ada Lovelace", None),
    ]
    assert [(m.name, m.verdict) for m in both] == [
        ("Mr John Smith", "merged"),
        ("Jon Smith", "apart"),
        ("Countess Lovelace", "apart"),  # ambiguous (WordLlama 0.7+), then merged by hand
        ("Countess Lovelace", "merged"),
    ]
    with pytest.raises(ValidationError):
        memory.merges(limit=0)
