"""Apply projector output to the read model: one batch, a few executemany statements.

Changes are folded in memory first (a row inserted and revised in the same batch is
written once, with its final values), then flushed table by table. Applying a log in one
batch or in many gives the same rows, which the rebuild property test checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from sqlalchemy import Connection, and_, bindparam, insert, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from apexmem.projections.graph import Change, Insert, Revise, Touch
from apexmem.readmodels.tables import entities, facts, metadata

__all__ = ["apply_changes"]

_TABLES = {table.name: table for table in metadata.sorted_tables}


class _Batch:
    def __init__(self) -> None:
        self.inserts: dict[str, list[dict[str, Any]]] = {}
        self.new_entities: dict[UUID, dict[str, Any]] = {}
        self.touched: dict[UUID, dict[str, Any]] = {}
        self.open_facts: dict[UUID, dict[str, Any]] = {}
        self.expired: list[dict[str, Any]] = []
        """Open rows loaded from the database that this batch closes."""


def apply_changes(connection: Connection, changes: Sequence[Change]) -> None:
    """Write `changes` (in log order) inside the caller's transaction."""
    batch = _Batch()
    _load_open_facts(connection, changes, batch)
    for change in changes:
        if isinstance(change, Insert):
            _insert(batch, change)
        elif isinstance(change, Revise):
            _revise(batch, change)
        else:
            _touch(batch, change)
    _flush(connection, batch)


def _load_open_facts(connection: Connection, changes: Sequence[Change], batch: _Batch) -> None:
    """The open rows of versions revised by this batch but inserted by an earlier one."""
    created = {c.row["fact_id"] for c in changes if isinstance(c, Insert) and c.table == "facts"}
    wanted = list({c.fact_id for c in changes if isinstance(c, Revise)} - created)
    for i in range(0, len(wanted), 500):
        rows = connection.execute(
            select(facts).where(
                facts.c.fact_id.in_(wanted[i : i + 500]), facts.c.expired_at.is_(None)
            )
        )
        for row in rows:
            batch.open_facts[row.fact_id] = {
                **{str(k): v for k, v in row._mapping.items()},
                "_stored": True,
            }


def _insert(batch: _Batch, change: Insert) -> None:
    row = dict(change.row)
    batch.inserts.setdefault(change.table, []).append(row)
    if change.table == "facts":
        batch.open_facts[row["fact_id"]] = row
    elif change.table == "entities":
        batch.new_entities[row["entity_id"]] = row


def _revise(batch: _Batch, change: Revise) -> None:
    current = batch.open_facts.get(change.fact_id)
    if current is None:  # a revision of a version this read model never saw: nothing to show
        return
    current["expired_at"] = change.at
    if current.pop("_stored", False):
        batch.expired.append(
            {
                "b_fact_id": current["fact_id"],
                "b_position": current["position"],
                "b_expired_at": change.at,
            }
        )
    row = {
        **current,
        **change.values,
        "position": change.position,
        "recorded_at": change.at,
        "expired_at": None,
    }
    batch.inserts.setdefault("facts", []).append(row)
    batch.open_facts[change.fact_id] = row


def _ignoring_duplicates(connection: Connection, name: str) -> Any:
    dialect = connection.dialect.name
    if dialect == "sqlite":
        return sqlite_insert(_TABLES[name]).on_conflict_do_nothing()
    if dialect == "postgresql":
        return postgresql_insert(_TABLES[name]).on_conflict_do_nothing()
    raise NotImplementedError(f"read models on {dialect}")


def _touch(batch: _Batch, change: Touch) -> None:
    target = batch.new_entities.get(change.entity_id)
    if target is None:
        target = batch.touched.setdefault(change.entity_id, {})
    target.update(change.values)


def _flush(connection: Connection, batch: _Batch) -> None:
    if batch.expired:
        connection.execute(
            update(facts)
            .where(
                and_(
                    facts.c.fact_id == bindparam("b_fact_id"),
                    facts.c.position == bindparam("b_position"),
                )
            )
            .values(expired_at=bindparam("b_expired_at")),
            batch.expired,
        )
    for name, rows in batch.inserts.items():
        statement = insert(_TABLES[name])
        if name == "mentions":  # a message may name the same entity in several events
            statement = _ignoring_duplicates(connection, name)
        connection.execute(statement, rows)
    by_columns: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for entity_id, values in batch.touched.items():
        row = {"b_id": entity_id, **{f"v_{k}": v for k, v in values.items()}}
        by_columns.setdefault(tuple(sorted(values)), []).append(row)
    for columns, rows in by_columns.items():
        connection.execute(
            update(entities)
            .where(entities.c.entity_id == bindparam("b_id"))
            .values({c: bindparam(f"v_{c}") for c in columns}),
            rows,
        )
