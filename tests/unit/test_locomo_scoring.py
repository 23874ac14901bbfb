"""bench/locomo.py's pure parts: session times, gold ids, recall@k and any-hit, BM25 ranking.

None of these needs the dataset: the samples are written here, in its shape.
"""

import importlib.util
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load_bench() -> ModuleType:
    """bench/ is a folder of scripts, not a package: load the file under its own name."""
    spec = importlib.util.spec_from_file_location("bench_locomo", ROOT / "bench" / "locomo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


locomo = _load_bench()

TURNS = {"D1:1", "D1:2", "D1:3", "D2:1", "D8:6", "D9:17", "D11:26", "D30:5"}


def test_a_session_time_is_parsed_as_aware_utc() -> None:
    at = locomo.session_time("1:56 pm on 8 May, 2023")

    assert at == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def test_a_morning_session_time_with_a_two_digit_hour_is_parsed() -> None:
    at = locomo.session_time("10:04 am on 19 October, 2023")

    assert at == datetime(2023, 10, 19, 10, 4, tzinfo=UTC)


def test_well_formed_evidence_is_kept_as_is() -> None:
    evidence = locomo.normalize_evidence(["D1:3", "D2:1"], TURNS)

    assert (evidence.ids, evidence.normalized, evidence.missing) == (["D1:3", "D2:1"], [], [])


@pytest.mark.parametrize(
    ("raw", "ids"),
    [
        (["D8:6; D9:17"], ["D8:6", "D9:17"]),
        (["D1:1 D1:2 D1:3"], ["D1:1", "D1:2", "D1:3"]),
        (["D:11:26"], ["D11:26"]),
        (["D30:05"], ["D30:5"]),
    ],
)
def test_loosely_written_evidence_is_normalized(raw: list[str], ids: list[str]) -> None:
    evidence = locomo.normalize_evidence(raw, TURNS)

    assert evidence.ids == ids
    assert evidence.missing == []
    assert len(evidence.normalized) == len(ids)


def test_spaces_around_a_gold_id_are_ignored() -> None:
    evidence = locomo.normalize_evidence([" D1:3 "], TURNS)

    assert (evidence.ids, evidence.missing) == (["D1:3"], [])


@pytest.mark.parametrize("raw", ["D", "D10:", "D1:3:5", "D4:36", "turn 3"])
def test_evidence_that_names_no_turn_stays_as_a_miss(raw: str) -> None:
    evidence = locomo.normalize_evidence(["D1:1", raw], TURNS)

    assert evidence.ids[0] == "D1:1"
    assert len(evidence.ids) == 1 + len(raw.split())
    assert evidence.missing == raw.split()


def test_a_repeated_gold_id_counts_once() -> None:
    evidence = locomo.normalize_evidence(["D1:3", "D1:03"], TURNS)

    assert evidence.ids == ["D1:3"]


def test_a_fact_ref_names_every_turn_it_came_from() -> None:
    assert locomo.turn_ids("D1:3,D1:5") == ["D1:3", "D1:5"]
    assert locomo.turn_ids("D1:3") == ["D1:3"]
    assert locomo.turn_ids(None) == []


def test_recall_counts_gold_ids_among_the_first_k_results() -> None:
    ranked = [["D1:1"], ["D2:1", "D1:3"], ["D9:17"]]

    assert locomo.score(["D1:3", "D9:17"], ranked, 2) == (0.5, 1.0)
    assert locomo.score(["D1:3", "D9:17"], ranked, 3) == (1.0, 1.0)
    assert locomo.score(["D1:3", "D9:17"], ranked, 1) == (0.0, 0.0)


def test_a_missing_gold_id_keeps_recall_below_one() -> None:
    evidence = locomo.normalize_evidence(["D1:1", "D"], TURNS)

    assert locomo.score(evidence.ids, [["D1:1"]], 5) == (0.5, 1.0)


def test_evaluate_asks_once_and_scores_every_k() -> None:
    question = locomo.Question(
        text="where?", category=4, evidence=locomo.normalize_evidence(["D2:1"], TURNS)
    )
    ranked = [[f"D1:{i}"] for i in range(1, 7)] + [["D2:1"]]
    asked: list[tuple[str, int]] = []

    def ranker(text: str, k: int) -> list[list[str]]:
        asked.append((text, k))
        return ranked

    [scored] = locomo.evaluate([question], ranker)

    assert asked == [("where?", 10)]
    assert scored.metrics == {
        "recall@5": 0.0,
        "any-hit@5": 0.0,
        "recall@10": 1.0,
        "any-hit@10": 1.0,
    }


def test_the_summary_averages_per_category_and_overall() -> None:
    def scored(category: int, recall: float) -> object:
        return locomo.Scored(category=category, metrics={"recall@5": recall}, ranked=[], ms=1.0)

    summary = locomo.summary([scored(1, 1.0), scored(1, 0.0), scored(4, 1.0)])

    assert summary["1"] == {"questions": 2, "recall@5": 0.5}
    assert summary["4"] == {"questions": 1, "recall@5": 1.0}
    assert summary["overall"] == {"questions": 3, "recall@5": pytest.approx(2 / 3)}
    assert "2" not in summary


def test_tokens_are_lowercase_alphanumeric_words_less_the_stop_words() -> None:
    assert locomo.tokens("Hey Mel! It's 5pm.") == ["hey", "mel", "it", "s", "5pm"]
    assert locomo.tokens("Hey Mel! It's 5pm.", locomo.STOP_WORDS) == ["hey", "mel", "5pm"]


def test_bm25_ranks_the_document_with_the_rarer_word_first() -> None:
    index = locomo.Bm25(
        [
            "we went hiking in the mountains",
            "the dog went to the park",
            "the mountains were beautiful and the dog loved hiking",
            "nothing in common here",
        ]
    )

    assert index.top("dog hiking", 10) == [2, 0, 1]
    assert index.top("hiking mountains", 1) == [0]
    assert index.top("unrelated words", 10) == []


def test_bm25_prefers_the_shorter_of_two_documents_with_the_same_match() -> None:
    index = locomo.Bm25(["pottery class", "pottery class on a sunny day with friends", "other"])

    assert index.top("pottery", 10) == [0, 1]


def test_bm25_left_out_stop_words_do_not_rank() -> None:
    index = locomo.Bm25(["the the the the", "a painting"], stop=locomo.STOP_WORDS)

    assert index.top("the painting", 10) == [1]


SAMPLE = {
    "sample_id": "conv-x",
    "conversation": {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "Hi Bob!"},
            {
                "speaker": "Bob",
                "dia_id": "D1:2",
                "text": "Look.",
                "blip_caption": "a photo of a dog",
            },
        ],
        "session_2_date_time": "9:00 am on 9 May, 2023",
        "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "I adopted a cat."}],
        "session_3_date_time": "9:00 am on 10 May, 2023",
    },
    "observation": {
        "session_1_observation": {"Bob": [["Bob has a dog.", "D1:2"]]},
        "session_2_observation": {
            "Ann": [["Ann adopted a cat.", ["D2:1", "D1:1"]], ["Ann greets.", "D1:1, D2:1"]]
        },
    },
    "qa": [
        {"question": "Who has a dog?", "answer": "Bob", "evidence": ["D1:2"], "category": 4},
        {"question": "Unanswerable?", "answer": "-", "evidence": ["D1:1"], "category": 5},
        {"question": "No evidence?", "answer": "-", "evidence": [], "category": 3},
    ],
}


