"""The write path through the Memory facade on a real SQLite log in a temporary directory.

Digest section 7, items 8, 10 and 22 adapted to slots, plus the issue's bad-input rules:
every refused input raises ValidationError naming the field and the value, and writes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from uuid import uuid4

import msgspec
import pytest

from apexmem import (
    ApexmemError,
    FactView,
    Memory,
    MergeEntities,
    NotFoundError,
    RetractFact,
    ValidationError,
    parse_settings,
)
from apexmem.domain.commands import build
from apexmem.domain.identities import episode_id
from apexmem.events import EntityObserved, MessageRecorded
from apexmem.readmodels import dump


def year(value: int) -> datetime:
    """New Year's Day of `value`, UTC."""
    return datetime(value, 1, 1, tzinfo=UTC)


def job(employer: str, **extra: Any) -> dict[str, Any]:
    """Fields of `Alice works_at <employer>`, with typed entities."""
    return {
        "subject": "Alice",
        "subject_type": "person",
        "relation": "works_at",
        "object": employer,
        "object_type": "organization",
        **extra,
    }


def facts_of(memory: Memory, relation: str) -> list[FactView]:
    """Every version of every fact with this relation, by a full replay."""
    return [f for f in memory.snapshot().facts if f.relation == relation]


def current_of(memory: Memory, relation: str) -> list[FactView]:
    """The current facts with this relation."""
    return [f for f in memory.current_facts() if f.relation == relation]


# Aliases (item 8) ---------------------------------------------------------------------------


def test_a_fact_about_an_alias_in_any_case_lands_on_the_aliased_entity(memory: Memory) -> None:
    claim = memory.add_alias(entity="Rust", entity_type="language", alias="rust-lang")

    fact = memory.assert_fact(
        subject="RUST-LANG", subject_type="language", relation="uses", object="LLVM"
    )

    assert claim.outcome == "claimed"
    assert fact.subject_id == claim.entity_id


def test_an_alias_of_a_language_is_not_found_for_a_tool(memory: Memory) -> None:
    claim = memory.add_alias(entity="CPython", entity_type="language", alias="python")

    tool = memory.assert_fact(subject="python", subject_type="tool", relation="uses", object="pip")

    assert tool.subject_id != claim.entity_id


def test_the_first_claim_of_an_alias_wins_and_a_second_is_refused(memory: Memory) -> None:
    first = memory.add_alias(entity="CPython", entity_type="language", alias="py3")
    position = memory.log.last_position()

    second = memory.add_alias(entity="PyPy", entity_type="language", alias="py3")

    assert second.outcome == "refused"
    assert second.owner == first.entity_id
    assert second.entity_id != first.entity_id
    assert memory.log.last_position() > position  # PyPy itself was created
    fact = memory.assert_fact(subject="py3", subject_type="language", relation="uses", object="gcc")
    assert fact.subject_id == first.entity_id


def test_claiming_an_alias_again_for_its_owner_changes_nothing(memory: Memory) -> None:
    first = memory.add_alias(entity="Rust", entity_type="language", alias="rust-lang")
    position = memory.log.last_position()

    again = memory.add_alias(entity="rust", entity_type="language", alias="Rust-Lang")

    assert again.outcome == "unchanged"
    assert again.owner == first.entity_id
    assert memory.log.last_position() == position


def test_names_differing_only_in_case_resolve_to_one_entity(memory: Memory) -> None:
    first = memory.observe_entity(name="Rust", entity_type="language")

    second = memory.observe_entity(name="rust", entity_type="language")

    assert first.created
    assert not second.created
    assert second.entity_id == first.entity_id


def test_an_entity_is_found_again_by_its_own_canonical_name(memory: Memory) -> None:
    # Regression: a cut to 512 bytes could leave a trailing space in the canonical name, and
    # looking the entity up by that stored name then created a second entity.
    created = memory.observe_entity(name="a" * 511 + " b", entity_type="concept")
    stored = next(e.data for e in memory.events(tags=["entity-observed.v1"]))
    assert isinstance(stored, EntityObserved)

    found = memory.observe_entity(name=stored.canonical_name, entity_type="concept")

    assert found.entity_id == created.entity_id


# Reinforcement (item 10) --------------------------------------------------------------------


