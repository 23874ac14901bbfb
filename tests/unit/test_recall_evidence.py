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
from apexmem.domain.recall.fusion import (
    placed,
    ranked,
    reciprocal_rank_fusion,
    weighted_rank_fusion,
)

_START = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


@given(
    st.lists(st.lists(st.sampled_from("abcdefgh"), max_size=6, unique=True), max_size=4),
)
def test_with_every_item_fully_trusted_it_is_reciprocal_rank_fusion(
    rankings: list[list[str]],
) -> None:
    trusted = [[(item, 1.0, rank) for rank, item in enumerate(r, 1)] for r in rankings]

    assert weighted_rank_fusion(trusted) == reciprocal_rank_fusion(rankings)


def test_an_item_ranked_by_weaker_evidence_counts_that_much_less() -> None:
    fused = weighted_rank_fusion([[("fact", 0.5, 1), ("turn", 1.0, 2)]])

    assert [item for item, _ in fused] == ["turn", "fact"]
    assert dict(fused)["fact"] == 0.5 / 61


# A list as found: (item, its piece of evidence, first-hand). Turns t0..t5 are first-hand
# (each its own piece); facts f0..f5 are read out of turns t0..t5 (the same piece).
_FOUND = st.lists(
    st.sampled_from(range(6)).flatmap(
        lambda n: st.sampled_from([(f"t{n}", n, True), (f"f{n}", n, False)])
    ),
    max_size=12,
    unique_by=lambda item: item[0],
)


@given(_FOUND, st.integers(min_value=1, max_value=6))
def test_a_derived_item_never_moves_a_first_hand_one(
    found: list[tuple[str, int, bool]], pool: int
) -> None:
    # What a list keeps of the turns, and how it ranks them, is what it keeps and ranks
    # with no fact read out of a turn in it: extraction adds evidence, it takes none away.
    # A piece found only by such a fact is no better evidence than its turn's own words,
    # which did not make the list: it ranks after the turns.
    kept = placed(found, pool)
    kept_alone = placed([f for f in found if f[2]], pool)
    # Each piece is ranked where its turn is when the list has it (as recall does).
    at = {u: i for i, (item, u, _) in reversed(list(enumerate(found))) if item in kept}
    at |= {u: i for i, (item, u, own) in reversed(list(enumerate(found))) if own and item in kept}
    pieces = sorted({unit for item, unit, _ in found if item in kept}, key=at.__getitem__)
    told = {unit for item, unit, own in found if own and item in kept}
    ranks = dict(zip(pieces, ranked([p in told for p in pieces]), strict=True))

    assert set(kept_alone) <= set(kept)
    assert [ranks[int(i[1:])] for i in kept_alone] == list(range(1, len(kept_alone) + 1))
    assert len(set(pieces) - told) <= pool  # derived pieces: only among the first `pool`
    # ... ranked after the turns in the list (their turns' own words rank below those)
    assert all(ranks[p] > len(told) for p in set(pieces) - told)


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


def _learned(
    memory: Memory, ref: str, fact: str, confidence: float, actor: str | None = None
) -> None:
    """A note about a turn: told (no actor), or read out of it by an extractor (`actor`)."""
    memory.assert_fact(
        subject="Priya",
        subject_type="person",
        relation="observed",
        fact=fact,
        episode="conv-1",
        ref=ref,
        confidence=confidence,
        actor=actor,
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
        asked = memory.recall("Who was together in Lisbon?", limit=2, include_co_mentions=True)

    assert [h.provenance.ref for h in found] == ["D1:1"]
    assert found[0].kind == "message"
    # Asked for, a co-mention is shown, after the turn it was read out of (a reading of a
    # turn takes no turn's place).
    assert [h.kind for h in asked] == ["message", "fact"]
    assert asked[1].fact is not None and asked[1].fact.relation == "mentioned_with"


def test_a_fact_read_out_of_one_turn_never_pushes_another_out_of_a_list(
    tmp_path: Path,
) -> None:
    # Two places in the list. The fact read out of the third turn matches the question
    # best, but it is that turn's reading, not a turn: both turns that match keep their
    # places and ranks, and the third turn comes after them.
    with _memory(tmp_path / "mem", "candidates = 2\n") as memory:
        _say(
            memory,
            [
                ("Priya", "We adopted a beagle puppy and named him Rex."),
                ("Tom", "My sister adopted a beagle too, years ago, from the shelter in town."),
                ("Priya", "Guess who has a new family member at home!"),
            ],
        )
        _learned(memory, "D1:3", "Priya adopted a beagle", 0.8, actor="heuristic.v2")

        two = memory.recall("Who adopted a beagle?", limit=2)
        three = memory.recall("Who adopted a beagle?", limit=3)

    assert [h.provenance.ref for h in two] == ["D1:1", "D1:2"]
    assert [h.provenance.ref for h in three] == ["D1:1", "D1:2", "D1:3"]
    assert three[2].kind == "fact"  # shown in its turn's place


def test_a_note_told_about_a_turn_competes_as_a_turn_does(tmp_path: Path) -> None:
    # Told by the application (no extractor read it), a note is first-hand: its place is
    # taken as a turn's would be.
    with _memory(tmp_path / "mem", "candidates = 2\n") as memory:
        _say(
            memory,
            [
                ("Priya", "We adopted a beagle puppy and named him Rex."),
                ("Tom", "My sister adopted a beagle too, years ago, from the shelter in town."),
                ("Priya", "Guess who has a new family member at home!"),
            ],
        )
        _learned(memory, "D1:3", "Priya adopted a beagle", 1.0)

        found = memory.recall("Who adopted a beagle?", limit=2)

    assert sorted(str(h.provenance.ref) for h in found) == ["D1:1", "D1:3"]  # Tom's turn is out


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


def test_the_graph_walks_from_a_named_participant_only_for_a_relation_asked(
    tmp_path: Path,
) -> None:
    # Who is asked about is boosted, not searched for: the walk from Priya would list
    # whatever is known of her (where she works, for a question about a picnic). Asked
    # where she works, it walks from her.
    parsed, _ = parse_settings(
        "[memory.recall]\nrecord_usage = false\n[memory.vectors]\nenabled = false\n"
    )
    with Memory.open(tmp_path / "mem", settings=parsed, embedder=HashingEmbedder()) as memory:
        _say(memory, [("Priya", "I brought a basket of plums to the picnic.")])
        memory.assert_fact(
            subject="Priya",
            subject_type="person",
            relation="works_at",
            object="Acme",
            object_type="organization",
        )

        picnic = memory.recall("What did Priya bring to the picnic?", limit=5)
        work = memory.recall("Where does Priya work?", limit=5)

    assert [h.kind for h in picnic] == ["message"]
    assert work[0].text == "Priya works_at Acme"
    assert any(w.startswith("graph") for w in work[0].why)
