"""The base of every event payload and the limits its strings obey."""

from __future__ import annotations

from typing import Annotated, Final

import msgspec

__all__ = [
    "EDGE_TYPES",
    "MAX_FACT_BYTES",
    "MAX_KEY_BYTES",
    "MAX_NAME_BYTES",
    "MAX_REF_BYTES",
    "MAX_RELATION_BYTES",
    "MAX_SUMMARY_BYTES",
    "MAX_TEXT_BYTES",
    "Event",
    "Probability",
]

MAX_NAME_BYTES: Final = 512
"""Canonical and display names are cut to this many UTF-8 bytes at a character boundary."""
MAX_RELATION_BYTES: Final = 256
MAX_FACT_BYTES: Final = 2048
MAX_SUMMARY_BYTES: Final = 2048
MAX_TEXT_BYTES: Final = 65_536
MAX_REF_BYTES: Final = 256
"""Actor, episode, external reference and reason strings."""
MAX_KEY_BYTES: Final = 1024
"""Idempotency keys (the HTTP API's bind a client's key of up to 255 characters to its
operation and request, so they run longer than a reference)."""

EDGE_TYPES: Final = ("semantic", "temporal", "causal", "entity")
"""The four MAGMA edge types, stored lowercase."""

Probability = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]


# gc=False: events are plain values that never form a reference cycle, made by the thousand
# per batch; left untracked, they neither trigger nor slow the cyclic garbage collector.
# It changes nothing in their encoding.
class Event(
    msgspec.Struct, frozen=True, kw_only=True, tag_field="type", omit_defaults=True, gc=False
):
    """Base of every event payload: a past-tense fact about one stream, tagged `name.vN`."""