@pytest.mark.parametrize(("first", "second"), [(0.5, 0.9), (0.9, 0.5)])
def test_the_same_fact_twice_reinforces_it_with_the_higher_confidence(
    memory: Memory, first: float, second: float
) -> None:
    original = memory.assert_fact(**job("Acme", confidence=first, valid_from=year(2020)))

    again = memory.assert_fact(**job("acme", confidence=second, valid_from=year(2021)))

    assert original.outcome == "created"
    assert again.outcome == "reinforced"
    assert again.fact_id == original.fact_id
    [fact] = facts_of(memory, "works_at")
    assert fact.confidence == max(first, second)
    assert fact.valid_from == year(2020)


def test_a_reinforcement_appends_one_event_to_the_slot(memory: Memory) -> None:
    original = memory.assert_fact(**job("Acme", valid_from=year(2020)))

    memory.assert_fact(**job("Acme", valid_from=year(2020)))

    tags = [entry.tag for entry in memory.history(fact=original.fact_id)]
    assert tags == ["fact-asserted.v1", "fact-reinforced.v1"]


def test_a_reinforcement_in_other_words_shows_the_new_sentence_and_keeps_the_old(
    memory: Memory,
) -> None:
    """Issue 28 item 11: nothing told to the memory is lost, and the newest sentence shows."""
    engineer = "Alice works at Acme as an engineer"
    manager = "Alice works at Acme as a manager"
    original = memory.assert_fact(**job("Acme", fact=engineer, valid_from=year(2020)))
    [before] = current_of(memory, "works_at")

    again = memory.assert_fact(**job("Acme", fact=manager, valid_from=year(2020)))

    assert again.outcome == "reinforced"
    assert [f.fact for f in memory.facts_about("Alice")] == [manager]
    assert [f.fact for f in current_of(memory, "works_at")] == [manager]
    assert [f.fact for f in facts_of(memory, "works_at")] == [manager]
    then = memory.as_of(known_at=before.recorded_at)
    assert [f.fact for f in then.facts_about("Alice")] == [engineer]
    *_, reinforced = memory.history(fact=original.fact_id)
    assert reinforced.tag == "fact-reinforced.v1"
    assert reinforced.data.fact == manager
    assert [h.fact_id for h in memory.search_facts("manager")] == [original.fact_id]
    assert [h.text for h in memory.recall("manager").hits if h.kind == "fact"] == [manager]


def test_a_reinforcement_in_the_same_words_records_no_sentence(memory: Memory) -> None:
    sentence = "Alice works at Acme"
    original = memory.assert_fact(**job("Acme", fact=sentence, valid_from=year(2020)))

    memory.assert_fact(**job("Acme", fact=sentence, valid_from=year(2020)))

    *_, reinforced = memory.history(fact=original.fact_id)
    assert reinforced.data.fact is None
    assert b'"fact"' not in msgspec.json.encode(reinforced.data)


def test_a_rebuild_after_a_reinforcement_in_other_words_gives_the_same_rows(
    memory: Memory,
) -> None:
    memory.assert_fact(**job("Acme", fact="Alice is an engineer at Acme", valid_from=year(2020)))
    memory.assert_fact(**job("Acme", fact="Alice manages at Acme", valid_from=year(2021)))
    memory.assert_fact(**job("Acme", fact="Alice is an engineer at Acme", valid_from=year(2022)))
    with memory.store.read() as connection:
        tables = dump(connection)

    memory.rebuild()

    with memory.store.read() as connection:
        assert dump(connection) == tables
    assert [h.row.fact for h in memory.search_facts("engineer")] == ["Alice is an engineer at Acme"]
    assert memory.search_facts("manages") == []


def test_a_relation_alias_with_spaces_lands_in_the_canonical_slot(memory: Memory) -> None:
    original = memory.assert_fact(**job("Acme", valid_from=year(2020)))

    again = memory.assert_fact(**job("Acme", relation="Employed By", valid_from=year(2021)))

    assert again.outcome == "reinforced"
    assert again.slot_id == original.slot_id


# Supersession (item 22) ---------------------------------------------------------------------


def test_a_second_employer_supersedes_the_first(memory: Memory) -> None:
    old = memory.assert_fact(**job("Acme", valid_from=year(2020)))

    new = memory.assert_fact(**job("Globex", valid_from=year(2022)))

    assert new.outcome == "superseded"
    assert new.fact_id != old.fact_id
    assert new.supersedes == old.fact_id
    assert new.slot_id == old.slot_id
    versions = {f.fact_id: f for f in facts_of(memory, "works_at")}
    assert versions[old.fact_id].valid_until == year(2022)
    assert versions[old.fact_id].superseded_by == new.fact_id
    assert versions[new.fact_id].supersedes == old.fact_id
    assert versions[new.fact_id].current


