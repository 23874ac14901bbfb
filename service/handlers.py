"""One handler per command: resolve names, call the domain decider, stage its events."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Final
from uuid import UUID

import msgspec

from apexmem.domain.commands import (
    AddAlias,
    AssertFact,
    LinkFacts,
    MapRelation,
    MergeEntities,
    ObserveEntity,
    RecordMessage,
    RetractFact,
    SetDecayRate,
)
from apexmem.domain.deciders import (
    decide_alias,
    decide_merge,
    decide_message,
    decide_retract,
    decide_revival,
)
from apexmem.domain.identities import POLICY_ID, alias_id, episode_id, object_key, slot_id
from apexmem.domain.links import decide_link, link_stream, parse_link_type
from apexmem.domain.names import (
    canonical_name,
    clean,
    clean_sentence,
    display_name,
    normalize_relation,
)
from apexmem.domain.ontology import Ontology, Resolved
from apexmem.domain.timeline import Proposal, Strategy, decide_assert
from apexmem.domain.types import parse_edge_type, resolve_entity_type
from apexmem.events.base import Event
from apexmem.events.errors import NotFoundError, ValidationError
from apexmem.events.policy import DecayRateSet, RelationMapped
from apexmem.events.ports import LogReads
from apexmem.service.logs import get_logger
from apexmem.service.moves import Moves
from apexmem.service.naming import follow, resolve
from apexmem.service.results import (
    AliasRef,
    EntityRef,
    FactRef,
    LinkRef,
    MergeRef,
    MessageRef,
    PolicyRef,
    Result,
    RetractRef,
)
from apexmem.service.revision import revise
from apexmem.service.staging import Meta, Staging

__all__ = ["HANDLERS", "Context", "Planned", "SlotPlan", "batch_plan", "plan_slot"]

_logger = get_logger()

Planned = tuple[UUID, UUID | None, str, UUID, "SlotPlan"]
"""An assertion's subject id, object id, sentence, slot and slot plan (a tuple: made a
thousand times per batch, and a NamedTuple's constructor runs in Python)."""


class Context(msgspec.Struct, kw_only=True):
    """What every handler needs: the batch, the log, the ontology, the strategy and the time."""

    staging: Staging
    log: LogReads
    ontology: Ontology
    strategy: Strategy
    now: datetime
    cause: str | None
    moves: Moves | None = None
    """Set when a merge must move the source's current facts (the facade sets it)."""
    plans: dict[tuple[str, str, str | None], SlotPlan] = msgspec.field(default_factory=dict)
    """Slot plans of this batch by (relation, edge type, value) as given: most repeat."""
    metas: dict[tuple[str | None, str | None], Meta] = msgspec.field(default_factory=dict)
    """Envelopes of this batch by (actor, episode)."""
    planned: dict[int, Planned] = msgspec.field(default_factory=dict)
    """What the batch's prefetch derived for an assertion (by `id` of the command): the
    handler takes its sentence and slot when its names resolve to the same entities."""


def _meta(context: Context, command: Any) -> Meta:
    """The command's envelope, one per (actor, episode) in a batch: most commands share one."""
    key = (command.actor, command.episode)
    meta = context.metas.get(key)
    if meta is None:
        meta = context.metas[key] = Meta(command.actor, command.episode, context.cause)
    return meta


def _entity_type(field: str, value: str) -> str:
    entity_type, known = resolve_entity_type(value)
    if not known:
        _logger.info("entity_type.defaulted", field=field, given=value, used=entity_type)
    return entity_type


class SlotPlan(msgspec.Struct, frozen=True):
    """What an assertion's slot depends on besides its entities: relation, edge type, value."""

    relation: Resolved
    edge_type: str
    value: str | None

    def slot(self, subject: UUID, object_id: UUID | None, sentence: str) -> UUID:
        """The slot: the object (a note's sentence) is part of the key only when multi-valued."""
        multi = self.relation.cardinality == "many"
        key = object_key(object_id, self.value, sentence) if multi else None
        return slot_id(subject, self.relation.canonical, self.edge_type, key)


def plan_slot(ontology: Ontology, command: AssertFact) -> SlotPlan:
    """Validate and canonicalize the parts of an assertion that choose its slot."""
    return SlotPlan(
        relation=ontology.resolve(normalize_relation("relation", command.relation)),
        edge_type=parse_edge_type(command.edge_type),
        value=clean(command.value) if command.value is not None else None,
    )


def batch_plan(context: Context, command: AssertFact) -> SlotPlan:
    """`plan_slot` with the context's ontology, once per distinct (relation, edge type, value)."""
    key = (command.relation, command.edge_type, command.value)
    plan = context.plans.get(key)
    if plan is None:
        plan = context.plans[key] = plan_slot(context.ontology, command)
    return plan


