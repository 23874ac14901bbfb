"""A-MEM usage on a Memory: retrieval counts, and their decay passes recorded as events.

Recalls record which facts they returned (`facts-retrieved.v1`), which count up each
fact's retrievals. A decay pass multiplies by `link_weight_decay_lambda` (0.95) the counts
of facts not retrieved within `link_weight_decay_interval_secs` (a day), at most once per
interval. Each pass is a `retrieval-counts-decayed.v1` event on the usage stream carrying
its factor and cutoff, so a rebuild applies the same passes at the same points of the log.
In the same append, the pass links the facts recalled together often enough since the
previous pass (`service.co_occurrence`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from uuid import UUID

import msgspec

from apexmem.domain.identities import USAGE_ID
from apexmem.domain.settings import MAX_DECAY_INTERVAL_SECS, Settings
from apexmem.events.envelope import AppendResult
from apexmem.events.errors import ValidationError
from apexmem.events.policy import RetrievalCountsDecayed
from apexmem.events.ports import LockedLog, Log
from apexmem.readmodels import ReadModels
from apexmem.readmodels.recall import retrieval_counts
from apexmem.readmodels.usage import usage_decays_of
from apexmem.service.arguments import uuid_of
from apexmem.service.co_occurrence import CoOccurrence, Recalls
from apexmem.service.logs import get_logger
from apexmem.service.pipeline import Append, Pipeline, Versions

__all__ = ["Usage", "UsageDecay"]

_logger = get_logger()


class UsageDecay(msgspec.Struct, frozen=True, kw_only=True):
    """What one `decay_usage` did, or why it did nothing."""

    ran: bool
    """False when the last pass is less than an interval old (and `force` was not given)."""
    factor: float
    cutoff: datetime
    """Counts of facts last retrieved before this moment decay (now minus the interval)."""
    decayed: int
    """Retrieval counts multiplied by the pass (0 when it did not run)."""
    position: int
    """The pass's log position (0 when it did not run)."""
    previous: datetime | None
    """When the pass before it ran, if one did."""
    next_due: datetime
    """When the next pass is due (one interval after the latest pass)."""
    linked: int = 0
    """Pairs of facts it linked `related_to` for being recalled together (co-occurrence)."""


class Usage:
    """Retrieval counts and their decay passes."""

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
        self._co_occurrence = CoOccurrence(log, settings.memory.graph.fact_links)
        self._store = store
        self._settings = settings
        self._clock = clock
        self._ready = ready

    def decay_usage(self, *, force: bool = False, actor: str | None = None) -> UsageDecay:
        """Decay the retrieval counts of facts not retrieved within the interval (A-MEM).

        Each count of a fact last retrieved more than `link_weight_decay_interval_secs` ago
        is multiplied by `link_weight_decay_lambda` and truncated, as the reference does;
        counts of 0 stay 0. A pass runs at most once per interval unless `force`; pending
        usage is recorded first, so the pass sees every recall made before it. A pass also
        links the facts recalled together often enough since the previous one.
        """
        self._pipeline.refuse_if_read_only()
        linking = self._settings.memory.graph.note_linking
        factor = linking.link_weight_decay_lambda
        interval = _interval(linking.link_weight_decay_interval_secs)
        self._pipeline.flush_usage()
        decided = self._pipeline.run(
            "usage-decay", lambda _: self._attempt(factor, interval, force=force, actor=actor)
        )
        if not decided.ran:
            return decided
        with self._store.read() as connection:
            [row] = usage_decays_of(connection, at=decided.position)
        done = msgspec.structs.replace(
            decided, decayed=row.decayed, next_due=row.decayed_at + interval
        )
        _logger.info("usage.decayed", **msgspec.structs.asdict(done))
        return done

    def _attempt(
        self, factor: float, interval: timedelta, *, force: bool, actor: str | None
    ) -> _Decay:
        """One try, with the recalls since the latest pass read ahead of the write lock."""
        passes = self._log.read_stream(USAGE_ID)
        recalls = self._co_occurrence.recalls(passes[-1].position if passes else 0)
        window = _Window(self._co_occurrence, recalls)
        return _Decay(factor, interval, self._clock, force=force, actor=actor, window=window)

    def retrieval_counts(self, fact_ids: Iterable[UUID | str]) -> dict[UUID, float]:
        """How often recalls returned each of these fact versions, after the decay passes
        (facts never returned are left out). Usage held for a batch is recorded first."""
        ids = [uuid_of(f"fact_ids[{i}]", f) for i, f in enumerate(fact_ids)]
        self._pipeline.flush_usage()
        self._ready()
        with self._store.read() as connection:
            return retrieval_counts(connection, ids)


class _Window(msgspec.Struct, frozen=True):
    """The co-occurrence planner and the recalls it read ahead for one attempt."""

    planner: CoOccurrence
    recalls: Recalls


class _Decay:
    """One attempt at a decay pass: due or not is decided from the usage stream under the
    write lock."""

    def __init__(
        self,
        factor: float,
        interval: timedelta,
        clock: Callable[[], datetime],
        *,
        force: bool,
        actor: str | None,
        window: _Window,
    ) -> None:
        self._factor, self._interval, self._clock = factor, interval, clock
        self._force, self._actor = force, actor
        self._window = window
        self._decided: UsageDecay | None = None

    def decide(self, log: LockedLog) -> Append:
        passes = log.read_stream(USAGE_ID)
        previous = passes[-1].recorded_at if passes else None
        cutoff = self._clock() - self._interval
        if previous is not None and previous > cutoff and not self._force:
            self._decided = _not_due(self._factor, cutoff, previous, previous + self._interval)
            return Append()
        self._decided = UsageDecay(
            ran=True,
            factor=self._factor,
            cutoff=cutoff,
            decayed=0,
            position=0,
            previous=previous,
            next_due=cutoff,
        )
        data = RetrievalCountsDecayed(factor=self._factor, cutoff=cutoff)
        after = passes[-1].position if passes else 0
        found, links = self._window.planner.links(log, self._window.recalls, after=after)
        self._decided = msgspec.structs.replace(self._decided, linked=len(links))
        numbered = Versions.after({USAGE_ID: passes, **found}, actor=self._actor)
        linked = [numbered.event(stream, link) for stream, link in links]
        return Append(events=[numbered.event(USAGE_ID, data), *linked])

    def finish(self, appended: AppendResult | None) -> UsageDecay:
        assert self._decided is not None
        if appended is None or not self._decided.ran:
            return self._decided
        return msgspec.structs.replace(self._decided, position=appended.positions[0])

    def conflicted(self) -> None:
        self._decided = None


def _interval(seconds: int) -> timedelta:
    """The decay interval, checked again here: Settings built in Python skip the bounds
    `parse_settings` enforces, and one past them overflows the cutoff's datetime."""
    whole = isinstance(seconds, int) and not isinstance(seconds, bool)
    if not whole or not 1 <= seconds <= MAX_DECAY_INTERVAL_SECS:
        raise ValidationError(
            "memory.graph.note_linking.link_weight_decay_interval_secs",
            seconds,
            f"is not a whole number of seconds from 1 to {MAX_DECAY_INTERVAL_SECS} (100 years)",
        )
    return timedelta(seconds=seconds)


def _not_due(factor: float, cutoff: datetime, previous: datetime, due: datetime) -> UsageDecay:
    return UsageDecay(
        ran=False,
        factor=factor,
        cutoff=cutoff,
        decayed=0,
        position=0,
        previous=previous,
        next_due=due,
    )
