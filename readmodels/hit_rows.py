"""The full rows of the few facts and messages a recall shows (or weighs): read by id,
converted from the values as stored."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final
from uuid import UUID

from sqlalchemy import Connection, Uuid, bindparam, select

from apexmem.events.timeutil import from_micros
from apexmem.readmodels.facts import rows_statement as facts_statement
from apexmem.readmodels.prepared import Prepared, as_stored, id_of, stored_time
from apexmem.readmodels.rows import FactRow, MessageRow
from apexmem.readmodels.tables import UtcMicros, episodes, facts, messages

__all__ = ["hit_rows", "message_rows"]

_CHUNK: Final = 400


def _as_stored(column: Any) -> Any:
    if isinstance(column.type, UtcMicros):
        return stored_time(column)
    return as_stored(column) if isinstance(column.type, Uuid) else column


def _value(column: Any) -> Callable[[Any], Any]:
    """How a stored value of `column` becomes the value a row holds."""
    if isinstance(column.type, UtcMicros):
        return lambda v: None if v is None else from_micros(v)
    if isinstance(column.type, Uuid):
        return lambda v: None if v is None else id_of(v)
    return lambda v: v


_ROW_COLUMNS: Final = list(facts_statement().selected_columns)
_VALUES: Final = [
    (i, c.name, _value(c))
    for i, c in enumerate(_ROW_COLUMNS)
    if c.name in FactRow.__struct_fields__
]
_FACT_ID: Final = 0
_POSITION: Final = [c.name for c in _ROW_COLUMNS].index("position")
_STATES: Final = Prepared(
    lambda: (
        facts_statement()
        .with_only_columns(*(_as_stored(c) for c in _ROW_COLUMNS), maintain_column_froms=True)
        .where(as_stored(facts.c.fact_id).in_(bindparam("ids", expanding=True)))
    ),
    keyed=True,
)


def hit_rows(
    connection: Connection, keys: Sequence[tuple[UUID, int]]
) -> tuple[dict[tuple[UUID, int], FactRow], dict[UUID, list[int]]]:
    """The full rows of these (fact_id, position) states, and the log positions of every state
    of each fact version (the events that gave it one), oldest first."""
    ids = list(dict.fromkeys(fact_id.hex for fact_id, _ in keys))
    wanted = {(f.hex, p) for f, p in keys}
    rows: dict[tuple[UUID, int], FactRow] = {}
    positions: dict[str, list[int]] = {f: [] for f in ids}
    for i in range(0, len(ids), _CHUNK):
        for row in _STATES.rows(connection, {"ids": ids[i : i + _CHUNK]}):
            fact_id, position = row[_FACT_ID], row[_POSITION]
            positions[fact_id].append(position)
            if (fact_id, position) in wanted:
                values = {name: convert(row[at]) for at, name, convert in _VALUES}
                rows[(id_of(fact_id), position)] = FactRow(**values)
    return rows, {id_of(f): sorted(found) for f, found in positions.items()}


_MESSAGE_COLUMNS: Final = [
    messages.c.message_id,
    messages.c.episode_id,
    episodes.c.conversation,
    messages.c.speaker,
    messages.c.text,
    messages.c.at,
    messages.c.ref,
    messages.c.recorded_at,
    messages.c.position,
]
_MESSAGE_VALUES: Final = [(c.name, _value(c)) for c in _MESSAGE_COLUMNS]
_MESSAGE_ROWS: Final = Prepared(
    lambda: (
        select(*(_as_stored(c) for c in _MESSAGE_COLUMNS))
        .select_from(messages.join(episodes, episodes.c.episode_id == messages.c.episode_id))
        .where(as_stored(messages.c.message_id).in_(bindparam("ids", expanding=True)))
    ),
    keyed=True,
)


def message_rows(connection: Connection, ids: Sequence[UUID]) -> dict[UUID, MessageRow]:
    """The full rows of these messages."""
    found: dict[UUID, MessageRow] = {}
    listed = [i.hex for i in ids]
    for i in range(0, len(listed), _CHUNK):
        for row in _MESSAGE_ROWS.rows(connection, {"ids": listed[i : i + _CHUNK]}):
            pairs = zip(_MESSAGE_VALUES, row, strict=True)
            message = MessageRow(**{name: convert(v) for (name, convert), v in pairs})
            found[message.message_id] = message
    return found
