"""The full rows of the few facts and messages a recall shows (or weighs): read by id,
converted from the values as stored."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final
from uuid import UUID

from sqlalchemy import Connection, bindparam, select

from apexmem.readmodels.facts import STATES_OF, fact_row, rows_statement
from apexmem.readmodels.prepared import Prepared, as_stored, stored_column, value_of
from apexmem.readmodels.rows import FactRow, MessageRow
from apexmem.readmodels.tables import episodes, messages

__all__ = [
    "ACTOR",
    "CONFIDENCE",
    "EDGE_TYPE",
    "OBSERVED_AT",
    "RELATION",
    "States",
    "fact_states",
    "hit_rows",
    "message_rows",
]

_CHUNK: Final = 400

_NAMES: Final = [c.name for c in rows_statement().selected_columns]
_FACT_ID: Final = _NAMES.index("fact_id")
_POSITION: Final = _NAMES.index("position")


CONFIDENCE: Final = _NAMES.index("confidence")
"""Where a stored state (`States.stored`) holds the fact's confidence as told."""
ACTOR: Final = _NAMES.index("actor")
OBSERVED_AT: Final = _NAMES.index("observed_at")
"""... when it was observed, as stored (integer microseconds)."""
EDGE_TYPE: Final = _NAMES.index("edge_type")
RELATION: Final = _NAMES.index("relation")


class States:
    """The stored rows of some fact versions' states (ids in hex): a recall weighs a few
    fields of each candidate's and shows a few (`row` converts those alone, once)."""

    def __init__(self) -> None:
        self._stored: dict[tuple[str, int], tuple[Any, ...]] = {}
        self._positions: dict[str, list[int]] = {}
        self._rows: dict[tuple[str, int], FactRow] = {}

    def read(self, connection: Connection, keys: Sequence[tuple[str, int]]) -> None:
        """Read these (fact_id hex, position) states (and every state of each version's
        positions) that are not read yet."""
        ids = list(dict.fromkeys(f for f, _ in keys if f not in self._positions))
        wanted = set(keys)
        stored, positions = self._stored, self._positions
        for f in ids:
            positions[f] = []
        for i in range(0, len(ids), _CHUNK):
            for row in STATES_OF.rows(connection, {"ids": ids[i : i + _CHUNK]}):
                key = (row[_FACT_ID], row[_POSITION])
                positions[key[0]].append(key[1])
                if key in wanted:
                    stored[key] = row
        for f in ids:
            positions[f].sort()

    def __contains__(self, key: tuple[str, int]) -> bool:
        return key in self._stored

    def stored(self, fact_id: str, position: int) -> tuple[Any, ...]:
        """The state's row as stored (`CONFIDENCE`, `ACTOR`, ... say where a field is)."""
        return self._stored[(fact_id, position)]

    def row(self, fact_id: str, position: int) -> FactRow:
        """The state's full row."""
        key = (fact_id, position)
        found = self._rows.get(key)
        if found is None:
            found = self._rows[key] = fact_row(self._stored[key])
        return found

    def positions(self, fact_id: str) -> list[int]:
        """The log positions of every state of the version, oldest first."""
        return self._positions[fact_id]


def fact_states(connection: Connection, keys: Sequence[tuple[str, int]]) -> States:
    """The stored rows of these (fact_id hex, position) states (`States`)."""
    states = States()
    states.read(connection, keys)
    return states


def hit_rows(
    connection: Connection, keys: Sequence[tuple[UUID, int]]
) -> tuple[dict[tuple[UUID, int], FactRow], dict[UUID, list[int]]]:
    """The full rows of these (fact_id, position) states, and the log positions of every state
    of each fact version (the events that gave it one), oldest first."""
    states = fact_states(connection, [(f.hex, p) for f, p in keys])
    rows = {(f, p): states.row(f.hex, p) for f, p in dict.fromkeys(keys) if (f.hex, p) in states}
    ids = dict.fromkeys(f for f, _ in keys)
    return rows, {f: list(states.positions(f.hex)) for f in ids}


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
_MESSAGE_VALUES: Final = [(c.name, value_of(c)) for c in _MESSAGE_COLUMNS]
_MESSAGE_ROWS: Final = Prepared(
    lambda: (
        select(*(stored_column(c) for c in _MESSAGE_COLUMNS))
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
            message = MessageRow(
                **{name: v if convert is None else convert(v) for (name, convert), v in pairs}
            )
            found[message.message_id] = message
    return found