def _assert(context: Context, command: AssertFact) -> Result:
    meta = _meta(context, command)
    planned = context.planned.get(id(command))
    plan = planned[4] if planned is not None else batch_plan(context, command)
    staging = context.staging
    # A name the batch already knows needs no resolving (most names of a batch).
    subject = staging.known_name(command.subject, command.subject_type) or resolve(
        staging, "subject", command.subject, command.subject_type, meta
    )
    target = None
    object_id = None
    if command.object is not None:
        target = staging.known_name(command.object, command.object_type) or resolve(
            staging, "object", command.object, command.object_type, meta
        )
        object_id = target.entity_id
        if object_id.int == subject.entity_id.int:
            raise ValidationError(
                "object", command.object, f"is the same entity as subject {command.subject!r}"
            )
    # Compared by identity: the prefetch and the handler are given the same id objects (the
    # cache's, or the memoized derivation's); an equal copy only costs a second derivation.
    if planned is None or planned[0] is not subject.entity_id or planned[1] is not object_id:
        sentence = _sentence(command, subject.name, target.name if target else None, plan)
        slot = plan.slot(subject.entity_id, object_id, sentence)
        planned = (subject.entity_id, object_id, sentence, slot, plan)
    slot = planned[3]
    proposal = _proposal(context, command, planned)
    state = staging.state("slot", slot)
    decision = decide_assert(state, proposal, context.strategy)
    verdicts: list[Event] | None = None
    if staging.similar is not None and staging.similar.beliefs:  # closes go first
        revision = revise(staging.similar, staging, proposal, decision, meta)
        if revision.ends is not None and (
            proposal.valid_until is None or revision.ends < proposal.valid_until
        ):  # it arrived after a belief that contradicts it from a later start: it ends there
            proposal = msgspec.structs.replace(proposal, valid_until=revision.ends)
            decision = decide_assert(state, proposal, context.strategy)
            verdicts = revision.verdicts
    index = staging.emit("slot", slot, decision.events, meta) - decision.after
    if verdicts:  # after the fact they name
        staging.emit("slot", slot, verdicts, meta)
    return FactRef(
        position=index,
        fact_id=decision.fact_id,
        slot_id=slot,
        subject_id=subject.entity_id,
        object_id=object_id,
        outcome=decision.outcome,
        supersedes=decision.supersedes,
    )


def _proposal(context: Context, command: AssertFact, planned: Planned) -> Proposal:
    subject_id, object_id, sentence, slot, plan = planned
    valid_from = command.valid_from or context.now
    if command.valid_until is not None and command.valid_until <= valid_from:
        raise ValidationError(
            "valid_until", command.valid_until, f"is not after valid_from {valid_from}"
        )
    value = plan.value
    return Proposal(
        slot_id=slot,
        subject_id=subject_id,
        relation=plan.relation.canonical,
        object_id=object_id,
        value=value,
        object_key=object_key(object_id, value, sentence),
        edge_type=plan.edge_type,
        fact=sentence,
        confidence=command.confidence,
        valid_from=valid_from,
        valid_until=command.valid_until,
        observed_at=command.observed_at or context.now,
        ref=command.ref,
    )


def _sentence(command: AssertFact, subject: str, target: str | None, plan: SlotPlan) -> str:
    """The fact's sentence: as given, or `subject relation object` (cleaned either way)."""
    if command.fact:
        return clean_sentence(command.fact)
    said = target if target is not None else plan.value
    return clean_sentence(" ".join(p for p in (subject, plan.relation.canonical, said) if p))


def _observe(context: Context, command: ObserveEntity) -> Result:
    meta = _meta(context, command)
    staging = context.staging
    resolved = resolve(
        staging, "name", command.name, command.entity_type, meta, summary=command.summary
    )
    index = resolved.index
    if not resolved.created:  # an archived entity observed again is back, by an event
        entity = resolved.entity_id
        events = decide_revival(staging.state("entity", entity))
        if events:
            index = staging.emit("entity", entity, events, meta)
    return EntityRef(position=index, entity_id=resolved.entity_id, created=resolved.created)


def _alias(context: Context, command: AddAlias) -> Result:
    meta = _meta(context, command)
    entity = resolve(context.staging, "entity", command.entity, command.entity_type, meta)
    entity_type = _entity_type("entity_type", command.entity_type)
    alias = canonical_name("alias", command.alias)
    stream = alias_id(entity_type, alias)
    state = context.staging.state("alias", stream)
    outcome, events = decide_alias(
        state, entity.entity_id, alias, display_name(command.alias), entity_type
    )
    index = context.staging.emit("alias", stream, events, meta) if events else -1
    owner = state.entity_id or entity.entity_id
    return AliasRef(
        position=index,
        alias=alias,
        entity_id=entity.entity_id,
        owner=follow(context.staging, owner),
        outcome=outcome,
    )