def test_the_history_shows_the_old_version_closed_before_the_new_one_is_asserted(
    memory: Memory,
) -> None:
    old = memory.assert_fact(**job("Acme", valid_from=year(2020)))
    new = memory.assert_fact(**job("Globex", valid_from=year(2022)))

    history = memory.history(fact=new.fact_id)

    assert [entry.tag for entry in history] == [
        "fact-asserted.v1",
        "fact-superseded.v1",
        "fact-asserted.v1",
    ]
    closed, asserted = history[1], history[2]
    assert closed.data.fact_id == old.fact_id
    assert asserted.data.fact_id == new.fact_id
    assert closed.position + 1 == asserted.position
    assert closed.recorded_at == asserted.recorded_at


def test_three_employers_leave_exactly_one_current_version(memory: Memory) -> None:
    for employer, start in (("Acme", 2019), ("Globex", 2021), ("Initech", 2023)):
        memory.assert_fact(**job(employer, valid_from=year(start)))

    current = current_of(memory, "works_at")

    assert [f.object for f in current] == ["Initech"]
    assert len(facts_of(memory, "works_at")) == 3


def test_three_employers_at_the_default_valid_time_leave_one_current_version(
    memory: Memory,
) -> None:
    for employer in ("Acme", "Globex", "Initech"):
        memory.assert_fact(**job(employer))

    current = current_of(memory, "works_at")

    assert [f.object for f in current] == ["Initech"]


def test_a_multi_valued_relation_keeps_one_current_fact_per_object(memory: Memory) -> None:
    vim = memory.assert_fact(subject="Bob", relation="uses", object="Vim")

    emacs = memory.assert_fact(subject="Bob", relation="uses", object="Emacs")

    assert emacs.outcome == "created"
    assert emacs.slot_id != vim.slot_id
    assert sorted(f.object or "" for f in current_of(memory, "uses")) == ["Emacs", "Vim"]


def test_different_notes_of_a_multi_valued_relation_are_different_facts(memory: Memory) -> None:
    note: dict[str, Any] = {"subject": "Caroline", "subject_type": "person", "relation": "observed"}
    first = memory.assert_fact(**note, fact="Caroline went to a support group")
    second = memory.assert_fact(**note, fact="Caroline likes painting")
    again = memory.assert_fact(**note, fact="Caroline likes painting")
    assert (first.outcome, second.outcome, again.outcome) == ("created", "created", "reinforced")
    assert first.slot_id != second.slot_id == again.slot_id
    assert sorted(f.fact for f in memory.facts_about("Caroline")) == [
        "Caroline likes painting",
        "Caroline went to a support group",
    ]


def test_the_same_relation_with_another_edge_type_is_another_slot(memory: Memory) -> None:
    semantic = memory.assert_fact(subject="Build", relation="depends_on", object="Cache")

    causal = memory.assert_fact(
        subject="Build", relation="depends_on", object="Cache", edge_type="causal"
    )

    assert causal.outcome == "created"
    assert causal.slot_id != semantic.slot_id
    assert causal.fact_id != semantic.fact_id
    assert len(current_of(memory, "depends_on")) == 2


def test_opposite_directions_are_separate_facts(memory: Memory) -> None:
    forward = memory.assert_fact(subject="Alice", relation="knows", object="Bob")

    backward = memory.assert_fact(subject="Bob", relation="knows", object="Alice")

    assert backward.outcome == "created"
    assert backward.slot_id != forward.slot_id


def test_a_late_fact_with_an_earlier_valid_from_becomes_historical(memory: Memory) -> None:
    current = memory.assert_fact(**job("Acme", valid_from=year(2022)))

    late = memory.assert_fact(**job("Initech", valid_from=year(2020)))

    assert late.outcome == "historical"
    assert late.supersedes is None
    versions = {f.fact_id: f for f in facts_of(memory, "works_at")}
    assert versions[late.fact_id].valid_from == year(2020)
    assert versions[late.fact_id].valid_until == year(2022)
    assert versions[current.fact_id].current
    assert [f.fact_id for f in current_of(memory, "works_at")] == [current.fact_id]