def test_a_sample_becomes_turns_observations_and_scored_questions() -> None:
    conversation = locomo.conversation_of(SAMPLE)

    assert [t.dia_id for t in conversation.turns] == ["D1:1", "D1:2", "D2:1"]
    assert conversation.turns[1].text == "Look. [image: a photo of a dog]"
    assert conversation.turns[1].at == datetime(2023, 5, 8, 13, 56, 1, tzinfo=UTC)
    assert [o.ref for o in conversation.observations] == ["D1:2", "D2:1,D1:1", "D1:1,D2:1"]
    assert [q.text for q in conversation.questions] == ["Who has a dog?"]


def test_each_sessions_messages_come_before_its_observations() -> None:
    conversation = locomo.conversation_of(SAMPLE)

    written = locomo.commands(conversation, observations=True)

    assert [type(c).__name__ for c in written] == [
        "RecordMessage",
        "RecordMessage",
        "AssertFact",
        "RecordMessage",
        "AssertFact",
        "AssertFact",
    ]
    note = written[2]
    assert (note.subject, note.subject_type, note.relation) == ("Bob", "person", "observed")
    assert (note.fact, note.ref, note.episode) == ("Bob has a dog.", "D1:2", "conv-x")
    assert (note.object, note.value) == (None, None)
    assert note.valid_from == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert [c.ref for c in locomo.commands(conversation, observations=False)] == [
        "D1:1",
        "D1:2",
        "D2:1",
    ]


def test_a_missing_data_file_exits_with_where_it_was_looked_for(tmp_path: Path) -> None:
    missing = tmp_path / "locomo10.json"

    with pytest.raises(SystemExit, match=r"LoCoMo data not found at .*--data PATH"):
        locomo.load(missing)
