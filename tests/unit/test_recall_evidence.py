"""One piece of evidence counted once: a turn and the facts learned from it share one place
in each ranked list and are shown once, a fact counts as much as it is believed, and what
recall would not show takes no place.

The fusion rule is pure (domain.recall.fusion); the recalls run on real SQLite and FTS5
(vectors off, so the full-text list alone decides what is found).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from apexmem import Memory, parse_settings
from apexmem.domain.embedding import HashingEmbedder
from apexmem.domain.recall.fusion import reciprocal_rank_fusion, weighted_rank_fusion

_START = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


@given(
    st.lists(st.lists(st.sampled_from("abcdefgh"), max_size=6, unique=True), max_size=4),
)
def test_with_every_item_fully_trusted_it_is_reciprocal_rank_fusion(
    rankings: list[list[str]],
) -> None:
    trusted = [[(item, 1.0) for item in ranking] for ranking in rankings]

    assert weighted_rank_fusion(trusted) == reciprocal_rank_fusion(rankings)


def test_an_item_ranked_by_weaker_evidence_counts_that_much_less() -> None:
    fused = weighted_rank_fusion([[("fact", 0.5), ("turn", 1.0)]])

    assert [item for item, _ in fused] == ["turn", "fact"]
    assert dict(fused)["fact"] == 0.5 / 61


def _memory(directory: Path, settings: str = "") -> Memory:
    parsed, _ = parse_settings(
        "[memory.recall]\nrecord_usage = false\nspeaker_boost = 0\n"
        "turn_before_share = 0\nturn_after_share = 0\n"
        + settings
        + "[memory.vectors]\nenabled = false\n"
    )
    return Memory.open(directory, settings=parsed, embedder=HashingEmbedder())


def _say(memory: Memory, turns: list[tuple[str, str]]) -> None:
    for i, (speaker, text) in enumerate(turns):
        memory.record_message(
            episode="conv-1",
            speaker=speaker,
            text=text,
            at=_START + timedelta(seconds=i),
            ref=f"D1:{i + 1}",
        )


def _learned(memory: Memory, ref: str, fact: str, confidence: float) -> None:
    memory.assert_fact(
        subject="Priya",
        subject_type="person",
        relation="observed",
        fact=fact,
        episode="conv-1",
        ref=ref,
        confidence=confidence,
    )


def test_a_fact_and_the_turn_it_was_learned_from_take_one_place(tmp_path: Path) -> None:
    # Two places in the list: the fact and its turn would fill both and leave the other
    # turn out; as one piece of evidence they leave it room.
    with _memory(tmp_path / "mem", "candidates = 2\n") as memory:
        _say(
            memory,
            [
                ("Priya", "We adopted a beagle puppy and named him Rex."),
                ("Tom", "My sister adopted a beagle too, years ago, from the shelter in town."),
            ],
        )
        _learned(memory, "D1:1", "Priya adopted a beagle puppy named Rex", 0.9)

        found = memory.recall("Who adopted a beagle?", limit=2)

    assert [h.provenance.ref for h in found] == ["D1:1", "D1:2"]
    assert found[0].kind == "fact"  # shown in its turn's place, the turn once


def test_a_fact_counts_as_much_as_it_is_believed(tmp_path: Path) -> None:
    # The fact's words match better than the other turn's, but it is believed at 0.5:
    # its turn ranks behind a turn that says it outright.
    with _memory(tmp_path / "mem") as memory:
        _say(
            memory,
            [
                ("Priya", "We got a new family member last week!"),
                ("Tom", "My sister adopted a beagle too, years ago, from the shelter in town."),
            ],
        )
        _learned(memory, "D1:1", "Priya adopted a beagle", 0.5)

        found = memory.recall("Who adopted a beagle?", limit=2)

    assert [h.provenance.ref for h in found] == ["D1:2", "D1:1"]


def test_a_hidden_co_mention_takes_no_place_in_a_list(tmp_path: Path) -> None:
    # One place per list: the short co-mention facts match the question's words best but
    # are not shown; when they took the only place, the recall came back empty.
    with _memory(tmp_path / "mem", "candidates = 1\n") as memory:
        _say(
            memory,
            [
                ("Priya", "Tom and I walked all over Lisbon together, up and down its hills."),
                ("Tom", "The food was the best part of the whole long trip for me."),
            ],
        )
        memory.backfill()

        found = memory.recall("Who was together in Lisbon?", limit=1)
        asked = memory.recall("Who was together in Lisbon?", limit=1, include_co_mentions=True)

    assert [h.provenance.ref for h in found] == ["D1:1"]
    assert found[0].kind == "message"
    assert asked[0].fact is not None and asked[0].fact.relation == "mentioned_with"


def test_every_turn_comes_before_any_turn_comes_again(tmp_path: Path) -> None:
    # Two facts learned from one turn say two things and are both shown, but the second
    # is of evidence already shown: the other turn comes first.
    with _memory(tmp_path / "mem") as memory:
        _say(
            memory,
            [
                ("Priya", "We adopted a beagle puppy and named him Rex, he loves the beach."),
                ("Tom", "My sister adopted a beagle too, years ago, from the shelter in town."),
            ],
        )
        _learned(memory, "D1:1", "Priya adopted a beagle puppy named Rex", 0.9)
        _learned(memory, "D1:1", "Priya's beagle Rex loves the beach", 0.9)

        found = memory.recall("Who adopted a beagle?", limit=5)

    assert [h.provenance.ref for h in found] == ["D1:1", "D1:2", "D1:1"]
    assert found[0].text == "Priya adopted a beagle puppy named Rex"  # the best matched
    assert found[2].text == "Priya's beagle Rex loves the beach"
