"""The keyword router (digest 3.6): which MAGMA subgraphs a query is about, without a model."""

from __future__ import annotations

from typing import Final

__all__ = ["classify_edge_types"]

_MARKERS: Final = (
    (
        "causal",
        (
            "why", "because", "caused", "cause", "reason", "result", "led to",
            "consequence", "trigger", "effect", "blame", "fault",
        ),
    ),
    (
        "temporal",
        (
            "before", "after", "first", "then", "timeline", "sequence", "preceded",
            "followed", "started", "ended", "during", "prior", "when",
        ),
    ),
    (
        "entity",
        (
            "is a", "type of", "kind of", "part of", "instance", "same as", "alias",
            "subtype", "subclass", "belongs to",
        ),
    ),
)  # fmt: skip


def classify_edge_types(query: str) -> list[str]:
    """Edge types a query asks about: causal, temporal, entity as their markers appear, then
    semantic, always last, so routing never recalls less than an untyped search would.

    Markers match as substrings of the lowercased query, as the reference does ("because"
    also contains "cause"; "authentication" contains "then").
    """
    text = query.lower()
    found = [kind for kind, markers in _MARKERS if any(m in text for m in markers)]
    return [*found, "semantic"]
