"""Episodes on random fact sequences: an entity's episodes are exactly the conversations of
the facts that named it, each once, and a rebuild lists them the same way."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

from hypothesis import given, settings
from hypothesis import strategies as st

from apexmem import Memory
from apexmem.domain.embedding import HashingEmbedder
from apexmem.domain.identities import episode_id

PEOPLE: Final = ("Alice", "Bob Stone", "Carol")
PLACES: Final = ("Acme", "Globex", "Paris")

facts = st.lists(
    st.fixed_dictionaries(
        {
            "subject": st.sampled_from(PEOPLE),
            "subject_type": st.just("person"),
            "relation": st.sampled_from(["works_at", "visited"]),
            "object": st.sampled_from(PLACES),
            "object_type": st.just("organization"),
            "episode": st.sampled_from([None, "c1", "c2", "c3"]),
        }
    ),
    min_size=1,
    max_size=8,
)


def clock() -> Any:
    now = [datetime(2024, 1, 1, tzinfo=UTC)]

    def tick() -> datetime:
        now[0] += timedelta(milliseconds=1)
        return now[0]

    return tick


@settings(max_examples=15)
@given(facts, st.booleans())
def test_an_entity_lists_each_conversation_that_named_it_once(
    batch: list[dict[str, Any]], one_by_one: bool
) -> None:
    with (
        tempfile.TemporaryDirectory(prefix="apexmem-episodes-") as root,
        Memory.open(Path(root), clock=clock(), embedder=HashingEmbedder()) as memory,
    ):
        if one_by_one:
            for fields in batch:
                memory.assert_fact(**fields)
        else:
            memory.assert_facts(batch)
        listed = {name: memory.episodes_for(name) for name in (*PEOPLE, *PLACES)}

        memory.rebuild()

        for name, found in listed.items():
            expected = {
                f["episode"]
                for f in batch
                if f["episode"] is not None and name in (f["subject"], f["object"])
            }
            conversations = [e.conversation for e in found]
            assert len(conversations) == len(set(conversations))
            assert set(conversations) == expected
            assert all(e.episode_id == episode_id(e.conversation) for e in found)
            times = [e.mentioned_at for e in found]
            assert times == sorted(times)
            assert memory.episodes_for(name) == found
