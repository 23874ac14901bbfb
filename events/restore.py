"""A log's stored records, grouped back into the appends that wrote them, to be written
verbatim into another (empty) log: what `apexmem migrate` carries between backends.

Nothing is encoded or hashed again: the target stores the same bytes, chain hashes and
transaction times, and `verify` on arrival recomputes the chain from them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from uuid import UUID

import msgspec

from apexmem.events.envelope import KeyedAppend, RawRecord
from apexmem.events.errors import IntegrityViolation

__all__ = ["Restored", "RestoredKey", "appends_of"]


class Restored(msgspec.Struct, frozen=True, kw_only=True):
    """One append as stored: consecutive positions sharing one transaction time."""

    positions: list[int]
    streams: list[UUID]
    versions: list[int]
    tags: list[str]
    states: list[bytes]
    micros: int
    chain: bytes
    """The appended events' chain hashes, 32 bytes each, in position order."""


class RestoredKey(msgspec.Struct, frozen=True, kw_only=True):
    """One idempotency key as stored, with the receipt its first append kept."""

    kept: KeyedAppend
    receipt: bytes | None


def appends_of(records: Iterable[RawRecord]) -> Iterator[Restored]:
    """The appends `records` (from `Log.raw_records`) were written by, in order.

    Refuses (IntegrityViolation) a record without its chain row or a chain row without its
    record: a log must verify before it is copied.
    """
    group: list[RawRecord] = []
    for record in records:
        if record.state is None or record.chain is None or record.problem is not None:
            raise IntegrityViolation(
                f"position {record.position} cannot be copied: "
                f"{record.problem or 'its record or chain row is missing'}"
            )
        if group and (
            record.recorded_at != group[-1].recorded_at
            or record.position != group[-1].position + 1
        ):
            yield _restored(group)
            group = []
        group.append(record)
    if group:
        yield _restored(group)


def _restored(group: list[RawRecord]) -> Restored:
    micros = group[0].recorded_at
    assert micros is not None
    return Restored(
        positions=[r.position for r in group],
        streams=[UUID(str(r.stream_id)) for r in group],
        versions=[int(r.version or 0) for r in group],
        tags=[str(r.tag) for r in group],
        states=[bytes(r.state or b"") for r in group],
        micros=micros,
        chain=b"".join(bytes(r.chain or b"") for r in group),
    )
