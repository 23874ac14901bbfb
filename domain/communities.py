"""Communities (DESIGN 5, digest 5): label propagation, fingerprints, what a detection
changes, and the neighbour vote that places a new entity between detections. Pure.

Entities and edges are keyed by integers that never change and order them as the log
did: an entity by the position of its first event, an edge (a fact version) by the
position of its assertion. They play the part of the reference's row ids: node order,
tie-breaks and fingerprints all use them.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Final, NamedTuple
from uuid import UUID

import msgspec
from blake3 import blake3

from apexmem.domain.merges import followed
from apexmem.domain.names import clean

__all__ = [
    "DEFAULT_EDGE_CHUNK",
    "MAX_ITERATIONS",
    "Detected",
    "GraphEdge",
    "Node",
    "Plan",
    "StoredCommunity",
    "Vote",
    "assign",
    "community_name",
    "detect",
    "fingerprint",
    "plan",
    "propagate_labels",
    "vote",
]

MAX_ITERATIONS: Final = 50
"""Label propagation passes at most (it usually settles in a handful)."""
DEFAULT_EDGE_CHUNK: Final = 10_000
"""Edges read per query when `lpa_edge_chunk_size` is 0."""
_NAMED_MEMBERS: Final = 3
_KEY: Final = struct.Struct("<q")


class Node(NamedTuple):
    """An entity that can belong to a community: live (not merged away, not archived)."""

    entity_id: UUID
    key: int
    name: str


class GraphEdge(NamedTuple):
    """An active edge (a believed, open-ended fact between two entities)."""

    fact_id: UUID
    key: int
    subject_id: UUID
    object_id: UUID


class Detected(msgspec.Struct, frozen=True, kw_only=True):
    """One community a detection found: two or more members and the edges between them."""

    fingerprint: str
    name: str
    members: tuple[Node, ...]
    """In key order."""
    edges: tuple[GraphEdge, ...]
    """The edges with both ends among the members, in key order."""


class StoredCommunity(msgspec.Struct, frozen=True, kw_only=True):
    """A community the read models hold now."""

    community_id: UUID
    fingerprint: str
    stale: bool
    """Members were assigned since its summary: the next detection summarizes it again."""


class Plan(msgspec.Struct, frozen=True, kw_only=True):
    """What a detection changes: communities to (re)form and summarize, and to dissolve."""

    form: list[Detected]
    dissolve: list[StoredCommunity]
    unchanged: int


class Vote(NamedTuple):
    """The community an entity's neighbours chose, with its votes out of all cast."""

    community: UUID
    votes: int
    cast: int


def fingerprint(entity_keys: Iterable[int], edge_keys: Iterable[int]) -> str:
    """BLAKE3 of `b"entities"`, the sorted entity keys, `b"edges"`, the sorted edge keys.

    Each key is an 8-byte little-endian signed integer; the separators keep ([1, 2], [3])
    apart from ([1], [2, 3]). Lowercase hex, 64 characters; the order given does not matter.
    """
    hasher = blake3(b"entities")
    for key in sorted(entity_keys):
        hasher.update(_KEY.pack(key))
    hasher.update(b"edges")
    for key in sorted(edge_keys):
        hasher.update(_KEY.pack(key))
    return hasher.hexdigest()


def propagate_labels(
    adjacency: Sequence[Sequence[int]], *, max_iterations: int = MAX_ITERATIONS
) -> list[int]:
    """Asynchronous label propagation: each node's label, starting from its own index.

    Nodes are visited in index order and take the label most of their neighbours hold
    (a parallel edge counts once more; ties go to the smallest label), updated in place
    so later nodes of the same pass see it. Stops after a pass that changed nothing.
    """
    labels = list(range(len(adjacency)))
    for _ in range(max_iterations):
        changed = False
        for node, neighbours in enumerate(adjacency):
            if not neighbours:
                continue
            counts: dict[int, int] = {}
            for other in neighbours:
                label = labels[other]
                counts[label] = counts.get(label, 0) + 1
            most = max(counts.values())
            best = min(label for label, count in counts.items() if count == most)
            if best != labels[node]:
                labels[node] = best
                changed = True
        if not changed:
            break
    return labels


