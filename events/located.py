"""Located ids: the id of a fact or a message says which stream and version recorded it.

A fact's id is the id of the `FactAsserted` at version v of its slot, a message's the id of
the `MessageRecorded` at version v of its episode. Both are derived from (stream, version),
so the id carries them: its first 12 bytes are the stream id's, its last 4 the version
(big-endian). The log finds the event through its (stream, version) index and needs no
table of keys, which cost a random-key insert per fact (about a sixth of a batched
append's time). Ids stay deterministic, so a retried command produces the same ids.

Twelve bytes of a version-5 stream id hold 90 random bits: two slots share a prefix with
odds of about 1 in 2.5 billion among a billion slots. The log checks the id of what it
finds, so such a pair would make one id name two facts, never a wrong one found.
Logs written before these ids keep their hash-derived ids and the key table that finds
them (`events.log`).
"""

from __future__ import annotations

from typing import Final
from uuid import UUID, SafeUUID

from apexmem.events.errors import ValidationError

__all__ = ["MAX_VERSION", "located_id", "locates", "location", "uuid_of_int"]

MAX_VERSION: Final = (1 << 32) - 1
"""The last version of a stream whose events can have a located id."""
_PREFIX: Final = ((1 << 128) - 1) ^ MAX_VERSION
_new = object.__new__
# UUID's slot descriptors, called directly: object.__setattr__ looks each one up first.
_set_int = vars(UUID)["int"].__set__
_set_safe = vars(UUID)["is_safe"].__set__
_UNKNOWN: Final = SafeUUID.unknown  # an enum member's lookup runs Python code each time


def located_id(stream: UUID, version: int) -> UUID:
    """The id of the event at `version` of `stream`: the stream's first 12 bytes, then the
    version's 4."""
    if not 1 <= version <= MAX_VERSION:
        raise ValidationError("version", version, f"is outside 1..{MAX_VERSION} (a located id)")
    return uuid_of_int((stream.int & _PREFIX) | version)


def locates(located: UUID, stream: UUID, version: int) -> bool:
    """Whether `located` is the located id of the event at `version` of `stream`."""
    return 0 < version <= MAX_VERSION and located.int == (stream.int & _PREFIX) | version


def location(located: UUID) -> tuple[UUID, UUID, int]:
    """The lowest and highest stream id `located` can name, and its version."""
    prefix = located.int & _PREFIX
    return UUID(int=prefix), UUID(int=prefix | MAX_VERSION), located.int & MAX_VERSION


def uuid_of_int(value: int) -> UUID:
    """`UUID(int=value)` without `UUID.__init__`'s checks (Python code, slower than a hash):
    for values known to be 128-bit ids, derived by apexmem or written by it."""
    made = _new(UUID)
    _set_int(made, value)
    _set_safe(made, _UNKNOWN)
    return made
