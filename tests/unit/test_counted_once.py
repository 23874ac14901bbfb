"""A reading of a turn counts once in the fusion (`domain.recall.fusion.counted_once`)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from apexmem.domain.recall.fusion import RRF_K, counted_once

# A list's places: (piece, trust, rank, first-hand), pieces 0-5, ranks from 1.
_places = st.lists(
    st.tuples(st.integers(0, 5), st.floats(0.1, 1.0), st.integers(1, 30), st.booleans()),
    max_size=12,
    unique_by=lambda place: place[0],  # a list holds each piece once
)
_lists = st.lists(_places, min_size=1, max_size=4)


@given(_lists)
def test_first_hand_places_all_count(rankings: list[list[tuple[int, float, int, bool]]]) -> None:
    told = {lead for r in rankings for lead, _, _, own in r if own}
    kept = counted_once(rankings, [1.0] * len(rankings))
    for ranking, out in zip(rankings, kept, strict=True):
        assert [(p, t, r) for p, t, r, own in ranking if own] == [
            (p, t, r) for p, t, r in out if p in told
        ]


@given(_lists, st.lists(st.floats(0.1, 2.0), min_size=4, max_size=4))
def test_a_piece_held_only_by_readings_counts_in_its_best_list_alone(
    rankings: list[list[tuple[int, float, int, bool]]], weights: list[float]
) -> None:
    weights = weights[: len(rankings)]
    told = {lead for r in rankings for lead, _, _, own in r if own}
    kept = counted_once(rankings, weights)
    for piece in {lead for r in rankings for lead, _, _, _ in r} - told:
        shares = [
            weights[i] * t / (RRF_K + r)
            for i, out in enumerate(kept)
            for p, t, r in out
            if p == piece
        ]
        best = max(
            weights[i] * t / (RRF_K + r)
            for i, ranking in enumerate(rankings)
            for p, t, r, _ in ranking
            if p == piece
        )
        assert shares == [best]


def test_a_turn_found_by_its_words_gains_nothing_from_its_reading_elsewhere() -> None:
    words = [("turn", 1.0, 10, True)]
    reading = [("turn", 0.8, 11, False), ("other", 1.0, 1, True)]
    assert counted_once([words, reading], [1.0, 1.0]) == [
        [("turn", 1.0, 10)],
        [("other", 1.0, 1)],
    ]
