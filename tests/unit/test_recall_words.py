"""Every word counts: short words and numbers are searched, short names can be asserted,
and an entity the question names exactly is found before one it names in part."""

from __future__ import annotations

from apexmem import Memory


def test_a_number_in_the_question_picks_the_fact_that_holds_it(memory: Memory) -> None:
    memory.assert_fact(
        subject="Acme", relation="uses", object="Python 3", fact="Acme uses Python 3"
    )
    memory.assert_fact(
        subject="Globex", relation="uses", object="Python 2", fact="Globex uses Python 2"
    )

    found = memory.recall("Who uses Python 2?", limit=2)

    assert found[0].text == "Globex uses Python 2"


def test_names_of_one_or_two_bytes_can_be_asserted_and_recalled(memory: Memory) -> None:
    memory.assert_fact(subject="Wu", subject_type="person", relation="lives_in", object="UK")
    memory.assert_fact(subject="Team", relation="uses", object="R", fact="The team writes R")
    memory.assert_fact(subject="Team", relation="uses", object="Go", fact="The team writes Go")

    lives = memory.facts_about("Wu")
    go = memory.recall("Who writes Go?", limit=1)

    assert [f.relation for f in lives] == ["lives_in"]
    assert go[0].text == "The team writes Go"


def test_an_entity_named_exactly_seeds_before_one_named_in_part(memory: Memory) -> None:
    for n in (4, 40, 400):
        memory.assert_fact(
            subject=f"Person {n}", subject_type="person", relation="works_at", object=f"Firm {n}"
        )

    found = memory.recall("Person 40", limit=3)

    assert found.seeds[0] == "Person 40"
    assert "Person 40" in found[0].text


def test_an_exact_name_is_found_before_a_longer_name_it_begins(memory: Memory) -> None:
    memory.assert_fact(
        subject="Ann",
        subject_type="person",
        relation="works_at",
        object="Acme",
        fact="Ann works at Acme",
    )
    memory.observe_entity(
        name="Ann", entity_type="person", summary=" ".join(f"word{i}" for i in range(60))
    )
    for name in ("Anna", "Annabel", "Annika"):
        memory.assert_fact(subject=name, subject_type="person", relation="likes", object="Tea")

    found = memory.recall("Ann", limit=3)

    assert found.seeds[0] == "Ann"
