"""Relation canonicalization and cardinality, with an LRU cache of resolved relations."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from typing import Final, Literal

import msgspec

from apexmem.events.policy import RelationMapped

__all__ = ["DEFAULT_MAPPINGS", "Cardinality", "Ontology", "Resolved"]

Cardinality = Literal["one", "many"]

DEFAULT_MAPPINGS: Final = (
    RelationMapped(
        canonical="works_at", aliases=["employed_by", "job_at", "works_for"], cardinality="one"
    ),
    RelationMapped(canonical="lives_in", aliases=["resides_in", "based_in"], cardinality="one"),
    RelationMapped(canonical="born_in", aliases=["birthplace", "born_at"], cardinality="one"),
    RelationMapped(
        canonical="manages", aliases=["manages_team", "leads", "supervises"], cardinality="one"
    ),
    RelationMapped(canonical="owns", aliases=["has", "possesses"], cardinality="many"),
    RelationMapped(canonical="depends_on", aliases=["requires", "needs"], cardinality="many"),
    RelationMapped(canonical="knows", aliases=[], cardinality="many"),
)
"""The reference implementation's embedded table."""

_CACHE_SIZE: Final = 4096


class Resolved(msgspec.Struct, frozen=True):
    """A relation resolved by the ontology."""

    canonical: str
    unmapped: bool
    cardinality: Cardinality


class Ontology:
    """Maps relation names (already normalized) to canonical relations and their cardinality.

    Immutable: `with_mapping` returns a new ontology. Resolutions are cached (LRU).
    """

    def __init__(self, mappings: Iterable[RelationMapped] = DEFAULT_MAPPINGS) -> None:
        self._canonical: dict[str, str] = {}
        self._cardinality: dict[str, Cardinality] = {}
        self._mappings: list[RelationMapped] = []
        for mapping in mappings:
            self._add(mapping)
        self._cache: OrderedDict[str, Resolved] = OrderedDict()

    def _add(self, mapping: RelationMapped) -> None:
        self._mappings.append(mapping)
        self._canonical[mapping.canonical] = mapping.canonical
        for alias in mapping.aliases:
            self._canonical[alias] = mapping.canonical
        self._cardinality[mapping.canonical] = mapping.cardinality

    def with_mapping(self, mapping: RelationMapped) -> Ontology:
        """A new ontology with one more (or a replaced) canonical relation."""
        return Ontology([*self._mappings, mapping])

    def resolve(self, relation: str) -> Resolved:
        """The canonical relation for a normalized name; unknown names map to themselves."""
        hit = self._cache.get(relation)
        if hit is not None:
            self._cache.move_to_end(relation)
            return hit
        canonical = self._canonical.get(relation)
        resolved = Resolved(
            canonical=canonical or relation,
            unmapped=canonical is None,
            cardinality=self.cardinality(canonical or relation),
        )
        self._cache[relation] = resolved
        if len(self._cache) > _CACHE_SIZE:
            self._cache.popitem(last=False)
        return resolved

    def cardinality(self, canonical: str) -> Cardinality:
        """`one` for single-valued relations; `many` (the default) otherwise."""
        return self._cardinality.get(canonical, "many")
