"""The rows of one append in PostgreSQL's binary COPY format, built before the log's lock.

Everything of a row but its position is known before the append takes the lock, so the
bytes are made first (`Rows`) and, under the lock, only the positions are put in front
(`Rows.data`): psycopg's `write_row` took ~20 µs a row, most of a batch's time in the lock.
Format: https://www.postgresql.org/docs/current/sql-copy.html (binary file format).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Final
from uuid import UUID

__all__ = ["COLUMNS", "Rows"]

COLUMNS: Final = "(position, stream, version, tag, state)"
"""The columns, in the order the rows hold them."""
_HEADER: Final = b"PGCOPY\n\xff\r\n\x00" + bytes(8)  # signature, flags, no extension
_TRAILER: Final = b"\xff\xff"
_LEAD: Final = struct.Struct(">hi")  # field count, then the position's length
_POSITION: Final = struct.Struct(">q")
_STREAM_VERSION: Final = struct.Struct(">i16si q")
_LENGTH: Final = struct.Struct(">i")


class Rows:
    """The stream, version, tag and state of each event of one append, as COPY bytes."""

    def __init__(
        self,
        streams: Sequence[UUID],
        versions: Sequence[int],
        tags: Sequence[str],
        states: Sequence[bytes],
    ) -> None:
        tag_parts: dict[str, bytes] = {}
        self._tails: list[bytes] = []
        for stream, version, tag, state in zip(streams, versions, tags, states, strict=True):
            part = tag_parts.get(tag)
            if part is None:
                encoded = tag.encode()
                part = tag_parts[tag] = _LENGTH.pack(len(encoded)) + encoded
            self._tails.append(
                b"".join(
                    (
                        _STREAM_VERSION.pack(16, stream.bytes, 8, version),
                        part,
                        _LENGTH.pack(len(state)),
                        state,
                    )
                )
            )

    def __len__(self) -> int:
        return len(self._tails)

    def data(self, first: int) -> bytes:
        """The whole COPY stream, the rows at positions `first`, `first + 1`, ..."""
        lead, position = _LEAD.pack(5, 8), _POSITION.pack
        parts = [_HEADER]
        for offset, tail in enumerate(self._tails):
            parts += (lead, position(first + offset), tail)
        parts.append(_TRAILER)
        return b"".join(parts)
