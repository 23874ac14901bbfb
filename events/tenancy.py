"""The events of a server's own log (`apexmem serve --tenants ROOT`): what was done to its
tenants as a whole, which no tenant's own log can hold once the tenant is gone."""

from __future__ import annotations

from typing import Annotated

import msgspec

from apexmem.events.base import MAX_REF_BYTES, Event

__all__ = ["TenantDeleted"]


class TenantDeleted(Event, frozen=True, kw_only=True, tag="tenant-deleted.v1"):
    """A tenant's memory was deleted entirely (`apexmem tenants delete`): its directory, or
    its PostgreSQL schema `schema` with the directory that held its token."""

    tenant: str
    reason: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_REF_BYTES)]
    schema: str | None = None
