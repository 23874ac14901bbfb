"""Derived identities: the same thing always gets the same stream, so writers collide, not fork."""

from __future__ import annotations

from functools import lru_cache
from hashlib import sha1
from typing import Final
from uuid import UUID, uuid5

from apexmem.events.located import located_id, uuid_of_int

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
    "uuid_of_int",
]

NS: Final = UUID("6f1c2a4e-8f0b-5d3e-9a71-2b5c4d6e8f90")
POLICY_ID: Final = uuid5(NS, "policy")
USAGE_ID: Final = uuid5(NS, "usage")

_NS_BYTES: Final = NS.bytes
# RFC 4122 version 5: the variant bits (10) and the version nibble (0101) over a SHA-1 prefix.
_KEEP: Final = ~((0xC000 << 48) | (0xF000 << 64)) & ((1 << 128) - 1)
_SET: Final = (0x8000 << 48) | (0x5000 << 64)
_MEMO_SIZE: Final = 65_536
_SLOT_IDS: Final[dict[tuple[int, str, str, str | None], int]] = {}
_ENTITY_KEYS: Final[dict[int, str]] = {}
_TEXTS: Final[dict[int, str]] = {}
"""Memos keyed by `UUID.int`: a UUID's own hash and str() both run in Python."""


def _text(value: int) -> str:
    """`str(UUID(int=value))`, remembered: subjects and objects are named again and again."""
    text = _TEXTS.get(value)
    if text is None:
        if len(_TEXTS) >= _MEMO_SIZE:
            _TEXTS.clear()  # a memo, not a store: starting over is cheap
        h = f"{value:032x}"
        text = _TEXTS[value] = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
    return text


def _uuid5(name: str) -> UUID:
    """`uuid5(NS, name)`, equal to the standard library's, without its Python-level checks.

    Ids are derived several times per fact on the write path; `UUID.__init__` validated
    each one again and cost more than the hash itself.
    """
    digest = sha1(_NS_BYTES + name.encode()).digest()
    return uuid_of_int((int.from_bytes(digest[:16]) & _KEEP) | _SET)


@lru_cache(maxsize=65_536)
def entity_id(entity_type: str, canonical: str) -> UUID:
    """The stream of the entity `(canonical, type)`."""
    return _uuid5(f"entity/{entity_type}/{canonical}")


@lru_cache(maxsize=65_536)
def alias_id(entity_type: str, normalized: str) -> UUID:
    """The stream that records which entity owns a name of one type."""
    return _uuid5(f"alias/{entity_type}/{normalized}")


def object_key(object_id: UUID | None, value: str | None, note: str | None = None) -> str:
    """What a fact points at, as one string: an entity, a literal value, or its own sentence.

    A note (a fact with neither object nor value) is keyed by its sentence, so two
    different notes of a multi-valued relation are two facts, not one reinforced.
    """
    if object_id is not None:
        key = _ENTITY_KEYS.get(object_id.int)
        if key is None:
            if len(_ENTITY_KEYS) >= _MEMO_SIZE:
                _ENTITY_KEYS.clear()  # a memo, not a store: starting over is cheap
            key = _ENTITY_KEYS[object_id.int] = f"entity:{_text(object_id.int)}"
        return key
    if value is not None:
        return f"value:{value}"
    return "none" if note is None else f"note:{note}"


def slot_id(subject: UUID, relation: str, edge_type: str, key: str | None) -> UUID:
    """The slot of a fact; `key` (the object) is part of it only for multi-valued relations.

    The memo keeps the id's int, not the UUID: tens of thousands of UUIDs kept alive are
    as many objects more for each full collection of the cyclic garbage collector (an int
    is not tracked), and most were the writer's only survivors of a batch.
    """
    cache_key = (subject.int, relation, edge_type, key)
    found = _SLOT_IDS.get(cache_key)
    if found is not None:
        return uuid_of_int(found)
    base = f"slot/{_text(subject.int)}/{relation}/{edge_type}"
    made = _uuid5(base if key is None else f"{base}/{key}")
    if len(_SLOT_IDS) >= _MEMO_SIZE:
        _SLOT_IDS.clear()  # a memo, not a store: starting over is cheap
    _SLOT_IDS[cache_key] = made.int
    return made


def fact_id(slot: UUID, version: int) -> UUID:
    """The id of the fact version asserted at `version` of its slot (a located id: it says
    where its `FactAsserted` is, see `apexmem.events.located`)."""
    return located_id(slot, version)


def episode_id(conversation: str) -> UUID:
    """The stream of one conversation."""
    return _uuid5(f"episode/{conversation}")


def message_id(episode: UUID, version: int) -> UUID:
    """The id of the message recorded at `version` of its episode (a located id)."""
    return located_id(episode, version)


def community_id(fingerprint: str) -> UUID:
    """The stream of the community with this membership fingerprint."""
    return _uuid5(f"community/{fingerprint}")
