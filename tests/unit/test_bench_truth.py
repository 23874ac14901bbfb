"""bench/truth.py, the benchmark's ground truth: what a slot says at valid time T, known at S.

It must be right on its own terms, or the suite's correctness checks mean nothing.
"""

from bench_scripts import load

DAY = 86_400

truth = load("truth")
JOB = ("Ann Lee", "works_at")


def test_a_single_valued_slot_holds_the_latest_valid_from_at_or_before_t() -> None:
    known = truth.Truth()
    known.assert_single(JOB, "Acme", 0, 1, 0)
    known.assert_single(JOB, "Initech", 100 * DAY, 2, 1)

    at = [known.single_value(JOB, t, 1) for t in (-1, 0, 99 * DAY, 100 * DAY)]

    assert at == [None, "Acme", "Acme", "Initech"]


def test_a_late_assertion_with_an_earlier_valid_from_fills_the_past_only() -> None:
    known = truth.Truth()
    known.assert_single(JOB, "Acme", 0, 1, 0)
    known.assert_single(JOB, "Initech", 100 * DAY, 2, 1)
    known.assert_single(JOB, "Globex", 50 * DAY, 3, 2)

    before, after = known.single_value(JOB, 60 * DAY, 1), known.single_value(JOB, 60 * DAY, 2)

    assert (before, after, known.current()[JOB]) == ("Acme", "Globex", "Initech")


def test_a_correction_at_the_same_valid_from_wins_from_when_it_arrives() -> None:
    known = truth.Truth()
    known.assert_single(JOB, "Acme", 10 * DAY, 1, 0)
    known.assert_single(JOB, "Initech", 10 * DAY, 2, 3)

    assert [known.single_value(JOB, 10 * DAY, s) for s in (2, 3)] == ["Acme", "Initech"]


def test_a_withdrawn_fact_holds_nowhere_once_the_retraction_is_known() -> None:
    known = truth.Truth()
    key = ("Ann Lee", "uses", "Rust")
    known.assert_multi(key, 0, 0)
    known.retract(key, 5, None)

    assert [known.multi_holds(key, DAY, s) for s in (4, 5)] == [True, False]


def test_an_ended_fact_holds_until_its_valid_until_once_the_retraction_is_known() -> None:
    known = truth.Truth()
    key = ("Ann Lee", "uses", "Rust")
    known.assert_multi(key, 0, 0)
    known.retract(key, 5, 30 * DAY)

    held = [known.multi_holds(key, t, 5) for t in (DAY, 30 * DAY, truth.FOREVER)]

    assert held == [True, False, False]
    assert known.multi_holds(key, truth.FOREVER, 4) is True


def test_facts_about_an_entity_include_the_slots_where_it_is_the_object() -> None:
    known = truth.Truth()
    known.assert_single(JOB, "Acme", 0, 1, 0)
    known.assert_single(JOB, "Initech", 100 * DAY, 2, 0)
    known.assert_multi(("Bo Chen", "knows", "Ann Lee"), 0, 0)

    about_acme = [known.about("Acme", t, 0) for t in (DAY, 200 * DAY)]

    assert about_acme == [[("Ann Lee", "works_at", "Acme")], []]
    assert known.about("Ann Lee", DAY, 0) == [
        ("Ann Lee", "works_at", "Acme"),
        ("Bo Chen", "knows", "Ann Lee"),
    ]


def test_an_alias_answers_for_its_entity_only_once_it_is_known() -> None:
    known = truth.Truth()
    known.assert_single(JOB, "Acme", 0, 1, 0)
    known.alias("Ann #000001", "Ann Lee", 3)

    asked = [known.about("Ann #000001", DAY, s) for s in (2, 3)]

    assert asked == [[], [("Ann Lee", "works_at", "Acme")]]
