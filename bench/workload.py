"""The suite's workload: a seeded agent memory of `facts` assertions and its ground truth.

The names come from bench/recall.py's `World` (people, organizations, places, tools,
projects, events, categories). Single-valued relations (works_at, lives_in, manages) move
through time per subject; one new version in seven is held back and told later (a late,
out-of-order valid time), and a few are corrected (the same valid_from, another object).
Multi-valued relations (uses, knows, depends_on, enjoys, attended, located_in, part_of,
is_a, caused, preceded) cover the four MAGMA edge types; the same slot asserted again with
a random valid time lands before (a historical version) or inside (a reinforcement) what
is known. One assertion in seven repeats an earlier one (a reinforcement). Some new
multi-valued facts are retracted later (withdrawn, or ended at a valid time) and never
asserted again; entities get aliases, which later facts use; a message is recorded every
tenth fact in the conversation (episode) the facts come from.

Items are grouped into appends: `batch` items each, then the last `single` fact
assertions (and what comes between them) one item per append. The ground truth records
each item under its append number, which the bench's clock turns into its recorded time.
"""

from __future__ import annotations

import random
from collections import Counter, deque
from collections.abc import Iterator
from datetime import datetime
from typing import Final, NamedTuple

from recall import Relation, World
from truth import Truth, valid_time

from apexmem import AddAlias, AssertFact, Command, ObserveEntity, RecordMessage

__all__ = ["HOBBIES", "Item", "Retract", "Workload"]

HOBBIES: Final = (
    "hiking", "chess", "cooking", "climbing", "cycling", "gardening", "jazz", "painting",
    "photography", "pottery", "running", "sailing", "skiing", "swimming", "tennis", "yoga",
)  # fmt: skip
_SINGLE: Final = (
    (0.09, Relation("works_at", "person", "organization", verb="works at")),
    (0.05, Relation("lives_in", "person", "location", verb="lives in")),
    (0.06, Relation("manages", "person", "project", "entity")),
)
_MULTI: Final = (
    (0.13, Relation("uses", "person", "tool")),
    (0.10, Relation("knows", "person", "person")),
    (0.07, Relation("depends_on", "project", "tool", verb="depends on")),
    (0.04, Relation("enjoys", "person", "hobby")),
    (0.10, Relation("attended", "person", "event", "temporal")),
    (0.02, Relation("located_in", "organization", "location", verb="is located in")),
    (0.04, Relation("part_of", "project", "organization", "entity", "is part of")),
    (0.03, Relation("is_a", "tool", "concept", "entity", "is a")),
    (0.04, Relation("caused", "event", "event", "causal")),
    (0.03, Relation("caused", "event", "project", "causal")),
    (0.06, Relation("preceded", "event", "event", "temporal")),
)
_MESSAGES: Final = (
    "{person} moved to {organization} last spring.",
    "Ask {person} about {tool}, they use it daily.",
    "{project} slipped again after the {event}.",
    "{person} is into {hobby} these days.",
)
_DAY: Final = 86_400
_YEAR: Final = 365 * _DAY
_HELD_BACK: Final = 1 / 7
_CORRECTION: Final = 0.03
_FRAGILE: Final = 0.06
_ALIAS_PER_ITEM: Final = 0.02
_ALIAS_USE: Final = 0.1
_ALIASED: Final = frozenset({"person", "organization", "tool", "project"})


class Retract(NamedTuple):
    """Retract the version item `target` created: at `valid_until`, or withdraw it (None)."""

    target: int
    valid_until: datetime | None
    reason: str


Item = Command | Retract


