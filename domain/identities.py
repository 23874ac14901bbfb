"""Derived identities: the same thing always gets the same stream, so writers collide, not fork."""

from __future__ import annotations

from functools import lru_cache
from typing import Final
from uuid import UUID, uuid5

__all__ = [
    "NS",
    "POLICY_ID",
    "USAGE_ID",
    "alias_id",
    "community_id",
    "entity_id",
    "episode_id",
    "fact_id",
    "message_id",
    "object_key",
    "slot_id",
]

NS: Final = UUID("6f1c2a4e-8f0b-5d3e-9a71-2b5c4d6e8f90")
POLICY_ID: Final = uuid5(NS, "policy")
USAGE_ID: Final = uuid5(NS, "usage")


@lru_cache(maxsize=65_536)
def entity_id(entity_type: str, canonical: str) -> UUID:
    """The stream of the entity `(canonical, type)`."""
    return uuid5(NS, f"entity/{entity_type}/{canonical}")


@lru_cache(maxsize=65_536)
def alias_id(entity_type: str, normalized: str) -> UUID:
    """The stream that records which entity owns a name of one type."""
    return uuid5(NS, f"alias/{entity_type}/{normalized}")


def object_key(object_id: UUID | None, value: str | None, note: str | None = None) -> str:
    """What a fact points at, as one string: an entity, a literal value, or its own sentence.

    A note (a fact with neither object nor value) is keyed by its sentence, so two
    different notes of a multi-valued relation are two facts, not one reinforced.
    """
    if object_id is not None:
        return f"entity:{object_id}"
    if value is not None:
        return f"value:{value}"
    return "none" if note is None else f"note:{note}"


@lru_cache(maxsize=65_536)
def slot_id(subject: UUID, relation: str, edge_type: str, key: str | None) -> UUID:
    """The slot of a fact; `key` (the object) is part of it only for multi-valued relations."""
    base = f"slot/{subject}/{relation}/{edge_type}"
    return uuid5(NS, base if key is None else f"{base}/{key}")


def fact_id(slot: UUID, version: int) -> UUID:
    """The id of the fact version asserted at `version` of its slot."""
    return uuid5(NS, f"fact/{slot}/{version}")


def episode_id(conversation: str) -> UUID:
    """The stream of one conversation."""
    return uuid5(NS, f"episode/{conversation}")


def message_id(episode: UUID, version: int) -> UUID:
    """The id of the message recorded at `version` of its episode."""
    return uuid5(NS, f"message/{episode}/{version}")


def community_id(fingerprint: str) -> UUID:
    """The stream of the community with this membership fingerprint."""
    return uuid5(NS, f"community/{fingerprint}")
