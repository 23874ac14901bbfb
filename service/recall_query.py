"""One recall question, checked, with what was not asked taken from the settings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal

import msgspec

from apexmem.domain.settings import Settings
from apexmem.events.errors import ValidationError
from apexmem.readmodels.moment import NOW, Moment
from apexmem.service.arguments import checked_count, checked_edge_types, checked_text

__all__ = ["MODES", "Mode", "RecallQuery"]

Mode = Literal["bfs", "activation"]
MODES: Final[tuple[Mode, ...]] = ("bfs", "activation")


class RecallQuery(msgspec.Struct, frozen=True, kw_only=True):
    """What a recall is asked: built once where the question comes in (see `of`)."""

    text: str
    limit: int
    max_hops: int
    edge_types: tuple[str, ...] | None
    """Every fact returned is of these types (None: the keyword router picks the types
    the graph walks; empty: all)."""
    mode: Mode
    moment: Moment = NOW
    include_faded: bool = False
    include_co_mentions: bool = False
    """Show co-mention facts ("A and B were mentioned together"), left out by default."""

    @classmethod
    def of(
        cls,
        settings: Settings,
        text: str,
        *,
        limit: int | None = None,
        max_hops: int | None = None,
        edge_types: Sequence[str] | None = None,
        mode: str | None = None,
        moment: Moment = NOW,
        include_faded: bool = False,
        include_co_mentions: bool = False,
    ) -> RecallQuery:
        """The query asked, each argument checked, defaults from `[memory.graph]`:
        recall_limit, the mode's max_hops and spreading_activation.enabled for the mode."""
        checked_text("query", text)
        graph = settings.memory.graph
        activation = graph.spreading_activation
        chosen = _mode(mode, "activation" if activation.enabled else "bfs")
        # Each walk has its own setting: SYNAPSE's spreads further (3) than the BFS (2).
        walk_hops = activation.max_hops if chosen == "activation" else graph.max_hops
        return cls(
            text=text,
            limit=graph.recall_limit if limit is None else checked_count("limit", limit),
            max_hops=walk_hops if max_hops is None else checked_count("max_hops", max_hops),
            edge_types=(
                None
                if edge_types is None
                else tuple(dict.fromkeys(checked_edge_types("edge_types", edge_types)))
            ),
            mode=chosen,
            moment=moment,
            include_faded=include_faded,
            include_co_mentions=include_co_mentions,
        )


def _mode(value: str | None, default: Mode) -> Mode:
    if value is None:
        return default
    if value not in MODES:
        raise ValidationError("mode", value, f"is not one of {', '.join(MODES)}")
    return value