def test_a_fact_asserted_with_an_end_is_historical_and_not_current(memory: Memory) -> None:
    ended = memory.assert_fact(**job("Acme", valid_from=year(2020), valid_until=year(2021)))

    assert ended.outcome == "historical"
    assert current_of(memory, "works_at") == []


def test_under_the_confidence_strategy_a_weaker_conflicting_fact_is_an_alternative(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    settings = parse_settings('[memory.graph]\nconflict_strategy = "confidence"\n')[0]
    with Memory.open(tmp_path / "mem", settings=settings, clock=clock) as memory:
        strong = memory.assert_fact(**job("Acme", confidence=0.9, valid_from=year(2020)))

        weak = memory.assert_fact(**job("Globex", confidence=0.5, valid_from=year(2022)))

        assert weak.outcome == "alternative"
        assert weak.supersedes is None
        assert [f.fact_id for f in current_of(memory, "works_at")] == [strong.fact_id]
        versions = {f.fact_id: f for f in facts_of(memory, "works_at")}
        assert versions[weak.fact_id].standing == "alternative"


def test_under_the_confidence_strategy_a_stronger_conflicting_fact_supersedes(
    tmp_path: Path, clock: Callable[[], datetime]
) -> None:
    settings = parse_settings('[memory.graph]\nconflict_strategy = "confidence"\n')[0]
    with Memory.open(tmp_path / "mem", settings=settings, clock=clock) as memory:
        weak = memory.assert_fact(**job("Acme", confidence=0.5, valid_from=year(2020)))

        strong = memory.assert_fact(**job("Globex", confidence=0.9, valid_from=year(2022)))

        assert strong.outcome == "superseded"
        assert strong.supersedes == weak.fact_id


# Retraction ---------------------------------------------------------------------------------


def test_a_retraction_with_an_end_closes_the_version_in_valid_time(memory: Memory) -> None:
    fact = memory.assert_fact(**job("Acme", valid_from=year(2020)))

    memory.retract(fact.fact_id, valid_until=year(2021))

    [version] = facts_of(memory, "works_at")
    assert version.valid_until == year(2021)
    assert version.standing == "believed"
    assert not version.current


def test_a_retraction_without_an_end_withdraws_the_version(memory: Memory) -> None:
    fact = memory.assert_fact(**job("Acme", valid_from=year(2020)))

    retracted = memory.retract(fact.fact_id, reason="wrong person")

    [version] = facts_of(memory, "works_at")
    assert retracted.fact_id == fact.fact_id
    assert retracted.slot_id == fact.slot_id
    assert version.standing == "withdrawn"
    assert version.valid_until is None
    assert not version.current


def test_retracting_a_fact_twice_raises_and_writes_nothing(memory: Memory) -> None:
    fact = memory.assert_fact(**job("Acme", valid_from=year(2020)))
    memory.retract(fact.fact_id)
    position = memory.log.last_position()

    with pytest.raises(ValidationError) as caught:
        memory.retract(fact.fact_id)

    assert caught.value.field == "fact_id"
    assert str(fact.fact_id) in str(caught.value)
    assert memory.log.last_position() == position


def test_ending_a_fact_twice_at_the_same_time_raises(memory: Memory) -> None:
    fact = memory.assert_fact(**job("Acme", valid_from=year(2020)))
    memory.retract(fact.fact_id, valid_until=year(2021))

    with pytest.raises(ValidationError) as caught:
        memory.retract(fact.fact_id, valid_until=year(2021))

    assert caught.value.field == "valid_until"


def test_a_retraction_ending_before_the_fact_began_is_refused(memory: Memory) -> None:
    fact = memory.assert_fact(**job("Acme", valid_from=year(2020)))
    position = memory.log.last_position()

    with pytest.raises(ValidationError) as caught:
        memory.retract(fact.fact_id, valid_until=year(2019))

    assert caught.value.field == "valid_until"
    assert memory.log.last_position() == position


def test_retracting_an_unknown_fact_raises_not_found(memory: Memory) -> None:
    memory.assert_fact(**job("Acme"))
    unknown = uuid4()

    with pytest.raises(NotFoundError) as caught:
        memory.retract(unknown)

    assert str(unknown) in str(caught.value)


def test_a_retraction_with_a_naive_end_is_refused(memory: Memory) -> None:
    fact = memory.assert_fact(**job("Acme", valid_from=year(2020)))
    position = memory.log.last_position()

    with pytest.raises(ValidationError) as caught:
        memory.retract(fact.fact_id, valid_until=datetime(2021, 1, 1))

    assert caught.value.field == "valid_until"
    assert memory.log.last_position() == position


# Bad input ----------------------------------------------------------------------------------

BAD_FIELDS: list[tuple[str, object]] = [
    ("valid_from", datetime(2024, 1, 1)),
    ("valid_until", datetime(2030, 1, 1)),
    ("observed_at", datetime(2024, 1, 1, 12)),
    ("subject", "g" * 5_000),
    ("subject", "   "),
    ("object", "\t\n"),
    ("confidence", 1.5),
    ("confidence", -0.1),
    ("confidence", math.nan),
    ("confidence", math.inf),
    ("confidence", -math.inf),
    ("edge_type", "Semantic"),
    ("edge_type", "sematic"),
    ("edge_type", ""),
    ("fact", "x" * 2049),
    ("fact", "é" * 1025),
    ("relation", "   "),
    # Limits in bytes, not characters: each of these is under its limit in characters.
    ("actor", "é" * 129),
    ("episode", "😀" * 65),
    ("ref", "é" * 129),
    ("subject", "é" * 2049),
    ("object", "😀" * 1025),
    # Aware, but outside the years 1-9999 once in UTC: the log could not read it back.
    ("valid_from", datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1)))),
    ("valid_until", datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-2)))),
]