class Workload:
    """The items of a memory of `facts` assertions, in appends, and their ground truth."""

    def __init__(self, facts: int, seed: int, *, batch: int = 1_000, single: int = 0) -> None:
        self.facts, self.batch, self.single = facts, batch, min(single, facts)
        self.world = World(facts, seed)
        self.pools = {**self.world.pools, "hobby": list(HOBBIES)}
        self.rng = random.Random(seed + 1)
        self.truth = Truth()
        self.counts: Counter[str] = Counter()
        self.remember: set[int] = set()
        """Items whose created fact id a later Retract needs."""
        self.appends_made = 0
        self.single_phase = False
        """Whether the appends now made hold one item each."""
        self._sequence = self._asserted = self._aliases = 0
        self._pending: dict[tuple[str, str], list[tuple[int, str]]] = {}
        self._frontier: dict[tuple[str, str], tuple[int, str]] = {}
        self._single_keys: list[tuple[str, str]] = []
        self._multi_keys: list[tuple[tuple[str, str, str], Relation]] = []
        self._frozen: set[tuple[str, str, str]] = set()
        self._fragile: deque[tuple[int, tuple[str, str, str], int]] = deque()
        self._edge: dict[str, Relation] = {r.name: r for _, r in _SINGLE}
        self._alias_of: dict[str, tuple[str, int]] = {}

    def appends(self) -> Iterator[list[Item]]:
        """Every append in order; the truth is complete once this is exhausted."""
        first = self._observations()
        for i in range(0, len(first), self.batch):
            yield self._emit(first[i : i + self.batch])
        batched = self.facts - self.single
        while self._asserted < batched:
            items: list[Item] = []
            while len(items) < self.batch and self._asserted < batched:
                items.extend(self._next())
            yield self._emit(items)
        self.single_phase = True
        while self._asserted < self.facts:
            for item in self._next():
                yield self._emit([item])
        self.truth.last_append = self.last_append

    @property
    def asserted(self) -> int:
        """How many fact assertions were made so far."""
        return self._asserted

    @property
    def last_append(self) -> int:
        """The number of the last append made so far."""
        return self.appends_made - 1

    def _emit(self, items: list[Item]) -> list[Item]:
        self.appends_made += 1
        return items

    def _observations(self) -> list[Item]:
        """Summaries of the organizations and tools, before any fact."""
        made: list[Item] = []
        for kind, what in (("organization", "a company"), ("tool", "a software tool")):
            for name in self.pools[kind]:
                made.append(ObserveEntity(name=name, entity_type=kind, summary=f"{name}, {what}"))
                self.truth.seen(name, kind, 0)
        self.counts["observe"] += len(made)
        self._sequence += len(made)
        return made

    def _next(self) -> list[Item]:
        """One fact (with a message every tenth), or an alias, or a retraction."""
        roll = self.rng.random()
        made: list[Item]
        if roll < _ALIAS_PER_ITEM and self.truth.appeared:
            made = [self._alias()]
        elif roll < 2 * _ALIAS_PER_ITEM and self._fragile and self._due():
            made = [self._retract()]
        else:
            made = [self._fact()]
            self._asserted += 1
            if self._asserted % 10 == 0:
                self._sequence += 1
                made.append(self._message())
        self._sequence += 1
        return made

    @property
    def _append(self) -> int:
        """The number of the append being filled."""
        return self.appends_made

    @property
    def _item(self) -> int:
        """The sequence number of the item being made (every append's items, in order)."""
        return self._sequence

    def _fact(self) -> AssertFact:
        roll = self.rng.random()
        for weight, relation in _SINGLE:
            if roll < weight:
                return self._single(relation)
            roll -= weight
        for weight, relation in _MULTI:
            if roll < weight:
                return self._multi(relation)
            roll -= weight
        return self._reinforce()

    def _single(self, relation: Relation) -> AssertFact:
        subject = self.rng.choice(self.pools[relation.subject_type])
        key = (subject, relation.name)
        pending = self._pending.get(key)
        if pending and self.rng.random() < 0.5:
            start, obj = pending.pop(self.rng.randrange(len(pending)))
            self.counts["late"] += 1
        elif key in self.truth.single and self.rng.random() < _CORRECTION:
            start, _, old, _ = self.rng.choice(self.truth.single[key])
            obj = self._other(relation.object_type, old)
            self.counts["correction"] += 1
        else:
            start, obj = self._advance(key, relation)
        return self._asserted_single(key, relation, obj, start)

    def _advance(self, key: tuple[str, str], relation: Relation) -> tuple[int, str]:
        """The slot's next version in valid time; sometimes one more is held back for later."""
        last = self._frontier.get(key)
        if last is None:
            self._single_keys.append(key)
        held = self.rng.random() < _HELD_BACK
        for step in range(2 if held else 1):
            start = (
                self.rng.randrange(4 * _YEAR)
                if last is None
                else last[0] + self.rng.randrange(60 * _DAY, 700 * _DAY)
            )
            last = (start, self._other(relation.object_type, None if last is None else last[1]))
            if held and step == 0:
                self._pending.setdefault(key, []).append(last)
        assert last is not None
        self._frontier[key] = last
        return last

    def _asserted_single(
        self, key: tuple[str, str], relation: Relation, obj: str, start: int
    ) -> AssertFact:
        self.truth.assert_single(key, obj, start, self._item, self._append)
        self.counts[relation.name] += 1
        return self._command(relation, key[0], obj, start)

    def _multi(self, relation: Relation) -> AssertFact:
        subject = self.rng.choice(self.pools[relation.subject_type])
        obj = self._other(relation.object_type, subject)
        key = (subject, relation.name, obj)
        while key in self._frozen:
            obj = self._other(relation.object_type, subject)
            key = (subject, relation.name, obj)
        start = self.rng.randrange(10 * _YEAR)
        if key not in self.truth.multi:
            if self.rng.random() < _FRAGILE:
                self._frozen.add(key)
                self._fragile.append((self._item, key, start))
                self.remember.add(self._item)
            else:
                self._multi_keys.append((key, relation))
        self.truth.assert_multi(key, start, self._append)
        self.counts[relation.name] += 1
        return self._command(relation, subject, obj, start)

    def _reinforce(self) -> AssertFact:
        self.counts["reinforcement"] += 1
        if self._single_keys and (not self._multi_keys or self.rng.random() < 0.3):
            key = self.rng.choice(self._single_keys)
            start, _, obj, _ = self.rng.choice(self.truth.single[key])
            return self._asserted_single(key, self._edge[key[1]], obj, start)
        if not self._multi_keys:
            return self._multi(_MULTI[0][1])
        key3, relation = self.rng.choice(self._multi_keys)
        start, _ = self.rng.choice(self.truth.multi[key3])
        self.truth.assert_multi(key3, start, self._append)
        return self._command(relation, key3[0], key3[2], start)

    def _other(self, kind: str, not_this: str | None) -> str:
        pool = self.pools[kind]
        while (chosen := self.rng.choice(pool)) == not_this:
            pass
        return chosen

    def _command(self, relation: Relation, subject: str, obj: str, start: int) -> AssertFact:
        self.truth.seen(subject, relation.subject_type, self._append)
        self.truth.seen(obj, _entity_type(relation.object_type), self._append)
        sentence = f"{subject} {relation.verb or relation.name} {obj}"
        if relation.name == "caused" and relation.object_type == "project":
            sentence += " to fail"
        named = self._alias_of.get(subject)
        if named is not None and named[1] < self._append and self.rng.random() < _ALIAS_USE:
            subject = named[0]
            self.counts["by_alias"] += 1
        return AssertFact(
            subject=subject,
            subject_type=relation.subject_type,
            relation=relation.name,
            object=obj,
            object_type=_entity_type(relation.object_type),
            edge_type=relation.edge_type,
            fact=sentence,
            confidence=round(self.rng.uniform(0.6, 1.0), 3),
            valid_from=valid_time(start),
            episode=f"session-{self._asserted // 20}",
            actor="bench",
        )

    def _alias(self) -> AddAlias:
        owner = self.rng.choice(self.truth.appeared)[1]
        while (kind := self.truth.kinds[owner]) not in _ALIASED:
            owner = self.rng.choice(self.truth.appeared)[1]
        self._aliases += 1
        alias = f"{owner.split()[0]} #{self._aliases:06d}"
        self.truth.alias(alias, owner, self._append)
        self._alias_of.setdefault(owner, (alias, self._append))
        self.counts["alias"] += 1
        return AddAlias(entity=owner, entity_type=kind, alias=alias, actor="bench")

    def _due(self) -> bool:
        """Whether the oldest fragile fact was created at least two appends' items ago."""
        return self._fragile[0][0] <= self._item - 2 * self.batch

    def _retract(self) -> Retract:
        target, key, start = self._fragile.popleft()
        self.counts["retraction"] += 1
        if self.rng.random() < 0.5:
            self.truth.retract(key, self._append, None)
            return Retract(target, None, "withdrawn")
        until = start + self.rng.randrange(30 * _DAY, 900 * _DAY)
        self.truth.retract(key, self._append, until)
        return Retract(target, valid_time(until), "ended")

    def _message(self) -> RecordMessage:
        pick = {kind: self.rng.choice(names) for kind, names in self.pools.items()}
        text = self.rng.choice(_MESSAGES).format_map(pick)
        self.counts["message"] += 1
        speaker = self.rng.choice(("user", "assistant"))
        return RecordMessage(
            episode=f"session-{self._asserted // 20}", speaker=speaker, text=text, actor="bench"
        )


def _entity_type(pool: str) -> str:
    """The entity type of a name pool (hobbies are concepts)."""
    return "concept" if pool == "hobby" else pool