def detect(
    nodes: Iterable[Node],
    edges: Iterable[GraphEdge],
    *,
    merged: Mapping[UUID, UUID] | None = None,
    max_iterations: int = MAX_ITERATIONS,
) -> list[Detected]:
    """The communities of a graph: label propagation's groups of two or more members.

    `merged` maps an entity merged away to the entity it was merged into: its edges count
    as that entity's. Edges to an entity that is not a node, and self-loops, are left out.
    Communities come in the order of their labels (smallest first).
    """
    ordered = sorted(nodes, key=lambda n: n.key)
    index = {n.entity_id: i for i, n in enumerate(ordered)}
    adjacency: list[list[int]] = [[] for _ in ordered]
    kept: list[tuple[int, int, GraphEdge]] = []
    for edge in edges:
        a = index.get(_root(edge.subject_id, merged))
        b = index.get(_root(edge.object_id, merged))
        if a is None or b is None or a == b:
            continue
        adjacency[a].append(b)
        adjacency[b].append(a)
        kept.append((a, b, edge))
    labels = propagate_labels(adjacency, max_iterations=max_iterations)
    groups: dict[int, list[int]] = {}
    for node, label in enumerate(labels):
        groups.setdefault(label, []).append(node)
    inside: dict[int, list[GraphEdge]] = {}
    for a, b, edge in kept:
        if labels[a] == labels[b]:
            inside.setdefault(labels[a], []).append(edge)
    found = []
    for label_index, label in enumerate(sorted(k for k, g in groups.items() if len(g) >= 2)):
        members = tuple(ordered[i] for i in groups[label])
        within = tuple(sorted(inside.get(label, []), key=lambda e: e.key))
        found.append(
            Detected(
                fingerprint=fingerprint((m.key for m in members), (e.key for e in within)),
                name=community_name(members, label_index),
                members=members,
                edges=within,
            )
        )
    return found


def community_name(members: Sequence[Node], label_index: int) -> str:
    """The first three members' names (in key order), then the community's label index."""
    names = ", ".join(clean(m.name) for m in members[:_NAMED_MEMBERS])
    return f"{names} [{label_index}]"


def plan(detected: Sequence[Detected], stored: Iterable[StoredCommunity]) -> Plan:
    """Compare a detection with the communities held: form the new or changed, dissolve the gone.

    A held community whose fingerprint was detected again is unchanged, unless members were
    assigned to it since (stale): then it is formed again with the detected members and a
    new summary. A held community whose fingerprint was not detected is dissolved (the
    reference keeps an assigned one forever; here it goes, as its membership changed).
    """
    held = {s.fingerprint: s for s in stored}
    wanted = {d.fingerprint for d in detected}
    form = [d for d in detected if d.fingerprint not in held or held[d.fingerprint].stale]
    dissolve = [s for s in held.values() if s.fingerprint not in wanted]
    dissolve.sort(key=lambda s: s.fingerprint)
    return Plan(form=form, dissolve=dissolve, unchanged=len(detected) - len(form))


def vote(
    neighbours: Iterable[UUID],
    membership: Mapping[UUID, UUID],
    rank: Mapping[UUID, tuple[int, str]],
) -> Vote | None:
    """The community most of an entity's neighbours belong to, or None when none belongs to one.

    Each neighbour (once per edge) votes for its community; ties go to the community with
    the smallest `rank` (its formation position, then its id as text).
    """
    counts: dict[UUID, int] = {}
    for neighbour in neighbours:
        community = membership.get(neighbour)
        if community is not None:
            counts[community] = counts.get(community, 0) + 1
    if not counts:
        return None
    most = max(counts.values())
    winner = min((c for c, n in counts.items() if n == most), key=lambda c: rank[c])
    return Vote(winner, most, sum(counts.values()))


def assign(
    nodes: Iterable[Node],
    edges: Iterable[GraphEdge],
    membership: Mapping[UUID, UUID],
    rank: Mapping[UUID, tuple[int, str]],
    *,
    merged: Mapping[UUID, UUID] | None = None,
) -> list[tuple[UUID, Vote]]:
    """Place the entities that belong to no community, in key order, by neighbour vote.

    An entity none of whose neighbours belongs to a community stays out. An entity placed
    votes for its community when a later one is placed, as if each had been placed on its
    own, one after the other. `membership` is every member of a live community.
    """
    live = {n.entity_id: n for n in nodes}
    neighbours: dict[UUID, list[UUID]] = {}
    for edge in edges:
        a = _root(edge.subject_id, merged)
        b = _root(edge.object_id, merged)
        if a == b or a not in live or b not in live:
            continue
        if a not in membership:
            neighbours.setdefault(a, []).append(b)
        if b not in membership:
            neighbours.setdefault(b, []).append(a)
    placed = dict(membership)
    chosen = []
    for node in sorted((live[e] for e in neighbours), key=lambda n: n.key):
        found = vote(neighbours[node.entity_id], placed, rank)
        if found is not None:
            placed[node.entity_id] = found.community
            chosen.append((node.entity_id, found))
    return chosen


def _root(entity: UUID, merged: Mapping[UUID, UUID] | None) -> UUID:
    return followed(entity, merged.get) if merged else entity