def same(found: object, expected: object) -> bool:
    """Equality that treats NaN as equal to NaN."""
    if isinstance(found, float) and isinstance(expected, float) and math.isnan(expected):
        return math.isnan(found)
    return found == expected


@pytest.mark.parametrize(("field", "value"), BAD_FIELDS)
def test_a_bad_field_raises_a_validation_error_naming_it_and_writes_nothing(
    memory: Memory, field: str, value: object
) -> None:
    memory.assert_fact(**job("Acme", valid_from=year(2020)))
    position = memory.log.last_position()

    with pytest.raises(ValidationError) as caught:
        memory.assert_fact(**{**job("Globex", valid_from=year(2022)), field: value})

    error = caught.value
    assert isinstance(error, ApexmemError)
    assert error.field == field
    assert str(error).startswith(f"{field}: ")
    shown = repr(value.isoformat() if isinstance(value, datetime) else value)
    assert shown[:40] in str(error)
    assert same(error.value, value) or (isinstance(value, str) and len(value) > 60)
    assert memory.log.last_position() == position


def test_a_fact_whose_object_is_its_subject_is_refused(memory: Memory) -> None:
    position = memory.log.last_position()

    with pytest.raises(ValidationError) as caught:
        memory.assert_fact(
            subject="Alice",
            subject_type="person",
            relation="knows",
            object=" ALICE ",
            object_type="person",
        )

    assert caught.value.field == "object"
    assert caught.value.value == " ALICE "
    assert "' ALICE '" in str(caught.value)
    assert memory.log.last_position() == position


def test_a_fact_whose_object_is_an_alias_of_its_subject_is_refused(memory: Memory) -> None:
    memory.add_alias(entity="Alice", entity_type="person", alias="Ally")
    position = memory.log.last_position()

    with pytest.raises(ValidationError) as caught:
        memory.assert_fact(
            subject="Alice",
            subject_type="person",
            relation="knows",
            object="ALLY",
            object_type="person",
        )

    assert caught.value.field == "object"
    assert caught.value.value == "ALLY"
    assert memory.log.last_position() == position


def test_a_fact_with_both_an_object_and_a_value_is_refused(memory: Memory) -> None:
    with pytest.raises(ValidationError) as caught:
        memory.assert_fact(subject="Alice", relation="likes", object="Tea", value="green tea")

    assert caught.value.field == "value"
    assert memory.log.last_position() == 0


def test_a_fact_ending_before_it_begins_is_refused(memory: Memory) -> None:
    with pytest.raises(ValidationError) as caught:
        memory.assert_fact(**job("Acme", valid_from=year(2021), valid_until=year(2020)))

    assert caught.value.field == "valid_until"
    assert memory.log.last_position() == 0


def test_an_unknown_field_is_refused_by_name(memory: Memory) -> None:
    with pytest.raises(ValidationError) as caught:
        memory.assert_fact(**job("Acme", colour="blue"))

    assert (caught.value.field, caught.value.value) == ("colour", "blue")
    assert memory.log.last_position() == 0


