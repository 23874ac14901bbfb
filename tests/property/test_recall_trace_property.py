"""A recall's trace shows its stages and changes nothing it returns.

Over small memories of facts and messages, a recall asked for its trace returns the same
hits, in the same order and with the same scores, as the same recall without one; the
trace names each stage the recall ran, in order, and lists only candidates the stage had.
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from apexmem import Memory, parse_settings
from apexmem.domain.embedding import HashingEmbedder
from apexmem.service.trace import CANDIDATES_SHOWN

START = datetime(2024, 1, 1, tzinfo=UTC)
PEOPLE = ("Alice Zebra", "Bob Yak", "Carol Okapi")
PLACES = ("Zebra Works", "Yak Labs", "Okapi Inc")
SETTINGS, _ = parse_settings(
    "[memory.recall]\nrecord_usage = false\n"
    "[memory.graph.spreading_activation]\nrecall_timeout_ms = 600000\n"
)
"""No usage recorded (a recall would change the next one's scores); no time budget a loaded
machine could exhaust in one of the two recalls."""

step = st.one_of(
    st.tuples(
        st.just("assert"),
        st.sampled_from(PEOPLE),
        st.sampled_from(("works_at", "visits", "lives_in")),
        st.sampled_from(PLACES),
    ),
    st.tuples(st.just("say"), st.sampled_from(PEOPLE), st.sampled_from(PLACES)),
)
question = st.tuples(
    st.sampled_from(("Where does {} work?", "Who visits {}?", "What about {}?")),
    st.sampled_from(PEOPLE + PLACES),
    st.sampled_from(("bfs", "activation")),
)


def told(memory: Memory, steps: list[tuple[Any, ...]]) -> None:
    for n, (kind, person, *rest) in enumerate(steps):
        if kind == "assert":
            relation, place = rest
            memory.assert_fact(
                subject=person,
                subject_type="person",
                relation=relation,
                object=place,
                object_type="organization",
                fact=f"{person} {relation.replace('_', ' ')} {place}",
            )
        else:
            memory.record_message(
                episode="talk", speaker=person, text=f"I went to {rest[0]} today", ref=f"t{n}"
            )


def stages_of(memory: Memory, text: str, mode: str) -> tuple[list[Any], list[Any], Any]:
    plain = memory.recall(text, mode=mode)
    traced = memory.recall(text, mode=mode, trace=True)
    return list(plain), list(traced), traced.trace


@given(st.lists(step, min_size=1, max_size=10), question)
def test_a_traced_recall_returns_what_an_untraced_one_does(
    steps: list[tuple[Any, ...]], asked: tuple[str, str, str]
) -> None:
    pattern, name, mode = asked
    with tempfile.TemporaryDirectory() as directory:
        ticks = [START]

        def clock() -> datetime:
            ticks[0] += timedelta(seconds=1)
            return ticks[0]

        with Memory.open(
            Path(directory), settings=SETTINGS, clock=clock, embedder=HashingEmbedder()
        ) as memory:
            told(memory, steps)

            plain, traced, trace = stages_of(memory, pattern.format(name), mode)

    assert [(h.item_id, h.score, h.why) for h in traced] == [
        (h.item_id, h.score, h.why) for h in plain
    ]
    names = [s.stage for s in trace]
    assert names == [
        "question",
        "full text",
        "vector",
        "seeds",
        f"expansion ({mode})",
        "fact links",
        "context",
        "fusion",
    ]
    for stage in trace:
        assert stage.ms >= 0
        assert len(stage.candidates) == min(stage.total, CANDIDATES_SHOWN)
        scores = [c.score for c in stage.candidates]
        assert scores == sorted(scores, reverse=True)
    if traced:
        assert trace[-1].candidates[0].id == str(traced[0].item_id)


def test_a_recall_not_asked_for_its_trace_has_none(tmp_path: Path) -> None:
    with Memory.open(tmp_path, settings=SETTINGS, embedder=HashingEmbedder()) as memory:
        told(memory, [("assert", "Alice Zebra", "works_at", "Zebra Works")])

        found = memory.recall("Where does Alice Zebra work?")
        empty = memory.recall("Alice", limit=0, trace=True)

    assert found.trace is None
    assert len(found) == 1
    assert empty.trace == []
