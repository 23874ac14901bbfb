"""Decay passes on a Memory: what the query-time decay rule changed, recorded as events.

Recall computes decay when it runs and leaves out facts under the threshold; nothing is
written when a fact fades. A pass (`record_fades`, `apexmem decay`, run periodically like
eviction) compares what the rule says at the clock's now with the fades already recorded
on the decay stream, and appends one `facts-faded.v1` naming the facts that went under
the threshold since the previous pass and those lifted back above it, each with the rate
that applied. A pass with nothing to record writes nothing. The event carries its moment,
so replay and rebuild never read a clock; query-time decay still ranks and filters.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Final
from uuid import UUID

import msgspec

from apexmem.domain.decay import FADED_BELOW
from apexmem.domain.fading import FADES_ID, fold_fades, plan_pass
from apexmem.domain.settings import Settings
from apexmem.events.envelope import AppendResult, RecordedEvent
from apexmem.events.errors import ConcurrencyError, ValidationError
from apexmem.events.fading import FactFade, FactsFaded
from apexmem.events.ports import LockedLog, Log
from apexmem.readmodels import ReadModels, tracked_position
from apexmem.readmodels.decay import fading_at
from apexmem.readmodels.fading import above_among, faded_facts, sentences_of
from apexmem.readmodels.tables import GRAPH
from apexmem.service.logs import get_logger
from apexmem.service.pipeline import Append, Pipeline, Settled, Versions

__all__ = ["FadePass", "FadedFact", "Fades"]

_logger = get_logger()

_RATE_SET: Final = "decay-rate-set.v1"


class FadedFact(msgspec.Struct, frozen=True, kw_only=True):
    """A fact a pass recorded as faded or restored: the event's entry and its sentence."""

    fact_id: UUID
    fact: str
    edge_type: str
    rate: float
    confidence: float
    observed_at: datetime
    reason: str


class FadePass(msgspec.Struct, frozen=True, kw_only=True):
    """What one decay pass recorded (nothing when `position` is 0)."""

    at: datetime
    """The moment the decay was measured at (the clock's now)."""
    previous: datetime | None
    """The moment of the pass before, if one recorded anything."""
    threshold: float
    faded: list[FadedFact]
    restored: list[FadedFact]
    position: int
    """The pass's log position (0: nothing crossed, nothing written)."""


class _Seen(msgspec.Struct, frozen=True, kw_only=True):
    at: datetime
    planned: FactsFaded | None
    version: int
    """The decay stream's version the plan counted on from."""
    previous: datetime | None
    position: int
    """The read models' position the plan read."""
    sentences: dict[UUID, str]


class Fades:
    """Decay passes: the crossings of the recall threshold, recorded as events."""

    def __init__(
        self,
        pipeline: Pipeline,
        *,
        log: Log,
        store: ReadModels,
        settings: Settings,
        clock: Callable[[], datetime],
        ready: Callable[[], None],
    ) -> None:
        self._pipeline = pipeline
        self._log = log
        self._store = store
        self._default_rate = settings.memory.graph.default_decay_rate
        self._clock = clock
        self._ready = ready

    def record_fades(self, *, actor: str | None = None) -> FadePass:
        """Record which believed facts went under the recall threshold since the previous
        pass and which a reinforcement (or a lower rate) lifted back, measured at the
        clock's now, as one event; append nothing when none crossed."""
        self._pipeline.refuse_if_read_only()

        def prepare(_: int) -> _Pass | Settled[FadePass]:
            seen = self._read(self._clock())
            if seen.planned is None:
                return Settled(_report(seen, position=0))
            return _Pass(seen, actor)

        done = self._pipeline.run("decay", prepare)
        _logger.info(
            "facts.faded",
            faded=len(done.faded),
            restored=len(done.restored),
            position=done.position,
        )
        return done

    def _read(self, at: datetime) -> _Seen:
        passes = self._log.read_stream(FADES_ID)
        previous = _data(passes[-1]) if passes else None
        if previous is not None and at < previous.at:
            raise ValidationError(
                "clock", at.isoformat(), f"is before the previous decay pass ({previous.at})"
            )
        recorded = fold_fades(_data(e) for e in passes)
        self._ready()
        with self._store.read() as connection:
            fading = fading_at(connection, now=at, known_at=None, default=self._default_rate)
            planned = plan_pass(
                at=at,
                previous=None if previous is None else previous.at,
                recorded=recorded,
                faded_now=faded_facts(connection, fading),
                above_now=above_among(connection, sorted(recorded, key=str), fading),
            )
            named = [] if planned is None else [*planned.faded, *planned.restored]
            return _Seen(
                planned=planned,
                previous=None if previous is None else previous.at,
                version=passes[-1].version if passes else 0,
                position=tracked_position(connection, GRAPH),
                sentences=sentences_of(connection, [f.fact_id for f in named]),
                at=at,
            )


class _Pass:
    """One attempt: appended unless an event after the read models' position changed a rate
    or a fact it names (it is then planned again; the decay stream's version catches a pass
    by another writer). Facts first asserted since are left to the next pass, so read
    models a follower keeps a little behind do not hold a pass up."""

    def __init__(self, seen: _Seen, actor: str | None) -> None:
        self._seen, self._actor = seen, actor

    def decide(self, log: LockedLog) -> Append:
        planned = self._seen.planned
        assert planned is not None
        named = {f.fact_id for f in (*planned.faded, *planned.restored)}
        for event in log.read_after(self._seen.position):
            if event.tag == _RATE_SET or getattr(event.data, "fact_id", None) in named:
                raise ConcurrencyError("a rate or a fact the decay pass names changed meanwhile")
        numbered = Versions({FADES_ID: self._seen.version}, actor=self._actor)
        return Append(events=[numbered.event(FADES_ID, planned)])

    def finish(self, appended: AppendResult | None) -> FadePass:
        return _report(self._seen, position=appended.positions[0] if appended else 0)

    def conflicted(self) -> None:
        return None


def _data(event: RecordedEvent) -> FactsFaded:
    assert isinstance(event.data, FactsFaded)
    return event.data


def _report(seen: _Seen, *, position: int) -> FadePass:
    planned = seen.planned

    def listed(fades: list[FactFade]) -> list[FadedFact]:
        return [
            FadedFact(
                fact_id=f.fact_id,
                fact=seen.sentences.get(f.fact_id, ""),
                edge_type=f.edge_type,
                rate=f.rate,
                confidence=f.confidence,
                observed_at=f.observed_at,
                reason=f.reason,
            )
            for f in fades
        ]

    return FadePass(
        at=seen.at,
        previous=seen.previous,
        threshold=FADED_BELOW,
        faded=[] if planned is None else listed(planned.faded),
        restored=[] if planned is None else listed(planned.restored),
        position=position,
    )
