"""Export, then ingest into an empty memory: for any run of assertions (late, ended,
reinforcing, on single- and multi-valued relations, between people), retractions, aliases
and merges (which move facts), the copy holds the same histories, with the same fact ids,
and believes the same facts."""

from __future__ import annotations

import tempfile
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from apexmem import Memory
from apexmem.cli.export import export_lines
from apexmem.cli.ingest import IngestReport, ingest
from apexmem.events.errors import ApexmemError

PEOPLE: Final = ("Alice", "Bob", "Carol")
PLACES: Final = ("Acme", "Globex", "Initech")
RELATIONS: Final = ("works_at", "likes")  # works_at is mapped single-valued below

years = st.integers(min_value=2010, max_value=2024)
asserts = st.tuples(
    st.just("assert"),
    st.sampled_from(PEOPLE),
    st.sampled_from(RELATIONS),
    st.sampled_from(PLACES),
    years,
    st.one_of(st.none(), st.integers(min_value=1, max_value=5)),
    st.sampled_from((0.5, 0.9)),
)
knows = st.tuples(st.just("knows"), st.sampled_from(PEOPLE), st.sampled_from(PEOPLE), years)
retracts = st.tuples(st.just("retract"), st.integers(min_value=0, max_value=20), st.booleans())
aliases = st.tuples(st.just("alias"), st.sampled_from(PEOPLE), st.sampled_from(("Al", "B.")))
merges = st.tuples(st.just("merge"), st.sampled_from(PEOPLE), st.sampled_from(PEOPLE))
runs = st.lists(st.one_of(asserts, asserts, asserts, knows, retracts, aliases, merges), max_size=12)


def _apply(memory: Memory, step: tuple[Any, ...], made: list[Any]) -> None:
    kind = step[0]
    if kind == "assert":
        _, person, relation, place, year, length, confidence = step
        until = None if length is None else datetime(year + length, 1, 1, tzinfo=UTC)
        done = memory.assert_fact(
            subject=person, subject_type="person", relation=relation, object=place,
            object_type="organization", valid_from=datetime(year, 1, 1, tzinfo=UTC),
            valid_until=until, confidence=confidence,
        )  # fmt: skip
        made.append(done.fact_id)
    elif kind == "knows":
        _, person, other, year = step
        done = memory.assert_fact(
            subject=person, subject_type="person", relation="knows", object=other,
            object_type="person", valid_from=datetime(year, 1, 1, tzinfo=UTC),
        )  # fmt: skip
        made.append(done.fact_id)
    elif kind == "retract" and made:
        _, index, ended = step
        at = datetime(2024, 6, 1, tzinfo=UTC) if ended else None
        memory.retract(made[index % len(made)], valid_until=at, reason="said so")
    elif kind == "alias":
        memory.add_alias(entity=step[1], entity_type="person", alias=step[2])
    elif kind == "merge" and step[1] != step[2]:
        memory.merge(source=step[1], target=step[2], entity_type="person")


def _answers(memory: Memory) -> dict[str, Any]:
    view = memory.as_of()
    found: dict[str, Any] = {}
    for name in (*PEOPLE, *PLACES):
        try:
            history = memory.history(entity=name)
        except ApexmemError:
            continue
        found[name] = [(e.tag, msgspec.to_builtins(e.data)) for e in history]
        found[f"{name} facts"] = [
            (r.fact_id, r.object, r.valid_from, r.valid_until, r.confidence)
            for r in view.facts_about(name, include_faded=True)
        ]
    return found


@settings(max_examples=8)  # each example opens two memories; 300 pass in 30 s
@given(runs)
def test_an_exported_log_ingested_into_an_empty_memory_answers_the_same(
    steps: list[tuple[Any, ...]],
) -> None:
    with tempfile.TemporaryDirectory() as root:
        with Memory.open(Path(root) / "a") as original:
            original.map_relation(canonical="works_at", cardinality="one")
            made: list[Any] = []
            for step in steps:
                with suppress(ApexmemError):  # refused (already retracted, ...): none written
                    _apply(original, step, made)
            lines = list(export_lines(original.events()))
            before = _answers(original)
        report = IngestReport()
        with Memory.open(Path(root) / "b") as copy:
            for _ in ingest(copy, lines, report):
                pass
            after = _answers(copy)

    assert report.failed == []
    assert after == before
