"""Recall's fact-link stage: the facts a list found bring the facts linked to them.

Seed 004's recall follows typed links from the facts search found, up to the recall's
`max_hops` links away; seed 003 ranks what a link brings by its type: a fact found at rank
r counts 1 / (1 + r), and a fact one more link away `type weight * strength / hop` times
the fact it is reached from (a link from the first hit counts most). Only facts the recall
may show are brought or walked through. What it brings forms one more ranked list for the
fusion, weighed as the graph's, and each hit it brings says which link brought it.
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


def follow_links(connection: Connection, run: Lists, hops: int = 1) -> None:
    """Add the list of facts linked to those the lists found so far, up to `hops` links
    away (at least one); none when no link leads anywhere the recall may show."""
    reached: dict[str, float] = {}
    for _, keys in run.found:
        for place, (kind, item) in enumerate(keys, start=1):
            if kind == "fact":
                reached[item] = max(reached.get(item, 0.0), 1 / (1 + place))
    brought: dict[str, tuple[float, str]] = {}
    frontier = dict(reached)
    for hop in range(1, max(hops, 1) + 1):
        step = _step(connection, run, frontier, hop)
        improved = {f: b for f, b in step.items() if b[0] > brought.get(f, (0.0, ""))[0]}
        brought.update(improved)
        frontier = {f: b[0] for f, b in improved.items() if f not in reached}
        reached.update(frontier)
        if not frontier:
            break
    found: list[tuple[float, _Key]] = []
    for item, (score, why) in brought.items():
        found.append((score, ("fact", item)))
        run.context_why.setdefault(("fact", item), []).append(why)
    if found:
        run.weights.setdefault(LINKS, run.weights["graph"])
        run.add_list(LINKS, found)


def _step(
    connection: Connection, run: Lists, frontier: dict[str, float], hop: int
) -> dict[str, tuple[float, str]]:
    """The facts the recall may show one link from `frontier` (each fact with the score it
    is reached with), each with its best score, seed 003's `weight * strength / hop` times
    the score of the fact it is reached from, and why."""
    step: dict[str, tuple[float, str]] = {}
    for link in links_touching(connection, list(frontier), known_at=run.lens.known_at):
        source, target, link_type, strength, _ = link
        for here, there in ((source, target), (target, source)):
            base = frontier.get(here)
            if base is None:
                continue
            score = base * LINK_TYPE_WEIGHTS.get(link_type, 1.0) * strength / hop
            if score > step.get(there, (0.0, ""))[0]:
                step[there] = (score, _why(link, here))
    if not step:
        return step
    shown = visible_facts(connection, list(step), lens=run.lens)
    for item in shown:
        run.facts.setdefault(item, shown[item])
    return {item: found for item, found in step.items() if item in shown}


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
