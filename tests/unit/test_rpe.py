"""The RPE gate's rule: surprise from similarity to recent turns and novel names, a
threshold, and never more than max_skip_turns skips in a row."""

from __future__ import annotations

import numpy as np

from apexmem.domain.rpe import (
    RECENT_TURNS,
    Outcome,
    Turn,
    TurnState,
    after,
    candidate_names,
    judge,
)


def turn(*values: float, names: frozenset[str] = frozenset()) -> Turn:
    vector = np.array(values, dtype=np.float32)
    return Turn(vector / np.linalg.norm(vector), names)


def test_the_first_turn_of_a_conversation_is_always_extracted() -> None:
    verdict = judge(TurnState(), turn(1, 0), set(), threshold=0.3, max_skip_turns=5)

    assert verdict.extract and verdict.rpe == 1.0


def test_a_turn_like_the_last_one_with_no_new_names_is_skipped() -> None:
    state = after(TurnState(), turn(1, 0, names=frozenset({"rust"})), Outcome.EXTRACTED)

    verdict = judge(
        state, turn(1, 0, names=frozenset({"rust"})), set(), threshold=0.3, max_skip_turns=5
    )

    assert not verdict.extract and verdict.rpe == 0.0
    assert (verdict.similarity, verdict.novelty) == (1.0, 0.0)


def test_a_turn_on_another_topic_with_new_names_is_extracted() -> None:
    state = after(TurnState(), turn(1, 0), Outcome.EXTRACTED)

    verdict = judge(
        state, turn(0, 1, names=frozenset({"axum"})), set(), threshold=0.3, max_skip_turns=5
    )

    assert verdict.extract and verdict.rpe == 1.0


def test_names_the_memory_knows_are_not_novel() -> None:
    state = after(TurnState(), turn(1, 0), Outcome.EXTRACTED)

    verdict = judge(
        state,
        turn(1, 0, names=frozenset({"berlin", "lisbon"})),
        {"berlin"},
        threshold=0.3,
        max_skip_turns=5,
    )

    assert verdict.novelty == 0.5 and verdict.rpe == 0.25 and not verdict.extract


def test_after_max_skip_turns_skips_in_a_row_the_next_turn_is_extracted() -> None:
    same = turn(1, 0)
    state = after(TurnState(), same, Outcome.EXTRACTED)
    verdicts = []
    for _ in range(8):
        verdict = judge(state, same, set(), threshold=0.3, max_skip_turns=3)
        verdicts.append(verdict.extract)
        state = after(state, same, Outcome.EXTRACTED if verdict.extract else Outcome.SKIPPED)

    assert verdicts == [False, False, False, True, False, False, False, True]


def test_a_turn_left_unread_counts_as_skipped_and_a_flagged_one_as_neither() -> None:
    same = turn(1, 0)
    state = after(TurnState(), same, Outcome.EXTRACTED)

    state = after(
        after(after(state, same, Outcome.SKIPPED), same, Outcome.SKIPPED), same, Outcome.FLAGGED
    )

    assert state.skipped_in_row == 2
    assert after(state, same, Outcome.EXTRACTED).skipped_in_row == 0


def test_zero_max_skip_turns_never_skips() -> None:
    same = turn(1, 0)
    state = after(TurnState(), same, Outcome.EXTRACTED)

    verdict = judge(state, same, set(), threshold=0.3, max_skip_turns=0)

    assert verdict.extract and verdict.forced


def test_only_the_most_recent_turns_are_compared() -> None:
    state = after(TurnState(), turn(1, 0), Outcome.EXTRACTED)
    for _ in range(RECENT_TURNS):
        state = after(state, turn(0, 1), Outcome.EXTRACTED)

    verdict = judge(state, turn(1, 0), set(), threshold=0.3, max_skip_turns=5)

    assert len(state.recent) == RECENT_TURNS and verdict.similarity == 0.0 and verdict.extract


def test_candidate_names_are_capitalized_words_inside_a_sentence_and_known_words() -> None:
    text = "The team uses Tokio and Axum. Rust is fast, says the API doc; we like postgres"

    names = candidate_names(text, {"postgres"})

    assert names == {"tokio", "axum", "postgres"}
