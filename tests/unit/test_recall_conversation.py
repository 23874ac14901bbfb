"""Conversation-aware recall: named participants' turns first, a short reply found by its context.

The scoring rules are pure (domain.recall.conversation); the recalls run on real SQLite,
FTS5 and FAISS with the hashing embedder.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from apexmem import Memory, parse_settings
from apexmem.domain.embedding import HashingEmbedder
from apexmem.domain.recall.conversation import boosted, in_context, without_names


def test_a_turn_scores_a_share_of_its_neighbours_and_stays_one_item() -> None:
    scores = {"question": 1.0, "aside": 0.2}
    around = {"question": ("opening", "reply"), "aside": ("reply", None)}

    found = in_context(scores, around, after=0.5, before=0.25)

    assert found == {
        "question": 1.0,
        "aside": 0.2,
        "reply": pytest.approx(0.5 + 0.25 * 0.2),
        "opening": pytest.approx(0.25),
    }


def test_no_share_leaves_the_scores_as_they_were() -> None:
    scores = {"a": 1.0}

    assert in_context(scores, {"a": ("b", "c")}, after=0.0, before=0.0) == scores


def test_favoured_items_score_one_plus_the_boost_times_more() -> None:
    assert boosted({"a": 1.0, "b": 2.0}, {"a"}, 2.0) == {"a": 3.0, "b": 2.0}
    assert boosted({"a": 1.0}, set(), 2.0) == {"a": 1.0}


def test_names_are_taken_out_as_whole_words_in_any_case_with_their_possessive() -> None:
    text = "What did Gina's store sell, and did gina like Ginastics?"

    assert without_names(text, {"gina"}) == "What did store sell, and did like Ginastics?"
    assert without_names("Where does Jon Snow live?", {"jon snow"}) == "Where does live?"
    assert without_names("Nothing named", set()) == "Nothing named"


def _chat(directory: Path, settings: str = "") -> Memory:
    parsed, _ = parse_settings("[memory.recall]\nrecord_usage = false\n" + settings)
    return Memory.open(directory, settings=parsed, embedder=HashingEmbedder())


def _say(memory: Memory, turns: list[tuple[str, str]]) -> None:
    start = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    for i, (speaker, text) in enumerate(turns):
        memory.record_message(
            episode="conv-1",
            speaker=speaker,
            text=text,
            at=start + timedelta(seconds=i),
            ref=f"D1:{i + 1}",
        )


TURNS = [
    ("Gina", "I opened my own clothing store last month."),
    ("Evan", "Congrats on your clothing store, Gina! How is the store going?"),
    ("Gina", "It's doing great, sales doubled."),
    ("Evan", "Gina, Gina, I painted a landscape of the store street yesterday."),
    ("Evan", "Painting relaxes me after work."),
]


def test_a_question_naming_a_participant_finds_their_turns_not_those_addressing_them(
    tmp_path: Path,
) -> None:
    with _chat(tmp_path / "mem") as memory:
        _say(memory, TURNS)

        found = memory.recall("How is Gina's clothing store going?", limit=2)

    assert found[0].provenance.ref == "D1:1"
    assert "about a participant the question names" in found[0].why


def test_without_the_boost_the_turns_that_address_the_name_come_first(
    tmp_path: Path,
) -> None:
    off = "speaker_boost = 0\nturn_before_share = 0\nturn_after_share = 0\n"
    with _chat(tmp_path / "mem", off) as memory:
        _say(memory, TURNS)

        found = memory.recall("How is Gina's clothing store going?", limit=2)

    assert found[0].provenance.ref == "D1:2"


def test_a_short_reply_is_recalled_through_the_turn_it_answers(tmp_path: Path) -> None:
    # Vectors off: the reply holds none of the question's words, only its context can find it.
    with _chat(tmp_path / "mem", "[memory.vectors]\nenabled = false\n") as memory:
        _say(memory, TURNS)

        found = memory.recall("How is the clothing store going?", limit=5)

    refs = [h.provenance.ref for h in found]
    assert "D1:3" in refs
    assert len(refs) == len(set(refs))
    reply = found[refs.index("D1:3")]
    assert any(w.startswith("context: next to a hit") for w in reply.why)
