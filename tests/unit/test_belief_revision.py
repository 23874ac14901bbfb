"""Belief revision (`[memory.graph.belief_revision]`), with the real WordLlama embedder where
the outcome depends on real similarity ("Alice likes Bob"/"Alice dislikes Bob": 0.907)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from apexmem import AssertFact, Memory, parse_settings
from apexmem.domain.embedding import Embedder, HashingEmbedder
from apexmem.domain.revision import decide_revision, relation_similarity, same_domain
from apexmem.domain.state import FactVersion
from apexmem.events.fact import FactSuperseded
from apexmem.events.similarity import FactContradicted

ON = "[memory.graph.belief_revision]\nenabled = true\n"
T2020 = datetime(2020, 1, 1, tzinfo=UTC)
T2021 = datetime(2021, 1, 1, tzinfo=UTC)


@pytest.fixture
def opener(
    tmp_path: Path, clock: Callable[[], datetime], wordllama: Embedder
) -> Iterator[Callable[..., Memory]]:
    opened: list[Memory] = []

    def open_memory(toml: str = ON, embedder: Embedder | None = None) -> Memory:
        settings, _ = parse_settings(toml)
        memory = Memory.open(
            tmp_path / f"mem{len(opened)}",
            settings=settings,
            clock=clock,
            embedder=embedder or wordllama,
        )
        opened.append(memory)
        return memory

    yield open_memory
    for memory in opened:
        memory.close()


def _alice(relation: str, valid_from: datetime = T2021, **more: Any) -> dict[str, Any]:
    return {
        "subject": "Alice",
        "subject_type": "person",
        "relation": relation,
        "object": "Bob",
        "object_type": "person",
        "valid_from": valid_from,
        **more,
    }


def _revisions(memory: Memory) -> list[Any]:
    return [e.data for e in memory.events(tags=["fact-contradicted.v1", "fact-superseded.v1"])]


def test_a_contradicting_fact_between_the_same_entities_supersedes_the_active_one(
    opener: Callable[..., Memory],
) -> None:
    memory = opener()
    likes = memory.assert_fact(**_alice("likes", T2020))

    dislikes = memory.assert_fact(**_alice("dislikes", T2021))

    contradicted, closed = _revisions(memory)
    assert isinstance(contradicted, FactContradicted)
    assert (contradicted.fact_id, contradicted.by) == (likes.fact_id, dislikes.fact_id)
    assert contradicted.score >= 0.85
    assert closed == FactSuperseded(
        fact_id=likes.fact_id, superseded_by=dislikes.fact_id, valid_until=T2021
    )
    assert [f.relation for f in memory.facts_about("Alice")] == ["dislikes"]
    then = memory.facts_about("Alice", valid_at=datetime(2020, 6, 1, tzinfo=UTC))
    assert [f.relation for f in then] == ["likes"]


def test_a_belief_ending_later_is_current_and_a_contradiction_ends_it_earlier(
    opener: Callable[..., Memory],
) -> None:
    memory = opener()
    likes = memory.assert_fact(**_alice("likes", T2020, valid_until="2030-01-01T00:00:00Z"))

    dislikes = memory.assert_fact(**_alice("dislikes", T2021))

    assert _revisions(memory)[-1] == FactSuperseded(
        fact_id=likes.fact_id, superseded_by=dislikes.fact_id, valid_until=T2021
    )
    assert [f.relation for f in memory.facts_about("Alice")] == ["dislikes"]


def test_the_close_is_appended_before_the_new_fact(opener: Callable[..., Memory]) -> None:
    memory = opener()
    memory.assert_fact(**_alice("likes", T2020))

    memory.assert_fact(**_alice("dislikes", T2021))

    tags = [e.tag for e in memory.events(start=1)][-3:]
    assert tags == ["fact-contradicted.v1", "fact-superseded.v1", "fact-asserted.v1"]


def test_a_fact_in_another_relation_domain_is_left_alone(opener: Callable[..., Memory]) -> None:
    memory = opener()
    memory.assert_fact(**_alice("likes", T2020))

    memory.assert_fact(**_alice("works_with", T2021))

    assert _revisions(memory) == []
    assert sorted(f.relation for f in memory.facts_about("Alice")) == ["likes", "works_with"]


def test_an_older_fact_never_closes_a_newer_one_and_ends_where_it_starts(
    opener: Callable[..., Memory],
) -> None:
    memory = opener()
    dislikes = memory.assert_fact(**_alice("dislikes", T2021))

    likes = memory.assert_fact(**_alice("likes", T2020))

    [contradicted] = _revisions(memory)
    assert isinstance(contradicted, FactContradicted)
    assert (contradicted.fact_id, contradicted.by) == (likes.fact_id, dislikes.fact_id)
    assert likes.outcome == "historical"
    assert [f.relation for f in memory.facts_about("Alice")] == ["dislikes"]
    then = memory.facts_about("Alice", valid_at=datetime(2020, 6, 1, tzinfo=UTC))
    assert [(f.relation, f.valid_until) for f in then] == [("likes", T2021)]


@pytest.mark.parametrize("order", [("likes", "dislikes"), ("dislikes", "likes")])
def test_what_is_believed_when_does_not_depend_on_the_order_facts_arrive_in(
    opener: Callable[..., Memory], order: tuple[str, str]
) -> None:
    memory = opener()
    starts = {"likes": T2020, "dislikes": T2021}
    for relation in order:
        memory.assert_fact(**_alice(relation, starts[relation]))

    def believed(when: str) -> list[str]:
        return [f.relation for f in memory.facts_about("Alice", valid_at=when)]

    assert believed("2020-06-01T00:00:00Z") == ["likes"]
    assert believed("2022-06-01T00:00:00Z") == ["dislikes"]
    assert [f.relation for f in memory.facts_about("Alice")] == ["dislikes"]
    memory.rebuild()
    assert believed("2020-06-01T00:00:00Z") == ["likes"]


def test_a_fact_earlier_in_the_same_batch_is_revised(opener: Callable[..., Memory]) -> None:
    memory = opener()

    likes, dislikes = memory.assert_facts([_alice("likes", T2020), _alice("dislikes", T2021)])

    contradicted, _closed = _revisions(memory)
    assert isinstance(contradicted, FactContradicted)
    assert (contradicted.fact_id, contradicted.by) == (likes.fact_id, dislikes.fact_id)


def test_a_fact_the_read_model_has_not_caught_up_with_is_revised(
    opener: Callable[..., Memory],
) -> None:
    memory = opener(ON + "[memory.projection]\ninline = false\n")
    likes = memory.assert_fact(**_alice("likes", T2020))

    memory.assert_fact(**_alice("dislikes", T2021))

    contradicted, _closed = _revisions(memory)
    assert isinstance(contradicted, FactContradicted) and contradicted.fact_id == likes.fact_id


def test_without_the_setting_nothing_is_revised(opener: Callable[..., Memory]) -> None:
    memory = opener("")
    memory.assert_fact(**_alice("likes", T2020))

    memory.assert_fact(**_alice("dislikes", T2021))

    assert _revisions(memory) == []
    assert len(memory.facts_about("Alice")) == 2


def test_dissimilar_sentences_in_one_domain_are_left_alone(
    opener: Callable[..., Memory],
) -> None:
    memory = opener(embedder=HashingEmbedder())  # "likes"/"dislikes" share few words here
    memory.assert_fact(**_alice("likes", T2020))

    memory.assert_fact(**_alice("dislikes", T2021))

    assert _revisions(memory) == []


def test_revisions_survive_a_rebuild(opener: Callable[..., Memory]) -> None:
    memory = opener()
    memory.execute([AssertFact(**_alice("likes", T2020))])
    memory.assert_fact(**_alice("dislikes", T2021))
    before = memory.facts_about("Alice", valid_at=None)

    memory.rebuild()

    assert memory.facts_about("Alice", valid_at=None) == before


def test_relation_domains_follow_the_reference() -> None:
    assert relation_similarity("works_at", "work_at") == pytest.approx(0.875)
    assert same_domain("prefers", "prefers_strongly")
    assert same_domain("likes", "dislikes")
    assert not same_domain("works_at", "knows")
    assert relation_similarity("", "") == 1.0


def test_only_a_believed_earlier_version_still_holding_then_is_closed() -> None:
    old = FactVersion(
        fact_key=1,
        object_key="o",
        confidence=1.0,
        valid_from=T2020,
        valid_until=None,
        observed_at=T2020,
    )
    new = UUID(int=2)

    assert len(decide_revision(old, by=new, starts=T2021, score=0.9, model="m")) == 2
    assert decide_revision(old, by=new, starts=T2020, score=0.9, model="m") == []
    closed = FactVersion(**{**_fields(old), "valid_until": T2021})
    assert decide_revision(closed, by=new, starts=T2021, score=0.9, model="m") == []
    ending_later = FactVersion(**{**_fields(old), "valid_until": datetime(2030, 1, 1, tzinfo=UTC)})
    assert len(decide_revision(ending_later, by=new, starts=T2021, score=0.9, model="m")) == 2
    withdrawn = FactVersion(**{**_fields(old), "standing": "withdrawn"})
    assert decide_revision(withdrawn, by=new, starts=T2021, score=0.9, model="m") == []


def _fields(version: FactVersion) -> dict[str, Any]:
    return {f: getattr(version, f) for f in version.__struct_fields__}
