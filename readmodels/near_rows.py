"""A recall's nearest vectors as the items they stand for and the rows its moment sees of
them, in one statement per round of candidates.

The vector index answers with vids; which item each still stands for is read from
`vector_items` (`vectors.items_of`), and whether the recall's moment sees that item was
then a second statement (`visible_facts`, `visible_messages`). Here both are one: each vid
still an item, with its item id (hex) and its key, or None when the moment does not see
it (a superseded version, a message said later). On PostgreSQL each statement is a round
trip (two a kind, 0.3 ms each at 200,000 facts). These are `ItemsOf` functions for
`VectorIndex.nearest_items`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from sqlalchemy import ClauseElement, Connection, and_, bindparam, select, true

from apexmem.projections.vectors import Kind
from apexmem.readmodels.facts import prepared_believed
from apexmem.readmodels.moment import NOW, Lens, Moment
from apexmem.readmodels.prepared import Prepared, as_stored
from apexmem.readmodels.recall import (
    FactKey,
    MessageKey,
    fact_key_columns,
    message_key_columns,
    said_by,
)
from apexmem.readmodels.tables import episodes, facts, messages
from apexmem.readmodels.vectors import vector_items

__all__ = ["Near", "facts_near", "messages_near"]

Near = tuple[str, Any]
"""An item id (hex) and its key, None when the moment does not see it."""


def _item_columns() -> list[Any]:
    """A vid's columns: the vid, the item id (hex), kind and model (compared in Python, as
    `items_of` does: through the kind's index the planner scanned it)."""
    return [
        vector_items.c.vid,
        as_stored(vector_items.c.item_id),
        vector_items.c.kind,
        vector_items.c.model,
    ]


def _facts_near(
    lateral: bool, valid: bool, known: bool, typed: bool, fading: bool
) -> ClauseElement:
    """Each of `vids` with its fact's `FactKey` when the lens sees it (else nulls); `lateral`
    (PostgreSQL) looks the fact up by its key (`visible_facts` says why)."""
    believed = prepared_believed(valid, known, typed, fading)
    among = vector_items.c.vid.in_(bindparam("vids", expanding=True))
    if lateral:
        one = select(*fact_key_columns()).where(
            facts.c.fact_id == vector_items.c.item_id, *believed
        )
        found = one.limit(1).lateral()  # one believed state at most
        joined = vector_items.outerjoin(found, true())
        return select(*_item_columns(), *found.c).select_from(joined).where(among)
    seen = and_(facts.c.fact_id == vector_items.c.item_id, *believed)
    joined = vector_items.outerjoin(facts, seen)
    return select(*_item_columns(), *fact_key_columns()).select_from(joined).where(among)


def _messages_near(valid: bool, known: bool) -> ClauseElement:
    """Each of `vids` with its message's `MessageKey` when said by `valid_at` and recorded
    by `known_at` (else nulls)."""
    seen = and_(messages.c.message_id == vector_items.c.item_id, *said_by(valid, known))
    # Two outer joins: SQLite materialized a parenthesized (messages JOIN episodes), every
    # message (250 ms at 1,000,000 facts).
    joined = vector_items.outerjoin(messages, seen)
    joined = joined.outerjoin(episodes, episodes.c.episode_id == messages.c.episode_id)
    among = vector_items.c.vid.in_(bindparam("vids", expanding=True))
    return select(*_item_columns(), *message_key_columns()).select_from(joined).where(among)


_FACTS_NEAR: Final = Prepared(_facts_near, keyed=True)
_MESSAGES_NEAR: Final = Prepared(_messages_near, keyed=True)


def _answered(
    rows: Sequence[Any], model: str, kind: Kind, key: type[FactKey] | type[MessageKey]
) -> dict[int, Near]:
    found: dict[int, Near] = {}
    for vid, item, of_kind, by, *columns in rows:
        if of_kind == kind and by == model:
            found[vid] = (item, None if columns[0] is None else key(*columns))
    return found


def facts_near(
    connection: Connection, model: str, kind: Kind, vids: Sequence[int], *, lens: Lens
) -> dict[int, Near]:
    """Each of `vids` still an item of `kind` (facts): its fact id (hex) and the `FactKey`
    of the version `lens` sees (None when it sees none)."""
    if not vids:
        return {}
    params = {**lens.params(), "vids": [int(v) for v in vids]}
    shape = (connection.dialect.name == "postgresql", *lens.shape())
    return _answered(_FACTS_NEAR.rows(connection, params, *shape), model, kind, FactKey)


def messages_near(
    connection: Connection, model: str, kind: Kind, vids: Sequence[int], *, moment: Moment = NOW
) -> dict[int, Near]:
    """Each of `vids` still an item of `kind` (messages): its message id (hex) and its
    `MessageKey` when said by the moment's `valid_at` and recorded by its `known_at` (None
    when not)."""
    if not vids:
        return {}
    params = {**moment.stored(), "vids": [int(v) for v in vids]}
    shape = (moment.valid_at is not None, moment.known_at is not None)
    return _answered(_MESSAGES_NEAR.rows(connection, params, *shape), model, kind, MessageKey)
