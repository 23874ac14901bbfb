"""What an extractor or a summarizer answers is a plug-in's word: an answer of the wrong
shape fails its message or its summary, never the run, and a plug-in whose name could not
be recorded is refused before anything is written."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from apexmem import CommunityDraft, Memory, ValidationError
from apexmem.domain.extraction import ExtractedFact, Extraction, KnownName, Mention, Utterance
from apexmem.service import upkeep as upkeep_module


class AnsweringExtractor:
    """A fake model that answers whatever the test gives it, for every message."""

    def __init__(self, answer: Callable[[], Any], name: Any = "answering.v1") -> None:
        self.answer = answer
        self.name = name

    def extract(self, message: Utterance, known: Mapping[str, KnownName]) -> Any:
        return self.answer()


class AnsweringSummarizer:
    """A fake model that summarizes every community with the answer the test gives it."""

    def __init__(self, answer: Any, name: Any = "answering.v1") -> None:
        self.answer = answer
        self.name = name

    def summarize(self, draft: CommunityDraft) -> Any:
        return self.answer


class RecordingLogger:
    """Stands in for a module's structlog logger and keeps the events it was told."""

    def __init__(self) -> None:
        self.records: list[tuple[str, str]] = []

    def __getattr__(self, level: str) -> Callable[..., None]:
        def log(event: str, **values: Any) -> None:
            self.records.append((level, event))

        return log


def person(name: str) -> Mention:
    return Mention(name, "person")


def fact(**changed: Any) -> ExtractedFact:
    fields: dict[str, Any] = {
        "subject": person("Bob Stone"),
        "relation": "visited",
        "object": Mention("Paris", "location"),
    }
    return ExtractedFact(**{**fields, **changed})


MALFORMED: dict[str, Callable[[], Any]] = {
    "none": lambda: None,
    "a dict": lambda: {"mentions": []},
    "a name that is an int": lambda: Extraction(mentions=(Mention(123),)),  # type: ignore[arg-type]
    "a name that is None": lambda: Extraction(mentions=(Mention(None),)),  # type: ignore[arg-type]
    "a type that is None": lambda: Extraction(mentions=(Mention("Bob Stone", None),)),  # type: ignore[arg-type]
    "a confidence that is text": lambda: Extraction(facts=(fact(confidence="0.5"),)),
    "a relation that is None": lambda: Extraction(facts=(fact(relation=None),)),
    "a sentence that is an int": lambda: Extraction(facts=(fact(fact=5),)),
    "a name that is not UTF-8": lambda: Extraction(mentions=(person("Bob \ud800 Stone"),)),
}

UNRECORDABLE_NAMES: dict[str, Any] = {
    "an int": 123,
    "None": None,
    "bytes": b"answering.v1",
    "257 ASCII characters": "n" * 257,
    "258 bytes in 129 characters": "é" * 129,
}


def say(memory: Memory) -> None:
    memory.record_message(episode="conv-1", speaker="Caroline", text="I met Bob Stone in Paris")


@pytest.mark.parametrize("answer", list(MALFORMED.values()), ids=list(MALFORMED))
def test_a_malformed_extraction_fails_its_message_and_leaves_it_for_the_next_run(
    memory: Memory, answer: Callable[[], Any]
) -> None:
    say(memory)

    failed = memory.backfill(extractor=AnsweringExtractor(answer))
    verdicts = list(memory.events(tags=["message-extracted.v1"]))
    done = memory.backfill(extractor=AnsweringExtractor(lambda: Extraction((person("Bob Stone"),))))

    assert (failed.messages, failed.failed, failed.pending) == (1, 1, 1)
    assert verdicts == []
    assert (done.messages, done.failed, done.entities, done.pending) == (1, 0, 1, 0)


def test_a_list_where_a_tuple_is_declared_is_taken(memory: Memory) -> None:
    say(memory)

    done = memory.backfill(extractor=AnsweringExtractor(lambda: Extraction([person("Bob Stone")])))  # type: ignore[arg-type]

    assert (done.failed, done.entities) == (0, 1)


@pytest.mark.parametrize("name", UNRECORDABLE_NAMES.values(), ids=list(UNRECORDABLE_NAMES))
def test_an_extractor_whose_name_cannot_be_recorded_is_refused_before_anything_is_written(
    memory: Memory, name: Any
) -> None:
    say(memory)
    before = memory.log.last_position()

    with pytest.raises(ValidationError) as refused:
        memory.backfill(extractor=AnsweringExtractor(Extraction, name=name))

    assert refused.value.field == "extractor.name"
    assert memory.log.last_position() == before


@pytest.mark.parametrize("answer", [None, 5, b"about them", "about \ud800 them"])
def test_a_summary_of_the_wrong_kind_becomes_empty_with_a_warning(
    memory: Memory, monkeypatch: pytest.MonkeyPatch, answer: Any
) -> None:
    logger = RecordingLogger()
    monkeypatch.setattr(upkeep_module, "_logger", logger)
    memory.assert_fact(subject="Alice", relation="knows", object="Bob")

    done = memory.detect_communities(summarizer=AnsweringSummarizer(answer))

    [row] = memory.communities()
    assert (done.formed, row.summary, row.summarizer) == (1, "", "answering.v1")
    assert ("warning", "communities.summary_failed") in logger.records


@pytest.mark.parametrize("name", UNRECORDABLE_NAMES.values(), ids=list(UNRECORDABLE_NAMES))
def test_a_summarizer_whose_name_cannot_be_recorded_is_refused_before_anything_is_written(
    memory: Memory, name: Any
) -> None:
    memory.assert_fact(subject="Alice", relation="knows", object="Bob")
    before = memory.log.last_position()

    with pytest.raises(ValidationError) as refused:
        memory.detect_communities(summarizer=AnsweringSummarizer("about them", name=name))

    assert refused.value.field == "summarizer.name"
    assert memory.log.last_position() == before
    assert memory.communities() == []
