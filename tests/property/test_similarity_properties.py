"""Similarity resolution, belief revision and note linking on random batches of writes (real
WordLlama): their verdicts are events, so a rebuild gives the very same read model; no two
live entities of one type are as close as the merge threshold; every name keeps resolving;
each close pair is linked once, the smaller id as subject."""

from __future__ import annotations

import tempfile
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from itertools import count
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from apexmem import AssertFact, Command, Memory, ObserveEntity, parse_settings
from apexmem.domain.embedding import Embedder
from apexmem.embedders import WordLlamaEmbedder
from apexmem.events.entity import EntityMerged
from apexmem.events.errors import ValidationError
from apexmem.events.fact import FactAsserted
from apexmem.events.similarity import EntityMatched
from apexmem.readmodels import dump
from apexmem.service.linking import SIMILAR_TO

NAMES = [
    "John Smith",
    "Mr John Smith",
    "Jon Smith",
    "Jane Smith",
    "Acme Corp",
    "Acme Corporation",
    "PostgreSQL",
    "Postgres",
]
TYPES = ["person", "organization"]
RELATIONS = ["likes", "dislikes", "works_with"]
TOML = """
[memory.graph]
use_embedding_resolution = true
[memory.graph.belief_revision]
enabled = true
[memory.graph.note_linking]
enabled = true
"""

_EMBEDDER: list[Embedder] = []


def _wordllama() -> Embedder:
    if not _EMBEDDER:
        _EMBEDDER.append(WordLlamaEmbedder())
    return _EMBEDDER[0]


observe = st.builds(
    lambda n, t: ObserveEntity(name=n, entity_type=t),
    st.sampled_from(NAMES),
    st.sampled_from(TYPES),
)
relate = st.builds(
    lambda s, r, o, year: AssertFact(
        subject=s,
        subject_type="person",
        relation=r,
        object=o,
        object_type="person",
        valid_from=datetime(2000 + year, 1, 1, tzinfo=UTC),
    ),
    st.sampled_from(NAMES[:4]),
    st.sampled_from(RELATIONS),
    st.sampled_from(NAMES[:4]),
    st.integers(0, 5),
)
batches = st.lists(
    st.lists(st.one_of(observe, relate), min_size=1, max_size=4), min_size=1, max_size=6
)


@settings(max_examples=25)
@given(batches)
def test_similarity_verdicts_survive_a_rebuild_and_leave_no_live_near_duplicates(
    written: list[list[Command]],
) -> None:
    options, _ = parse_settings(TOML)
    ticks = count()
    start = datetime(2024, 1, 1, tzinfo=UTC)
    with (
        tempfile.TemporaryDirectory(prefix="apexmem-similar-") as root,
        Memory.open(
            Path(root) / "mem",
            settings=options,
            clock=lambda: start + timedelta(seconds=next(ticks)),
            embedder=_wordllama(),
        ) as memory,
    ):
        kept: list[Command] = []
        for batch in written:
            with suppress(ValidationError):  # a fact joining an entity to itself
                memory.execute(batch)
                kept += batch
        with memory.store.read() as connection:
            incremental = dump(connection)

        memory.rebuild()

        with memory.store.read() as connection:
            rebuilt = dump(connection)
        # `tracking` is bookkeeping: an empty log leaves no row after a rebuild.
        assert {**rebuilt, "tracking": []} == {**incremental, "tracking": []}
        _assert_verdicts_are_followed_by_merges(memory)
        _assert_links_join_close_entities_once(memory)
        _assert_no_live_near_duplicates(memory)
        for command in kept:
            if isinstance(command, ObserveEntity):
                found = memory.entities(command.name, entity_type=command.entity_type)
                assert len(found) == 1


def _assert_verdicts_are_followed_by_merges(memory: Memory) -> None:
    events = [e.data for e in memory.events(tags=["entity-matched.v1", "entity-merged.v1"])]
    for i, event in enumerate(events):
        if isinstance(event, EntityMatched) and event.verdict == "same":
            merged = events[i + 1]
            assert isinstance(merged, EntityMerged)
            assert (merged.entity_id, merged.into) == (event.entity_id, event.candidate)


def _assert_links_join_close_entities_once(memory: Memory) -> None:
    links = [
        e.data
        for e in memory.events(tags=["fact-asserted.v1"])
        if isinstance(e.data, FactAsserted) and e.data.relation == SIMILAR_TO
    ]
    for link in links:
        assert link.object_id is not None and link.subject_id.int < link.object_id.int
        assert link.confidence >= 0.85
    assert len({(f.subject_id, f.object_id) for f in links}) == len(links)


def _assert_no_live_near_duplicates(memory: Memory) -> None:
    for entity_type in TYPES:
        live = memory.entities(entity_type=entity_type, limit=100)
        if len(live) < 2:
            continue
        vectors = _wordllama().embed([row.name for row in live])
        scores = vectors @ vectors.T
        for i in range(len(live)):
            for j in range(i + 1, len(live)):
                assert scores[i, j] < 0.85, (live[i].name, live[j].name)
