"""Recall's fact-link stage: the facts a list found bring the facts linked to them.

Seed 004's recall follows typed links from the facts search found; seed 003 ranks what a
link brings by its type: `type weight * strength / (1 + rank)`, the rank being the best
place the linking fact holds in a list (the seed's hop count: a link from the first hit
counts most). What it brings forms one more ranked list for the fusion, weighed as the
graph's, and each hit it brings says which link brought it.
"""

from __future__ import annotations

from typing import Final, Literal, Protocol

from sqlalchemy import Connection

from apexmem.domain.links import LINK_TYPE_WEIGHTS
from apexmem.readmodels.fact_links import StoredLink, links_touching
from apexmem.readmodels.moment import Lens
from apexmem.readmodels.recall import FactKey, visible_facts

__all__ = ["LINKS", "Lists", "follow_links"]

_Key = tuple[Literal["fact", "message"], str]

LINKS: Final = "fact links"
"""The name of the list the stage adds (and of its place in a hit's `why`)."""


class Lists(Protocol):
    """What the stage reads and adds to of one recall's run (`service.recall._Run`)."""

    found: list[tuple[str, list[_Key]]]
    facts: dict[str, FactKey]
    lens: Lens
    weights: dict[str, float]
    context_why: dict[_Key, list[str]]

    def add_list(self, name: str, found: list[tuple[float, _Key]]) -> None:
        """Add a ranked list for the fusion."""
        ...


def follow_links(connection: Connection, run: Lists) -> None:
    """Add the list of facts linked to those the lists found so far (none: no list)."""
    best: dict[str, int] = {}
    for _, keys in run.found:
        for place, (kind, item) in enumerate(keys, start=1):
            if kind == "fact" and place < best.get(item, place + 1):
                best[item] = place
    if not best:
        return
    links = links_touching(connection, list(best), known_at=run.lens.known_at)
    brought: dict[str, tuple[float, str]] = {}
    for link in links:
        source, target, link_type, strength, _ = link
        for here, there in ((source, target), (target, source)):
            rank = best.get(here)
            if rank is None:
                continue
            score = LINK_TYPE_WEIGHTS.get(link_type, 1.0) * strength / (1 + rank)
            if score > brought.get(there, (0.0, ""))[0]:
                brought[there] = (score, _why(link, here))
    if not brought:
        return
    shown = visible_facts(connection, list(brought), lens=run.lens)
    found: list[tuple[float, _Key]] = []
    for item, (score, why) in brought.items():
        if item in shown:
            run.facts.setdefault(item, shown[item])
            found.append((score, ("fact", item)))
            run.context_why.setdefault(("fact", item), []).append(why)
    if found:
        run.weights.setdefault(LINKS, run.weights["graph"])
        run.add_list(LINKS, found)


def _why(link: StoredLink, hit: str) -> str:
    """`fact link: 07506636 caused_by 846c4ab0 (its target was found, strength 0.80,
    weight 1.5)`."""
    source, target, link_type, strength, _ = link
    end = "source" if source == hit else "target"
    weight = LINK_TYPE_WEIGHTS.get(link_type, 1.0)
    return (
        f"fact link: {source[:8]} {link_type} {target[:8]} (its {end} was found,"
        f" strength {strength:.2f}, weight {weight})"
    )
