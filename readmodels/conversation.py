"""Conversation structure a recall reads: who speaks, and the turns around a turn.

A question that names a participant ("What did Gina say about her store?") is about that
speaker's turns, not about every turn that addresses them ("Congrats on your store,
Gina!"); and a short reply ("It's doing great!") is about what the turn before it said.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import Final

from sqlalchemy import ClauseElement, Connection, bindparam, select

from apexmem.domain.names import normalize
from apexmem.readmodels.prepared import Prepared, as_stored
from apexmem.readmodels.tables import aliases, messages

__all__ = ["entities_named", "neighbours", "speaker_names"]

_CHUNK: Final = 400


def speaker_names(words: Sequence[str]) -> list[str]:
    """The names a question's `words` may call a speaker by: each word, and each two in a row
    (matched against the speakers lowercased: case-insensitive over ASCII, SQLite's `lower`,
    which the `messages_speaker` index holds; `readmodels.recall.speakers_and_rates` asks)."""
    return list(dict.fromkeys([*words, *(f"{a} {b}" for a, b in pairwise(words))]))


_OWNERS: Final = Prepared(
    lambda: (
        select(as_stored(aliases.c.entity_id))
        .where(aliases.c.alias.in_(bindparam("names", expanding=True)))
        .distinct()
    )
)


def entities_named(connection: Connection, names: Iterable[str]) -> set[str]:
    """The ids (hex, as stored) of the entities with any of `names` as a name or alias, exactly."""
    wanted = list({key for n in names if (key := normalize(n))})
    if not wanted:
        return set()
    return {row[0] for row in _OWNERS.rows(connection, {"names": wanted})}


def _around() -> ClauseElement:
    turn = messages.alias("turn")
    before = messages.alias("before")
    after = messages.alias("after")
    previous = (
        select(as_stored(before.c.message_id))
        .where(before.c.episode_id == turn.c.episode_id, before.c.position < turn.c.position)
        .order_by(before.c.position.desc())
        .limit(1)
        .scalar_subquery()
    )
    following = (
        select(as_stored(after.c.message_id))
        .where(after.c.episode_id == turn.c.episode_id, after.c.position > turn.c.position)
        .order_by(after.c.position)
        .limit(1)
        .scalar_subquery()
    )
    return select(as_stored(turn.c.message_id), previous, following).where(
        as_stored(turn.c.message_id).in_(bindparam("ids", expanding=True))
    )


_AROUND: Final = Prepared(_around, keyed=True)  # lookups by id: prepared on PostgreSQL


def neighbours(
    connection: Connection, ids: Iterable[str]
) -> dict[str, tuple[str | None, str | None]]:
    """Each message (hex id) -> the messages just before and just after it in its episode
    (None at either end), by log position, in the order of `ids`."""
    wanted = list(dict.fromkeys(ids))
    found: dict[str, tuple[str | None, str | None]] = {}
    for i in range(0, len(wanted), _CHUNK):
        for row in _AROUND.rows(connection, {"ids": wanted[i : i + _CHUNK]}):
            found[row[0]] = (row[1], row[2])
    return {item: found[item] for item in wanted if item in found}
