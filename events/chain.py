"""The blake3 hash chain: each position's hash covers the previous hash and the whole record."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from blake3 import blake3

__all__ = ["GENESIS", "link", "links"]

GENESIS: Final = bytes(32)
"""The hash before the first position."""
_TAG_MEMO_SIZE: Final = 1_024
_TAG_PARTS: dict[str, bytes] = {}


def link(previous: bytes, stream: bytes, version: int, tag: str, state: bytes) -> bytes:
    """chain[n] = blake3(chain[n-1] || stream id || version || tag || stored bytes).

    `stream` is the stream id's 16 bytes (`UUID.bytes`). Variable-length parts are
    length-prefixed so no two records can hash alike by shifting bytes between the tag and
    the state.
    """
    return blake3(_message(previous, stream, version, tag, state)).digest()


def links(previous: bytes, records: Iterable[tuple[bytes, int, str, bytes]]) -> list[bytes]:
    """`link` of each (stream, version, tag, state) record in turn, starting after `previous`.

    One hasher for them all, reset after each record: a new blake3 object per record cost
    more than hashing its bytes.
    """
    hasher = blake3()
    update, digest, reset = hasher.update, hasher.digest, hasher.reset
    join, parts = b"".join, _TAG_PARTS
    hashes = []
    for stream, version, tag, state in records:  # `_message`, inline: once per event
        part = parts.get(tag)
        if part is None:
            part = _tag_part(tag)
        update(
            join(
                (
                    previous,
                    stream,
                    version.to_bytes(8, "big", signed=True),
                    part,
                    len(state).to_bytes(8, "big"),
                    state,
                )
            )
        )
        previous = digest()
        reset()
        hashes.append(previous)
    return hashes


def _message(previous: bytes, stream: bytes, version: int, tag: str, state: bytes) -> bytes:
    """The bytes one chain hash covers, in one buffer (the same bytes as feeding the parts
    one by one, in one call)."""
    part = _TAG_PARTS.get(tag)
    if part is None:
        part = _tag_part(tag)
    return b"".join(
        (
            previous,
            stream,
            version.to_bytes(8, "big", signed=True),
            part,
            len(state).to_bytes(8, "big"),
            state,
        )
    )


def _tag_part(tag: str) -> bytes:
    """The tag's length (4 bytes, big-endian) and its UTF-8 bytes, remembered per tag."""
    encoded = tag.encode()
    part = len(encoded).to_bytes(4, "big") + encoded
    if len(_TAG_PARTS) < _TAG_MEMO_SIZE:  # stored tags come from a small catalogue
        _TAG_PARTS[tag] = part
    return part
