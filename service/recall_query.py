"""One recall question, checked, with what was not asked taken from the settings."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Final, Literal

import msgspec

from apexmem.domain.names import normalize_relation
from apexmem.domain.settings import Settings
from apexmem.events.errors import ValidationError
from apexmem.readmodels.moment import NOW, Moment
from apexmem.service.arguments import checked_count, checked_edge_types, checked_text

__all__ = ["MODES", "Mode", "RecallQuery", "checked_flag", "checked_relations"]

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
    relations: tuple[str, ...] | None = None
    """Only facts of these (canonical) relations, no messages (None: any)."""
    min_score: float = 0.0
    """Hits scoring under this share of the best hit's score are left out."""
    window: tuple[datetime, datetime] | None = None
    """The valid-time window asked about (None: the one the question names, if any): the
    facts whose validity overlaps it."""
    window_phrase: str = ""
    """What in the question named `window` ("before she moved"), shown in `why`; empty
    when the caller gave the window."""
    reference_time: datetime | None = None
    """What relative times in the question count from (None: now)."""
    trace: bool = False
    """Whether the recall returns its trace (`service.trace`)."""

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
        relations: Sequence[str] | None = None,
        min_score: float | None = None,
        window: tuple[datetime, datetime] | None = None,
        window_phrase: str = "",
        reference_time: datetime | None = None,
        trace: bool = False,
    ) -> RecallQuery:
        """The query asked, each argument checked, defaults from `[memory.graph]`:
        recall_limit, the mode's max_hops and spreading_activation.enabled for the mode;
        `min_score` from `[memory.recall]`. `relations` come canonical (see
        `checked_relations`)."""
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
            relations=None if relations is None else tuple(dict.fromkeys(relations)),
            min_score=_min_score(
                settings.memory.recall.min_score if min_score is None else min_score
            ),
            window=None if window is None else checked_window(window),
            window_phrase=window_phrase,
            reference_time=reference_time,
            trace=checked_flag("trace", trace),
        )


def checked_window(window: tuple[datetime, datetime]) -> tuple[datetime, datetime]:
    """A (start, end) valid-time window whose end is not before its start."""
    start, end = window
    if end < start:
        raise ValidationError("window", window, "ends before it starts")
    return start, end


def checked_relations(
    field: str,
    values: object,
    canonical: Callable[[str], tuple[str, bool]],
    held: Callable[[str], bool],
) -> list[str]:
    """`values` (a list of relation names) as canonical relations, each one the ontology
    maps (`canonical` -> (relation, mapped)) or some fact holds (`held`), else a
    ValidationError naming `field`."""
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise ValidationError(field, values, "is not a list of relation names")
    found = []
    for value in values:
        if not isinstance(value, str):
            raise ValidationError(field, value, "is not a relation name")
        relation, mapped = canonical(normalize_relation(field, value))
        if not mapped and not held(relation):
            raise ValidationError(field, value, "is not a relation of the ontology or of any fact")
        found.append(relation)
    return found


def _min_score(value: object) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not 0.0 <= value <= 1.0  # NaN fails both comparisons
    ):
        raise ValidationError("min_score", value, "is not a number from 0 to 1")
    return float(value)


def _mode(value: str | None, default: Mode) -> Mode:
    if value is None:
        return default
    if value not in MODES:
        raise ValidationError("mode", value, f"is not one of {', '.join(MODES)}")
    return value


def checked_flag(field: str, value: object) -> bool:
    """`value` as a flag: True or False, nothing else (1 or "yes" are refused)."""
    if not isinstance(value, bool):
        raise ValidationError(field, value, "is not true or false")
    return value