def test_a_batch_with_one_invalid_confidence_writes_nothing_and_names_its_index(
    memory: Memory,
) -> None:
    facts = [job("Acme", valid_from=year(2020)), job("Globex", confidence=3.0), job("Initech")]

    with pytest.raises(ValidationError) as caught:
        memory.assert_facts(facts)

    assert caught.value.field == "facts[1].confidence"
    assert caught.value.value == 3.0
    assert memory.log.last_position() == 0


@pytest.mark.parametrize(
    ("field", "value"),
    [("edge_type", "bogus"), ("subject", " "), ("relation", "  "), ("object", "Alice")],
)
def test_a_batch_with_one_fact_refused_while_resolving_names_its_index(
    memory: Memory, field: str, value: str
) -> None:
    # Regression: errors raised while resolving (edge type, name length, relation, subject
    # equal to object) were not prefixed with `facts[i].`, only msgspec's field errors were.
    bad = {**job("Globex"), "object_type": "person", field: value}
    facts = [job("Acme", valid_from=year(2020)), bad, job("Initech")]

    with pytest.raises(ValidationError) as caught:
        memory.assert_facts(facts)

    assert memory.log.last_position() == 0
    assert caught.value.field == f"facts[1].{field}"


def test_a_valid_batch_is_written_in_one_append_with_one_result_per_fact(
    memory: Memory,
) -> None:
    facts = [
        job("Acme", valid_from=year(2020)),
        job("Globex", valid_from=year(2022)),
        {"subject": "Bob", "relation": "uses", "object": "Vim"},
    ]

    results = memory.assert_facts(facts)

    assert [r.outcome for r in results] == ["created", "superseded", "created"]
    assert results[1].supersedes == results[0].fact_id
    times = {e.recorded_at for e in memory.events()}
    assert len(times) == 1


# Idempotency --------------------------------------------------------------------------------


def test_asserting_with_a_used_idempotency_key_returns_the_first_result_and_writes_nothing(
    memory: Memory,
) -> None:
    first = memory.assert_fact(idempotency_key="k", **job("Acme", valid_from=year(2020)))
    position = memory.log.last_position()

    second = memory.assert_fact(idempotency_key="k", **job("Acme", valid_from=year(2020)))

    assert second == first
    assert second.outcome == "created"
    assert memory.log.last_position() == position


def test_a_used_idempotency_key_with_other_commands_still_returns_the_first_results(
    memory: Memory,
) -> None:
    first = memory.assert_fact(idempotency_key="k", **job("Acme", valid_from=year(2020)))
    position = memory.log.last_position()

    second = memory.assert_fact(idempotency_key="k", **job("Globex", valid_from=year(2022)))

    assert second == first
    assert memory.log.last_position() == position
    assert [f.object for f in current_of(memory, "works_at")] == ["Acme"]


def test_the_idempotency_key_is_recorded_as_the_cause_of_each_event(memory: Memory) -> None:
    memory.assert_fact(idempotency_key="request-7", **job("Acme"))

    causes = {e.cause for e in memory.events()}

    assert causes == {"request-7"}


def test_retracting_with_a_used_idempotency_key_returns_the_first_result(
    memory: Memory,
) -> None:
    # Regression: the writer used to decide before the log checked the key, so a repeated
    # retraction failed with "already retracted" instead of returning the first result.
    fact = memory.assert_fact(**job("Acme", valid_from=year(2020)))
    command = build(RetractFact, {"fact_id": str(fact.fact_id)})
    first = memory.execute([command], idempotency_key="retract-1")
    position = memory.log.last_position()

    second = memory.execute([command], idempotency_key="retract-1")

    assert second == first
    assert memory.log.last_position() == position


def test_merging_with_a_used_idempotency_key_returns_the_first_result(memory: Memory) -> None:
    memory.observe_entity(name="Robert", entity_type="person")
    memory.observe_entity(name="Bob", entity_type="person")
    fields = {"source": "Bob", "target": "Robert", "entity_type": "person"}
    first = memory.execute([build(MergeEntities, fields)], idempotency_key="merge-1")
    position = memory.log.last_position()

    second = memory.execute([build(MergeEntities, fields)], idempotency_key="merge-1")

    assert second == first
    assert memory.log.last_position() == position


# Messages and merges ------------------------------------------------------------------------


