"""Forget over HTTP and MCP: the request both servers decode, the call, and its one line."""

from __future__ import annotations

from typing import Annotated

import msgspec

from apexmem.domain.names import MAX_INPUT_NAME_BYTES
from apexmem.events.base import MAX_REF_BYTES
from apexmem.memory import Memory
from apexmem.service.forgetting import ForgetReport

__all__ = ["ForgetIn", "forget", "forgot"]

_Name = Annotated[str, msgspec.Meta(max_length=MAX_INPUT_NAME_BYTES)]
_Ref = Annotated[str, msgspec.Meta(max_length=MAX_REF_BYTES)]


class ForgetIn(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Erase an entity (`entity`, with `entity_type` when the name is ambiguous) or a
    conversation (`episode`) from every view and file; `reason` is recorded in the
    erasure event (keep it free of personal data), `actor` is who asked."""

    reason: _Ref
    entity: _Name | None = None
    entity_type: str | None = None
    episode: _Ref | None = None
    actor: _Ref | None = None


def forget(memory: Memory, request: ForgetIn) -> ForgetReport:
    """Run one forget request."""
    return memory.forget(
        entity=request.entity,
        entity_type=request.entity_type,
        episode=request.episode,
        reason=request.reason,
        actor=request.actor,
    )


def forgot(report: ForgetReport) -> str:
    """What a forget did, in one line."""
    if report.position is None:
        return "Nothing left to erase (forgotten before)."
    return (
        f"Erased {report.erased} records ({report.entities} entities, {report.facts} fact "
        f"versions, {report.messages} messages); erasure event at log position "
        f"{report.position}."
    )
