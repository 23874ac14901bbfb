"""The one write path: every state change is an operation run here, and nothing else appends.

An operation prepares an attempt outside the log's write lock (it may read the read models
or ask a model), decides under the lock (reads of the log share the append's transaction),
and gets back what one atomic append wrote. An attempt that can tell afterwards whether what
it read still holds (`DecidedAhead`: a batch of commands) decides its first try before the
lock instead, and under the lock only checks that nothing it read changed meanwhile, so
writers in many processes decide at once and hold the lock only to append.

The pipeline retries the whole attempt on `ConcurrencyError` (one loop for every operation),
projects once the append committed, and then runs the post-commit policies the operation's
kind triggers: declared, never nested in the write that triggered them.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Generic, Protocol, TypeVar, runtime_checkable
from uuid import UUID

import msgspec

from apexmem.events.base import Event
from apexmem.events.envelope import AppendResult, NewEvent, RecordedEvent
from apexmem.events.errors import ApexmemError, ConcurrencyError, DiskFullError
from apexmem.events.policy import FactsRetrieved
from apexmem.events.ports import LockedLog, Log, LogReads
from apexmem.service.logs import get_logger

__all__ = ["Append", "Attempt", "DecidedAhead", "Pipeline", "Policy", "Settled", "Versions"]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

_logger = get_logger()


# gc=False: one per write, never part of a reference cycle.
class Append(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """What one attempt appends: its events (none: nothing to write), in one batch."""

    events: Sequence[NewEvent] = ()
    idempotency_key: str | None = None
    receipt: bytes | None = None
    """Stored with the idempotency key, returned to a repeat of it (see Log.append)."""


class Versions:
    """The next version of each stream an operation appends to, counted on from the versions
    it read (a stream it did not read starts at 1): the one way operations number events."""

    __slots__ = ("_actor", "_at")

    def __init__(self, read: Mapping[UUID, int] | None = None, *, actor: str | None = None):
        self._at = dict(read) if read else {}
        self._actor = actor

    @classmethod
    def after(
        cls, found: Mapping[UUID, Sequence[RecordedEvent]], *, actor: str | None = None
    ) -> Versions:
        """Counting on from streams read from the log (each at its last event's version)."""
        return cls({s: events[-1].version for s, events in found.items() if events}, actor=actor)

    def event(self, stream: UUID, data: Event, *, episode: str | None = None) -> NewEvent:
        """`data` at the next version of `stream`, by this operation's actor."""
        version = self._at[stream] = self._at.get(stream, 0) + 1
        return NewEvent(
            stream_id=stream, version=version, data=data, actor=self._actor, episode=episode
        )


class Attempt(Protocol[T_co]):
    """One try of an operation: decided under the write lock, finished after the commit."""

    def decide(self, log: LockedLog) -> Append:
        """The events to append, decided from the log as it is under the lock; raises
        ConcurrencyError when what the attempt prepared from is out of date."""
        ...

    def finish(self, appended: AppendResult | None) -> T_co:
        """The operation's answer once its append committed (None: nothing was appended).

        The positions are the append's: the attempt's own events first, then any recall
        usage that rode along."""
        ...

    def conflicted(self) -> None:
        """Forget what the attempt learned: its append conflicted and was not written."""
        ...


@runtime_checkable
class DecidedAhead(Attempt[T_co], Protocol[T_co]):
    """An attempt whose first try decides from the log read without its write lock."""

    def decide(self, log: LogReads) -> Append:
        """As `Attempt.decide`, from reads that need not share the append's transaction."""
        ...

    def still_holds(self, log: LockedLog) -> None:
        """Under the lock, before the append: raise ConcurrencyError when anything the
        decision read has changed since (the next try then decides under the lock)."""
        ...


class Settled(Generic[T]):
    """What `prepare` returns when the operation has nothing to append: its answer, given
    without taking the write lock (an automatic pass with nothing new, say)."""

    __slots__ = ("result",)

    def __init__(self, result: T) -> None:
        self.result = result


class Policy(Protocol):
    """A step run after an operation of one of `after` kinds commits (note linking, say)."""

    after: frozenset[str]

    def __call__(self) -> None:
        """Run once the triggering operation committed and was projected."""
        ...


class Pipeline:
    """Runs operations: prepare, decide under the lock, append once, retry, project, policies.

    Recall usage (which facts each recall returned) waits here and rides along in the next
    append of any operation, or is written on its own when `usage_batch` recalls are held.
    """

    def __init__(
        self,
        log: Log,
        *,
        retries: int,
        project: Callable[[], None],
        read_only: str | None = None,
    ) -> None:
        self._log = log
        self._retries = retries
        self._project = project
        self.read_only = read_only
        """Why writes are refused (a replayed directory), or None."""
        self._policies: list[Policy] = []
        self._usage: list[NewEvent] = []
        self.lock = threading.RLock()
        """Held while an operation decides and appends (one at a time per memory)."""

    def declare(self, policy: Policy) -> None:
        """Run `policy` after every operation of its kinds (in the order declared)."""
        self._policies.append(policy)

    def refuse_if_read_only(self) -> None:
        """Raise when this memory takes no writes (a replayed directory)."""
        if self.read_only is not None:
            raise ApexmemError(f"this memory is read-only: {self.read_only}")

    def run(self, kind: str, prepare: Callable[[int], Attempt[T] | Settled[T]]) -> T:
        """Run one operation of `kind`: `prepare(attempt)` is called for every try, outside
        the lock (it may read the read models or ask a model); the attempt it returns decides
        and appends while this memory's lock and the log's write lock are held."""
        self.refuse_if_read_only()
        done = self._tries(kind, prepare)
        try:
            self._project()
        except ApexmemError as e:
            # The append is committed: its answer stands. The read models catch up at the
            # next read or write that can project (a full disk, say, once space is freed).
            _logger.warning("projection.failed", kind=kind, error=str(e))
            return done
        for policy in self._policies:
            if kind in policy.after:
                policy()
        return done

    def _tries(self, kind: str, prepare: Callable[[int], Attempt[T] | Settled[T]]) -> T:
        for tried in range(self._retries + 1):
            attempt = prepare(tried)
            if isinstance(attempt, Settled):
                return attempt.result
            try:
                with self.lock:
                    ahead = attempt if tried == 0 and isinstance(attempt, DecidedAhead) else None
                    early = None if ahead is None else ahead.decide(self._log)
                    if early is not None:
                        self._encode_ahead(early)
                    with self._log.locked() as locked:
                        if ahead is None or early is None:
                            wanted = attempt.decide(locked)
                        else:
                            ahead.still_holds(locked)
                            wanted = early
                        appended, rode = self._append(locked, wanted)
                    del self._usage[:rode]  # committed with the attempt's events
            except ConcurrencyError:
                attempt.conflicted()
                _logger.info("write.conflicted", kind=kind, attempt=tried + 1)
                if tried == self._retries:
                    raise
                continue
            return attempt.finish(appended)
        raise AssertionError("unreachable")

    def _encode_ahead(self, wanted: Append) -> None:
        """Let the log check and encode, before its write lock, the events `_append` will hand
        it (the same objects); only PostgreSQL's log does anything with them."""
        if wanted.events or self._usage:
            self._log.encode_ahead([*wanted.events, *self._usage])

    def _append(self, locked: LockedLog, wanted: Append) -> tuple[AppendResult | None, int]:
        """One append of the attempt's events and the usage held, and how many usage events
        it took (None: nothing to write; an idempotency key alone is recorded)."""
        usage = self._usage
        if not wanted.events and not usage and wanted.idempotency_key is None:
            return None, 0
        events = [*wanted.events, *usage] if usage else wanted.events
        appended = locked.append(
            events, idempotency_key=wanted.idempotency_key, receipt=wanted.receipt
        )
        return appended, 0 if appended.repeated else len(usage)

    # Recall usage -----------------------------------------------------------------------

    def note_usage(self, fact_ids: list[uuid.UUID], *, batch: int) -> None:
        """Hold one recall's usage event; write what is held once `batch` recalls are."""
        if self.read_only is not None or not fact_ids:
            return
        # Each usage event is a stream of its own: recalls in many processes never contend.
        event = NewEvent(stream_id=uuid.uuid4(), version=1, data=FactsRetrieved(fact_ids=fact_ids))
        with self.lock:
            self._usage.append(event)
            due = len(self._usage) >= batch
        if due:
            self.flush_usage()

    def flush_usage(self) -> None:
        """Write the usage held so far (an operation of its own, kind "usage")."""
        if self.read_only is None and self._usage:
            try:
                self.run("usage", lambda _: _Nothing())
            except DiskFullError as e:  # kept: it rides along the next append that fits
                _logger.warning("usage.not_recorded", recalls=len(self._usage), error=str(e))


class _Nothing:
    """An attempt that appends nothing of its own (the held usage rides alone)."""

    def decide(self, log: LockedLog) -> Append:
        return Append()

    def finish(self, appended: AppendResult | None) -> None:
        return None

    def conflicted(self) -> None:
        return None