def test_recording_messages_returns_their_ids_and_the_episode(memory: Memory) -> None:
    first = memory.record_message(episode="conv-1", speaker="user", text="I moved to Paris")

    second = memory.record_message(episode="conv-1", speaker="assistant", text="Noted.")

    assert first.episode_id == second.episode_id == episode_id("conv-1")
    assert first.message_id != second.message_id
    found = memory.log.find(f"message:{first.message_id}")
    assert found is not None
    assert isinstance(found.data, MessageRecorded)
    assert found.data.text == "I moved to Paris"
    assert found.episode == "conv-1"
    assert [e.tag for e in memory.events()] == [
        "episode-started.v1",
        "message-recorded.v1",
        "message-recorded.v1",
    ]


def test_a_message_without_an_episode_is_refused(memory: Memory) -> None:
    with pytest.raises(ValidationError) as caught:
        memory.record_message(speaker="user", text="hello")

    assert caught.value.field == "episode"
    assert memory.log.last_position() == 0


def test_a_blank_message_is_refused(memory: Memory) -> None:
    with pytest.raises(ValidationError) as caught:
        memory.record_message(episode="conv-1", speaker="user", text="  \n ")

    assert caught.value.field == "text"
    assert memory.log.last_position() == 0


def test_a_fact_about_a_merged_entity_lands_on_the_merge_target(memory: Memory) -> None:
    target = memory.observe_entity(name="Robert", entity_type="person")
    source = memory.observe_entity(name="Bob", entity_type="person")

    merged = memory.merge(source="Bob", target="Robert", entity_type="person")
    fact = memory.assert_fact(
        subject="bob", subject_type="person", relation="lives_in", object="Paris"
    )

    assert merged.source_id == source.entity_id
    assert merged.target_id == target.entity_id
    assert fact.subject_id == target.entity_id
    [view] = current_of(memory, "lives_in")
    assert view.subject == "Robert"


def test_merging_an_unknown_entity_raises_not_found(memory: Memory) -> None:
    memory.observe_entity(name="Robert", entity_type="person")

    with pytest.raises(NotFoundError):
        memory.merge(source="Bobby", target="Robert", entity_type="person")

    assert memory.log.last_position() == 2


def test_merging_an_entity_into_itself_is_refused(memory: Memory) -> None:
    memory.add_alias(entity="Robert", entity_type="person", alias="Bob")
    position = memory.log.last_position()

    with pytest.raises(ValidationError):
        memory.merge(source="Bob", target="Robert", entity_type="person")

    assert memory.log.last_position() == position


def test_the_log_verifies_after_a_mix_of_writes(memory: Memory) -> None:
    memory.assert_fact(**job("Acme", valid_from=year(2020)))
    memory.assert_fact(**job("Globex", valid_from=year(2022)))
    memory.add_alias(entity="Alice", entity_type="person", alias="Ally")
    memory.record_message(episode="conv-1", speaker="user", text="hello")

    report = memory.verify()

    assert report.ok
    assert report.events_checked == memory.log.last_position()
    assert report.first_bad_position is None


@pytest.mark.parametrize("bounded_first", [False, True])
def test_a_bounded_claim_about_the_same_object_ends_it_whichever_arrives_first(
    memory: Memory, bounded_first: bool
) -> None:
    claims = [job("Acme", valid_from=year(2015)), job("Acme", valid_from=year(2021))]
    claims[1]["valid_until"] = year(2022)  # "Alice worked at Acme 2021-2022"
    for claim in reversed(claims) if bounded_first else claims:
        memory.assert_fact(**claim)

    def at(when: int) -> list[str | None]:
        return [f.object for f in memory.facts_about("Alice", valid_at=year(when))]

    assert (at(2016), at(2021), at(2023)) == (["Acme"], ["Acme"], [])
    assert current_of(memory, "works_at") == []
    ends = [e.data.valid_until for e in memory.events(tags=["fact-asserted.v1"])]
    assert year(2022) in ends  # the end given is in the log, not lost in a reinforcement


@pytest.mark.parametrize("reading", [datetime(2024, 1, 1), "2024-01-01T00:00:00Z"])
def test_a_clock_that_reads_no_timezone_is_refused_naming_it_and_writes_nothing(
    tmp_path: Path, reading: Any
) -> None:
    with Memory.open(tmp_path / "mem", clock=lambda: reading) as memory:
        with pytest.raises(ValidationError, match="clock"):
            memory.assert_fact(subject="Alice", relation="knows", object="Bob Stone")

        assert memory.log.last_position() == 0
