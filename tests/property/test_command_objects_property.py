"""Whatever a caller puts in a command's constructor, the log only ever holds what it can read.

`Memory.execute` takes command structs, whose constructors check nothing; a command with a
bad field must be refused with a ValidationError and write nothing, and one that is taken
must leave a log whose every event decodes and a memory that still answers.
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from apexmem import AssertFact, HashingEmbedder, Memory, ValidationError

NAMES = ("Alice", "Bobby", "Carol")
JUNK = st.one_of(
    st.none(),
    st.integers(-3, 3),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=3),
    st.sampled_from(["é" * 300, "x" * 5000, "😀" * 1100]),
    st.just(datetime(2024, 1, 1)),  # naive
    st.just(datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1)))),  # before year 1 in UTC
)
VALID: dict[str, Any] = {
    "subject": st.sampled_from(NAMES),
    "relation": st.sampled_from(["likes", "works_at"]),
    "object": st.sampled_from(NAMES),
    "confidence": st.floats(0, 1),
    "edge_type": st.sampled_from(["semantic", "causal"]),
    "valid_from": st.just(datetime(2023, 1, 1, tzinfo=UTC)),
    "actor": st.sampled_from(["agent-7", None]),
    "episode": st.sampled_from(["conv-1", None]),
    "fact": st.sampled_from(["Alice likes Carol", None]),
}


@st.composite
def commands(draw: st.DrawFn) -> AssertFact:
    """An AssertFact whose fields are each valid or, sometimes, anything at all."""
    fields = {
        name: draw(st.one_of(valid, JUNK) if draw(st.booleans()) else valid)
        for name, valid in VALID.items()
    }
    return AssertFact(**fields)


@given(st.lists(commands(), min_size=1, max_size=3))
def test_a_command_is_refused_by_field_or_leaves_a_readable_log(batch: list[AssertFact]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "mem"
        with Memory.open(path, embedder=HashingEmbedder()) as memory:
            memory.assert_fact(subject="Alice", relation="knows", object="Bobby")
            before = memory.log.last_position()
            refused: ValidationError | None = None
            try:
                results = memory.execute(batch)
            except ValidationError as e:
                refused = e
            if refused is not None:
                assert refused.field.split(".")[-1] in VALID  # "confidence", "[1].subject"
                assert memory.log.last_position() == before
            else:
                assert len(results) == len(batch)
                for command in batch:
                    assert 0 <= command.confidence <= 1
        with Memory.open(path, embedder=HashingEmbedder()) as memory:
            assert all(e.data is not None for e in memory.log.read())
            assert memory.facts_about("Alice")
            assert memory.verify().ok
