"""Short ids: what the tables print for a fact (`f91955cd:3`) is accepted wherever an id is.

A fact's id is located (`events.located`): its first 12 bytes are its slot's, its last 4
the version of its assertion in the slot. Every version of one fact therefore starts the
same way, and a plain 8-character prefix names the slot, not the version. So a fact is
printed as the prefix and the version (`f91955cd:3`), and read back as any hex prefix of
an id (dashes optional), with `:VERSION` to pick one version. An id made before located
ids (a hash) is printed and read as a plain prefix.

An unknown id exits 1 (found nothing, as a name that answers to nothing does); an
ambiguous one is bad input (exit 2) and the error lists what it could mean.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final
from uuid import UUID

from sqlalchemy import Column, select

from apexmem.events.errors import NotFoundError, ValidationError
from apexmem.events.located import MAX_VERSION
from apexmem.readmodels.tables import facts

if TYPE_CHECKING:
    from apexmem.memory import Memory

__all__ = ["id_range", "resolve_fact", "resolve_slot", "short_fact"]

_SHORT: Final = re.compile(r"(?P<hex>[0-9a-f][0-9a-f-]*)(?::(?P<version>\d{1,10}))?")
_LOCATED_BELOW: Final = 1 << 24
"""A last-4-bytes value under this is read as a version (a located id); a hash id's last
four bytes fall under it once in 256."""
_SHOWN: Final = 8
_LISTED: Final = 5
_AT_MOST: Final = 1_000
"""Matches read at most: enough to say a prefix is ambiguous and show a few."""


def short_fact(fact_id: object) -> str:
    """A fact id as the tables print it: `f91955cd:3` (slot prefix, version), or the first
    8 hex digits of an id that is not located."""
    text = str(fact_id)
    try:
        value = UUID(text).int
    except ValueError:
        return text[:_SHOWN]
    version = value & MAX_VERSION
    if 0 < version < _LOCATED_BELOW:
        return f"{text[:_SHOWN]}:{version}"
    return text[:_SHOWN]


def resolve_fact(memory: Memory, given: str, field: str, *, one_slot: bool = False) -> UUID:
    """The fact id `given` names: a whole id, or a short one as the tables print it.

    With `one_slot`, a prefix naming several versions of one slot is enough (the caller
    shows the whole slot); otherwise it must name one version.
    """
    whole = _whole(given)
    if whole is not None:
        return whole
    low, high, version = id_range(given, field)
    rows = _matches(memory, facts.c.fact_id, facts.c.slot_id, low, high)
    found = sorted({f for f, _ in rows if version is None or f.int & MAX_VERSION == version})
    if not found:
        raise NotFoundError(f"{field}: no fact id starts with {given!r}")
    slots = {s for f, s in rows if f in found}
    if len(found) == 1 or (one_slot and len(slots) == 1):
        return found[0]
    shown = ", ".join(short_fact(f) for f in found[:_LISTED])
    more = ", ..." if len(found) > _LISTED else ""
    raise ValidationError(
        field, given, f"is ambiguous: {len(found)} fact ids start with it ({shown}{more})"
    )


def resolve_slot(memory: Memory, given: str, field: str) -> UUID:
    """The slot id `given` names: a whole id, or a unique prefix of one (a fact's short id
    starts with its slot's)."""
    whole = _whole(given)
    if whole is not None:
        return whole
    low, high, _ = id_range(given.split(":", maxsplit=1)[0], field)
    found = sorted({s for s, _ in _matches(memory, facts.c.slot_id, facts.c.slot_id, low, high)})
    if not found:
        raise NotFoundError(f"{field}: no slot id starts with {given!r}")
    if len(found) > 1:
        shown = ", ".join(str(s)[:12] for s in found[:_LISTED])
        raise ValidationError(
            field, given, f"is ambiguous: {len(found)} slot ids start with it ({shown}, ...)"
        )
    return found[0]


def _whole(given: str) -> UUID | None:
    try:
        return UUID(given.strip())
    except ValueError:
        return None


def id_range(given: str, field: str) -> tuple[UUID, UUID, int | None]:
    """The lowest and highest id starting with the hex digits of `given` (a short id), and
    the version it asks for (None: any); not an id is refused naming `field`."""
    match = _SHORT.fullmatch(given.strip().lower())
    digits = match.group("hex").replace("-", "") if match else ""
    if match is None or not 4 <= len(digits) <= 32:
        raise ValidationError(
            field,
            given,
            "is not an id: give a whole id or at least 4 of its hex digits, as the tables "
            "print it (e.g. f91955cd:3)",
        )
    pad = 32 - len(digits)
    low = int(digits, 16) << (4 * pad)
    version = match.group("version")
    high = low | ((1 << (4 * pad)) - 1)
    return UUID(int=low), UUID(int=high), None if version is None else int(version)


def _matches(
    memory: Memory, column: Column[UUID], other: Column[UUID], low: UUID, high: UUID
) -> list[tuple[UUID, UUID]]:
    """(column, other) of the fact versions whose `column` lies in low..high (an index range
    on either id), after the read models caught up with the log."""
    memory.projections.ready()
    query = select(column, other).where(column.between(low, high)).distinct().limit(_AT_MOST)
    with memory.store.read() as connection:
        return [(a, b) for a, b in connection.execute(query)]
