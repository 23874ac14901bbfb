"""The generator's ground truth: what every fact slot says at valid time T, as known at time S.

It is declarative and knows nothing of how apexmem stores a timeline: a single-valued slot
(subject, relation) is, at T, the object of the assertion with the latest valid_from at or
before T (equal valid_froms: the later arrival, a correction); a multi-valued slot (subject,
relation, object) holds at T when any of its assertions starts at or before T, unless a
retraction ends it (at its valid_until, or everywhere when withdrawn). "Known at S" keeps
the assertions and retractions of the appends recorded by S. Times are whole seconds after
`VALID_START` (valid time) and append numbers (transaction time); `FOREVER` stands for "no
valid_at" (the open-ended versions).
"""

from __future__ import annotations

import bisect
import random
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Final, NamedTuple

__all__ = [
    "FOREVER",
    "RECORDED_START",
    "VALID_START",
    "Probe",
    "Triple",
    "Truth",
    "recorded_at",
    "valid_time",
]

VALID_START: Final = datetime(2015, 1, 1, tzinfo=UTC)
"""Valid time zero: generated valid times are seconds after it."""
RECORDED_START: Final = datetime(2024, 1, 1, tzinfo=UTC)
"""Transaction time of append 0; append n is recorded n minutes later."""
FOREVER: Final = 10**12
"""A valid time after every generated one: "valid now" (open-ended versions)."""
_PROBE_OFFSET: Final = timedelta(seconds=30)
_DAY: Final = 86_400

Triple = tuple[str, str, str]
"""(subject display name, relation, object display name)."""


def valid_time(seconds: int) -> datetime:
    """The aware datetime of a generated valid time."""
    return VALID_START + timedelta(seconds=seconds)


def recorded_at(append: int) -> datetime:
    """The transaction time the bench's clock gives append number `append`."""
    return RECORDED_START + timedelta(minutes=append)


class Probe(NamedTuple):
    """An as-of question: a name, a valid time (FOREVER: open-ended versions), and the last
    append known (None: everything, now)."""

    name: str
    valid: int
    known: int | None

    def valid_at(self) -> datetime | None:
        """The question's valid_at (None when it asks for open-ended versions)."""
        return None if self.valid == FOREVER else valid_time(self.valid)

    def known_at(self) -> datetime | None:
        """A moment after append `known` was recorded and before the next one (None: now)."""
        return None if self.known is None else recorded_at(self.known) + _PROBE_OFFSET


class Truth:
    """Every assertion, retraction, alias and first appearance the workload generated."""

    def __init__(self) -> None:
        self.single: dict[tuple[str, str], list[tuple[int, int, str, int]]] = {}
        """(subject, relation) -> (valid_from, sequence, object, append) per assertion."""
        self.multi: dict[Triple, list[tuple[int, int]]] = {}
        """(subject, relation, object) -> (valid_from, append) per assertion."""
        self.retracted: dict[Triple, tuple[int, int | None]] = {}
        """A multi-valued slot's retraction: (append, valid_until or None when withdrawn)."""
        self.aliases: dict[str, tuple[str, int]] = {}
        """alias -> (entity display name, append)."""
        self.kinds: dict[str, str] = {}
        """entity display name -> entity type."""
        self.appeared: list[tuple[int, str]] = []
        """(append, name) in order of first appearance."""
        self.last_append = -1
        """The last append made (the generator sets it when it is done)."""
        self._slots_of: dict[str, list[tuple[str, ...]]] = defaultdict(list)

    def seen(self, name: str, kind: str, append: int) -> None:
        """Note that a command of append `append` names the entity (first time counts)."""
        if name not in self.kinds:
            self.kinds[name] = kind
            self.appeared.append((append, name))

    def assert_single(
        self, key: tuple[str, str], obj: str, start: int, sequence: int, append: int
    ) -> None:
        """An assertion on a single-valued slot."""
        versions = self.single.get(key)
        if versions is None:
            versions = self.single[key] = []
            self._slots_of[key[0]].append(key)
        if all(o != obj for _, _, o, _ in versions):
            self._slots_of[obj].append(key)
        versions.append((start, sequence, obj, append))

    def assert_multi(self, key: Triple, start: int, append: int) -> None:
        """An assertion on a multi-valued slot."""
        starts = self.multi.get(key)
        if starts is None:
            starts = self.multi[key] = []
            self._slots_of[key[0]].append(key)
            self._slots_of[key[2]].append(key)
        starts.append((start, append))

    def retract(self, key: Triple, append: int, until: int | None) -> None:
        """A retraction of a multi-valued slot's only version (None: withdrawn)."""
        self.retracted[key] = (append, until)

    def alias(self, alias: str, owner: str, append: int) -> None:
        """Another name for an entity, from append `append` on."""
        self.aliases[alias] = (owner, append)

    def single_value(self, key: tuple[str, str], valid: int, known: int) -> str | None:
        """The slot's object at valid time `valid` as known after append `known`."""
        best: tuple[int, int, str, int] | None = None
        for version in self.single[key]:
            start, sequence, _, append = version
            later = best is None or (start, sequence) > best[:2]
            if append <= known and start <= valid and later:
                best = version
        return None if best is None else best[2]

    def multi_holds(self, key: Triple, valid: int, known: int) -> bool:
        """Whether the multi-valued slot holds at `valid` as known after append `known`."""
        if not any(a <= known and s <= valid for s, a in self.multi[key]):
            return False
        retraction = self.retracted.get(key)
        if retraction is None or retraction[0] > known:
            return True
        until = retraction[1]
        return until is not None and valid < until

    def about(self, name: str, valid: int, known: int) -> list[Triple]:
        """What `facts_about(name)` must say: every slot touching the entity (or the entity an
        alias known by then names), sorted."""
        entity = name
        if name in self.aliases:
            entity, append = self.aliases[name]
            if append > known:
                return []
        found: list[Triple] = []
        for key in self._slots_of.get(entity, ()):
            if len(key) == 2:
                obj = self.single_value((key[0], key[1]), valid, known)
                if obj is not None and entity in (key[0], obj):
                    found.append((key[0], key[1], obj))
            elif self.multi_holds((key[0], key[1], key[2]), valid, known):
                found.append((key[0], key[1], key[2]))
        return sorted(found)

    def current(self) -> dict[tuple[str, str], str]:
        """Each single-valued slot's current object (the open-ended version now)."""
        return {
            key: max(versions, key=lambda v: (v[0], v[1]))[2]
            for key, versions in self.single.items()
        }

    def probes(self, count: int, seed: int, last_append: int, kinds: set[str]) -> list[Probe]:
        """`count` questions: an entity of `kinds` known by a random append (one in ten an
        alias, known then or not) and a valid time over the data's years."""
        rng = random.Random(seed)
        firsts = [append for append, _ in self.appeared]
        aliases = sorted(self.aliases)
        span = max((s for versions in self.single.values() for s, *_ in versions), default=0)
        asked: list[Probe] = []
        while len(asked) < count:
            known = rng.randrange(last_append + 1)
            valid = rng.randrange(-200 * _DAY, span + 700 * _DAY)
            if aliases and rng.random() < 0.1:
                asked.append(Probe(rng.choice(aliases), valid, known))
                continue
            known_then = bisect.bisect_right(firsts, known)
            if known_then == 0:
                continue
            _, name = self.appeared[rng.randrange(known_then)]
            if self.kinds[name] in kinds:
                asked.append(Probe(name, valid, known))
        return asked
