"""Names to entities on the write path: alias, then canonical name, following merges, then
(when `use_embedding_resolution` is on) a similar entity of the same type, else new."""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple
from uuid import UUID

import msgspec

from apexmem.domain.deciders import create_entity, decide_summary
from apexmem.domain.identities import alias_id
from apexmem.domain.merges import MAX_MERGE_HOPS, followed
from apexmem.domain.names import canonical_name, display_name
from apexmem.domain.state import EntityState
from apexmem.domain.types import resolve_entity_type
from apexmem.events.errors import NotFoundError, ValidationError
from apexmem.service.logs import get_logger
from apexmem.service.staging import Meta, Staging

__all__ = ["NameKey", "Resolution", "follow", "name_key", "resolve"]

_logger = get_logger()


class NameKey(NamedTuple):
    """What a (name, type as given) pair stands for before any stream is read."""

    entity_type: str
    known_type: bool
    canonical: str
    alias: UUID
    """The alias stream that says which entity owns the name."""


class Resolution(msgspec.Struct, frozen=True, gc=False):
    """The entity a name resolved to, whether it was created, and the index of its event."""

    entity_id: UUID
    created: bool
    index: int
    name: str


@lru_cache(maxsize=65_536)
def _name_key(name: str, kind: str) -> NameKey:
    entity_type, known = resolve_entity_type(kind)
    canonical = canonical_name("name", name)
    return NameKey(entity_type, known, canonical, alias_id(entity_type, canonical))


def name_key(field: str, name: str, kind: str) -> NameKey:
    """The entity type, canonical name and alias stream of a name (a pure, cached derivation).

    Raises ValidationError naming `field` when the name is too short once normalized.
    """
    try:
        return _name_key(name, kind)
    except ValidationError as e:
        raise ValidationError(field, e.value, e.rule) from None


def resolve(
    staging: Staging,
    field: str,
    name: str,
    kind: str,
    meta: Meta,
    *,
    create: bool = True,
    summary: str | None = None,
) -> Resolution:
    """The entity a name means: by alias or canonical name (following merges), else a new one."""
    known: Resolution | None = staging.known_name(name, kind)
    if known is not None and summary is None:
        return known
    key = name_key(field, name, kind)
    if not key.known_type:
        _logger.info(
            "entity_type.defaulted", field=f"{field}_type", given=kind, used=key.entity_type
        )
    claimed = staging.state("alias", key.alias).entity_id
    if claimed is not None:
        entity, state = _followed(staging, claimed)
        events = decide_summary(state, summary)
        index = staging.emit("entity", entity, events, meta) if events else -1
        found = Resolution(entity, False, -1, state.name or display_name(name))
        staging.resolved[(name, kind)] = found
        return found if index == -1 else msgspec.structs.replace(found, index=index)
    if not create:
        raise NotFoundError(f"{field}: no {key.entity_type} is named {name!r}")
    entity, observed, claim = create_entity(
        key.entity_type, key.canonical, display_name(name), summary
    )
    if staging.state("entity", entity).version:  # every earlier record of it was erased
        observed = msgspec.structs.replace(observed, anew=True)
    index = staging.emit("entity", entity, [observed], meta)
    staging.emit("alias", key.alias, [claim], meta)
    similar = staging.similar
    if similar is not None and similar.names:
        merged = similar.match_new(staging, observed, meta)
        if merged is not None:  # the new name is another name of an entity of its type
            assert merged.entity_id is not None
            found = Resolution(merged.entity_id, False, -1, merged.name or observed.name)
            staging.resolved[(name, kind)] = found
            return msgspec.structs.replace(found, index=len(staging.events) - 1)
    return Resolution(entity, True, index, observed.name)


def follow(staging: Staging, entity: UUID) -> UUID:
    """Follow merge-forward pointers to the entity a (possibly merged) id resolves to now."""
    return _followed(staging, entity)[0]


def _followed(staging: Staging, entity: UUID) -> tuple[UUID, EntityState]:
    end = followed(entity, lambda e: staging.state("entity", e).merged_into)
    state: EntityState = staging.state("entity", end)
    if state.merged_into is not None:
        raise ValidationError("entity", str(end), f"has a merge chain longer than {MAX_MERGE_HOPS}")
    return end, state
