"""How a log file stores stream ids and lookup keys: 16-byte blobs, or hex text (older logs).

A new log stores each stream id as its 16 bytes: the unique (stream, version) index then
holds about half the bytes of hex text, so a batch of random ids dirties fewer index pages
per commit. Logs made before keep hex text (`"text"`) and are read and appended to as they
are; the format is read from the file when it is opened, never converted.

Logs written before located ids (`events.located`) also hold a key table, its keys one kind
byte and the id's 16 bytes (or the key as text, in a text log); it is read, never written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Literal
from uuid import UUID

import msgspec

__all__ = ["BINARY", "TEXT", "IdFormat", "StoredIds", "parse_stream", "stream_text"]

IdFormat = Literal["binary", "text"]
BINARY: Final[IdFormat] = "binary"
TEXT: Final[IdFormat] = "text"
_KINDS: Final = {"fact:": b"f", "message:": b"m"}
"""The kind byte of each lookup key prefix in a binary log."""
_json: Final = msgspec.json.Encoder()
_strings: Final = msgspec.json.Decoder(list[str])


class StoredIds:
    """Stream ids and lookup keys as one log file stores them (see the module docstring)."""

    def __init__(self, name: IdFormat) -> None:
        self.name: IdFormat = name
        self.binary = name == BINARY
        self.column_type = "BLOB" if self.binary else "TEXT"
        """The SQL type of the stream id and key columns."""

    def streams(self, ids: Sequence[UUID]) -> list[Any]:
        """The stored values of many stream ids (bytes, or hex in two C calls).

        Bytes are `UUID.bytes` without its Python-level property call.
        """
        if self.binary:
            return [u.int.to_bytes(16) for u in ids]
        return _strings.decode(_json.encode(ids).replace(b"-", b""))

    def key(self, key: str) -> Any:
        """The stored form of one lookup key (`fact:<id>`); None when it cannot be stored."""
        if not self.binary:
            return key
        prefix, colon, rest = key.partition(":")
        kind = _KINDS.get(prefix + colon)
        if kind is None:
            return None
        try:
            return kind + UUID(rest).bytes
        except ValueError:
            return None


def stream_text(value: object) -> str | None:
    """A stored stream id as hex text, whatever the format (None stays None).

    Bytes of any other length than 16 come back as their hex, which no UUID parses, so a
    damaged value is still reported as malformed.
    """
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def parse_stream(value: str | bytes | UUID) -> UUID:
    """A stored stream id (hex text or 16 bytes) as a UUID."""
    if isinstance(value, UUID):
        return value
    if isinstance(value, bytes):
        return UUID(bytes=value)
    return UUID(value)
