"""Episodes: one per conversation whatever names it first, and the entities it mentioned.

Cases from the reference (digest section 7, item 24) where they apply: the log is
append-only, so a conversation is never deleted and neither is its episode.
"""

from __future__ import annotations

from typing import Any

from apexmem import Memory
from apexmem.domain.identities import episode_id
from apexmem.events import EntitiesMentioned
from apexmem.events.envelope import NewEvent


def job(person: str, company: str, **extra: Any) -> dict[str, Any]:
    return {
        "subject": person,
        "subject_type": "person",
        "relation": "works_at",
        "object": company,
        "object_type": "organization",
        **extra,
    }


def conversations(memory: Memory, name: str, **view: Any) -> list[str]:
    target = memory.as_of(**view) if view else memory
    return [e.conversation for e in target.episodes_for(name)]


def test_a_conversation_is_one_episode_whether_a_fact_or_a_message_names_it_first(
    memory: Memory,
) -> None:
    memory.assert_fact(**job("Alice", "Acme"), episode="conv-1")
    message = memory.record_message(episode="conv-1", speaker="user", text="Alice is at Acme")

    [found] = memory.episodes_for("Alice")

    assert found.episode_id == episode_id("conv-1") == message.episode_id
    assert (found.conversation, found.messages) == ("conv-1", 1)
    assert memory.stats().graph.episodes == 1


def test_different_conversations_are_different_episodes(memory: Memory) -> None:
    memory.assert_fact(**job("Alice", "Acme"), episode="conv-1")
    memory.assert_fact(**job("Bob", "Acme"), episode="conv-2")

    ids = {e.episode_id for e in memory.episodes_for("Acme")}

    assert ids == {episode_id("conv-1"), episode_id("conv-2")}


def test_mentioning_an_entity_again_in_an_episode_links_it_once(memory: Memory) -> None:
    memory.assert_fact(**job("Alice", "Acme"), episode="conv-1")
    memory.assert_fact(**job("Alice", "Globex"), episode="conv-1")
    memory.observe_entity(name="Alice", entity_type="person", summary="eng", episode="conv-1")

    alice, acme, globex = (memory.episodes_for(n) for n in ("Alice", "Acme", "Globex"))

    assert [len(alice), len(acme), len(globex)] == [1, 1, 1]
    assert alice[0].conversation == acme[0].conversation == globex[0].conversation == "conv-1"
    assert alice[0].mentioned_at == acme[0].mentioned_at < globex[0].mentioned_at


def test_an_entity_in_two_episodes_lists_both_first_mentioned_first(memory: Memory) -> None:
    memory.assert_fact(**job("Alice", "Acme"), episode="conv-2")
    memory.assert_fact(**job("Alice", "Globex"), episode="conv-1")
    memory.assert_fact(**job("Alice", "Initech"))  # no episode: no link

    found = memory.episodes_for("Alice")

    assert [e.conversation for e in found] == ["conv-2", "conv-1"]
    assert found[0].mentioned_at < found[1].mentioned_at


def test_an_unknown_name_has_no_episodes(memory: Memory) -> None:
    memory.assert_fact(**job("Alice", "Acme"), episode="conv-1")

    assert memory.episodes_for("Nobody") == []


def test_an_as_of_view_lists_the_episodes_known_then(memory: Memory) -> None:
    memory.assert_fact(**job("Alice", "Acme"), episode="conv-1")
    between = memory.log.last_recorded_at()
    memory.assert_fact(**job("Alice", "Globex"), episode="conv-2")
    assert between is not None

    assert conversations(memory, "Alice", known_at=between) == ["conv-1"]
    assert conversations(memory, "Alice") == ["conv-1", "conv-2"]


def test_a_merged_entity_brings_its_episodes(memory: Memory) -> None:
    memory.assert_fact(**job("Alice", "Acme"), episode="conv-1")
    memory.assert_fact(**job("Alice Smith", "Globex"), episode="conv-2")

    memory.merge(source="Alice Smith", target="Alice", entity_type="person")

    assert conversations(memory, "Alice") == ["conv-1", "conv-2"]


def test_entities_a_message_mentions_are_linked_to_its_episode(memory: Memory) -> None:
    message = memory.record_message(episode="conv-9", speaker="user", text="I met Carol")
    carol = memory.observe_entity(name="Carol", entity_type="person")
    mentioned = EntitiesMentioned(message_id=message.message_id, entity_ids=[carol.entity_id] * 2)

    memory.log.append([NewEvent(stream_id=message.episode_id, version=3, data=mentioned)])

    [found] = memory.episodes_for("Carol")
    assert (found.conversation, found.messages) == ("conv-9", 1)


def test_a_rebuild_gives_the_same_episodes(memory: Memory) -> None:
    memory.assert_fact(**job("Alice", "Acme"), episode="conv-1")
    memory.record_message(episode="conv-2", speaker="user", text="hello")
    memory.assert_fact(**job("Alice", "Globex"), episode="conv-2")
    before = memory.episodes_for("Alice")

    memory.rebuild()

    assert memory.episodes_for("Alice") == before


def test_a_fact_observed_again_in_another_episode_mentions_its_entities_there(
    memory: Memory,
) -> None:
    memory.assert_fact(**job("Alice", "Acme"), episode="conv-1")
    memory.assert_fact(**job("Bob", "Globex"))

    again = memory.assert_fact(**job("Alice", "Acme"), episode="conv-2")
    memory.assert_fact(**job("Bob", "Globex"), episode="conv-3")

    assert again.outcome == "reinforced"
    assert conversations(memory, "Acme") == ["conv-1", "conv-2"]
    assert conversations(memory, "Globex") == ["conv-3"]
