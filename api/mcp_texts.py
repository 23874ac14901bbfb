"""How the MCP tools' results read to a model: one short text per result type."""

from __future__ import annotations

from datetime import datetime

import msgspec

from apexmem.readmodels.communities import CommunityRow
from apexmem.readmodels.episodes import EpisodeRow
from apexmem.readmodels.rows import EntityRow
from apexmem.replay.diff import Diff, FactChange
from apexmem.replay.verify import VerifyReport
from apexmem.service.fact_links import FactGraph, FactLink
from apexmem.service.fading import FadePass
from apexmem.service.results import AliasRef, MemoryStats, MergeRef, RetractRef
from apexmem.service.status import Status
from apexmem.wire import CommunitiesOut, EntitiesOut, EpisodesOut, HistoryOut

__all__ = [
    "aliased",
    "communities",
    "diffed",
    "entities",
    "episodes",
    "fact_graph",
    "faded",
    "history",
    "linked",
    "merged",
    "retracted",
    "stats",
    "status",
    "verified",
]


def when(moment: datetime) -> str:
    """ISO 8601 with `Z` for UTC."""
    return moment.isoformat().replace("+00:00", "Z")


def history(out: HistoryOut) -> str:
    """Each event: position, time, tag, provenance and what it says (as the CLI's table)."""
    from apexmem.cli.render import summarize

    if not out.events:
        return "No events."
    return "\n".join(
        f"#{e.position} {when(e.recorded_at)} {e.tag}"
        + (f" by {e.actor}" if e.actor else "")
        + (f" in {e.episode}" if e.episode else "")
        + f": {summarize(e.data)}"
        for e in out.events
    )


def _change(change: FactChange) -> str:
    return f"- {change.kind} #{change.position}: {change.fact} ({change.detail})"


def diffed(found: Diff) -> str:
    """Changes in the window by kind, then the links told."""
    changes = [
        *found.asserted,
        *found.superseded,
        *found.retracted,
        *found.faded,
        *found.restored,
    ]
    lines = [_change(c) for c in sorted(changes, key=lambda c: c.position)]
    lines += [
        f"- linked #{link.position}: {link.source_fact or link.source} {link.link_type} "
        f"{link.target_fact or link.target} ({link.strength:.2f})"
        for link in found.linked
    ]
    head = (
        f"{len(found.asserted)} asserted, {len(found.superseded)} superseded, "
        f"{len(found.retracted)} retracted, {len(found.faded)} faded, "
        f"{len(found.restored)} restored, {len(found.linked)} linked "
        f"between {when(found.since)} and {when(found.until)}"
    )
    return "\n".join([head, *lines])


def retracted(ref: RetractRef) -> str:
    """The version a retraction ended or withdrew."""
    return f"Retracted fact {ref.fact_id} (log position {ref.position})."


def aliased(ref: AliasRef) -> str:
    """An alias claim's outcome."""
    return f"Alias {ref.alias!r} {ref.outcome} (entity {ref.entity_id}, owner {ref.owner})."


def merged(ref: MergeRef) -> str:
    """A merge's two entities."""
    return f"Merged entity {ref.source_id} into {ref.target_id} (log position {ref.position})."


def _link(link: FactLink) -> str:
    return f"- {link.source} {link.link_type} {link.target} ({link.strength:.2f}, {link.origin})"


def linked(link: FactLink) -> str:
    """The link as stored."""
    return "Linked:\n" + _link(link) + f"\n(log position {link.position})"


def fact_graph(graph: FactGraph) -> str:
    """The facts reached, by hops, then the links walked."""
    facts = "\n".join(
        f"- [{graph.hops.get(f.fact_id, 0)} hops] {f.fact} (fact {f.fact_id})" for f in graph.facts
    )
    links = "\n".join(_link(link) for link in graph.links) or "(no links)"
    return f"Facts:\n{facts}\nLinks:\n{links}"


def _entity(row: EntityRow) -> str:
    return f"- {row.name} ({row.entity_type}, entity {row.entity_id})"


def entities(found: EntitiesOut) -> str:
    """One line per entity."""
    return "\n".join(map(_entity, found.entities)) or "No entity answers to that name."


def _episode(row: EpisodeRow) -> str:
    return (
        f"- {row.conversation}: first mentioned {when(row.mentioned_at)}, "
        f"{row.messages} messages (episode {row.episode_id})"
    )


def episodes(found: EpisodesOut) -> str:
    """One line per episode."""
    return "\n".join(map(_episode, found.episodes)) or "No episode mentioned that entity."


def _community(row: CommunityRow) -> str:
    summary = f": {row.summary}" if row.summary else ""
    return f"- {row.name} ({row.size} members){summary}"


def communities(found: CommunitiesOut) -> str:
    """One line per community."""
    return "\n".join(map(_community, found.communities)) or "No communities detected yet."


def faded(done: FadePass) -> str:
    """What a decay pass recorded."""
    if not done.position:
        return "No fact crossed the recall threshold: nothing recorded."
    return (
        f"{len(done.faded)} facts faded, {len(done.restored)} restored "
        f"(log position {done.position})."
    )


def verified(report: VerifyReport) -> str:
    """ok with the head, or the first bad position and why."""
    if report.ok:
        head = f"{report.head_position}:{report.head}"
        return f"ok: {report.events_checked} events checked, head {head}"
    return f"damaged at position {report.first_bad_position}: {report.reason}"


def stats(found: MemoryStats) -> str:
    """The counts, as JSON."""
    return msgspec.json.encode(found).decode()


def status(found: Status) -> str:
    """Counts, lags, settings and versions, as JSON (no data)."""
    return msgspec.json.encode(found).decode()