def _retract(context: Context, command: RetractFact) -> Result:
    slot = context.staging.fact_slots.get(command.fact_id.int)
    if slot is None:
        found = context.log.find(f"fact:{command.fact_id}")
        if found is None:
            raise NotFoundError(f"fact_id: no fact {command.fact_id} in this memory")
        slot = found.stream_id
    events = decide_retract(
        context.staging.state("slot", slot),
        command.fact_id,
        command.valid_until,
        command.reason,
    )
    index = context.staging.emit("slot", slot, events, _meta(context, command))
    return RetractRef(position=index, fact_id=command.fact_id, slot_id=slot)


def _message(context: Context, command: RecordMessage) -> Result:
    if command.episode is None:
        raise ValidationError("episode", None, "is required for a message (the conversation id)")
    stream = episode_id(command.episode)
    decision = decide_message(
        context.staging.state("episode", stream),
        conversation=command.episode,
        speaker=display_name(command.speaker),
        text=command.text,
        at=command.at or context.now,
        ref=command.ref,
    )
    index = context.staging.emit("episode", stream, decision.events, _meta(context, command))
    return MessageRef(position=index, message_id=decision.message_id, episode_id=stream)


def _merge(context: Context, command: MergeEntities) -> Result:
    meta = _meta(context, command)
    entity_type = _entity_type("entity_type", command.entity_type)
    claimed = context.staging.state(
        "alias", alias_id(entity_type, canonical_name("source", command.source))
    ).entity_id
    if claimed is None:
        raise NotFoundError(f"source: no {entity_type} is named {command.source!r}")
    target = resolve(
        context.staging, "target", command.target, command.entity_type, meta, create=False
    )
    chain = [target.entity_id]
    events = decide_merge(
        context.staging.state("entity", claimed),
        context.staging.state("entity", target.entity_id),
        chain,
        command.reason,
        target_name=command.target,
    )
    index = context.staging.emit("entity", claimed, events, meta)
    if context.moves is not None:
        context.moves.move(
            context.staging, context.ontology, context.strategy, meta,
            source=claimed, target=target.entity_id,
        )  # fmt: skip
    context.staging.forget_names()  # names may resolve elsewhere now
    return MergeRef(position=index, source_id=claimed, target_id=target.entity_id)


def _decay_rate(context: Context, command: SetDecayRate) -> Result:
    event = DecayRateSet(edge_type=parse_edge_type(command.edge_type), rate=command.rate)
    index = context.staging.emit("policy", POLICY_ID, [event], _meta(context, command))
    return PolicyRef(position=index)


def _map_relation(context: Context, command: MapRelation) -> Result:
    event = RelationMapped(
        canonical=normalize_relation("canonical", command.canonical),
        aliases=[normalize_relation(f"aliases[{i}]", a) for i, a in enumerate(command.aliases)],
        cardinality=command.cardinality,
    )
    index = context.staging.emit("policy", POLICY_ID, [event], _meta(context, command))
    return PolicyRef(position=index)


def _link(context: Context, command: LinkFacts) -> Result:
    """A link between two facts this batch asserted or the log holds (`decide_link`)."""
    ends = command.source, command.target
    for field, fact_id in zip(("source", "target"), ends, strict=True):
        if fact_id.int not in context.staging.fact_slots and (
            context.log.find(f"fact:{fact_id}") is None
        ):
            raise NotFoundError(f"{field}: no fact {fact_id} in this memory")
    link_type = parse_link_type("link_type", command.link_type)
    stream = link_stream(*ends)
    held = context.staging.state("link", stream).held
    event = decide_link(held, *ends, link_type, command.strength)
    index = -1
    if event is not None:
        if command.origin != "told":
            event = msgspec.structs.replace(event, origin=command.origin, recalls=command.recalls)
        index = context.staging.emit("link", stream, [event], _meta(context, command))
    return LinkRef(
        position=index, source=ends[0], target=ends[1], link_type=link_type,
        strength=command.strength,
    )  # fmt: skip


HANDLERS: Final[dict[type, Callable[[Context, Any], Result]]] = {
    AssertFact: _assert,
    ObserveEntity: _observe,
    AddAlias: _alias,
    RetractFact: _retract,
    RecordMessage: _message,
    MergeEntities: _merge,
    SetDecayRate: _decay_rate,
    MapRelation: _map_relation,
    LinkFacts: _link,
}
