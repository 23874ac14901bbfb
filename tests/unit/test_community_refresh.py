"""Communities detected by themselves every `community_refresh_interval` messages extracted,
in the background; summaries asked `community_summary_concurrency` at a time."""

from __future__ import annotations

import threading
from pathlib import Path

from apexmem import CommunityDraft, Memory, parse_settings
from apexmem.events import CommunitySummarized


def _say(memory: Memory, texts: list[str]) -> None:
    memory.add_messages(
        episode="chat",
        messages=[{"speaker": "Priya Shah", "text": t} for t in texts],
        extract=False,
    )


def test_a_detection_runs_by_itself_each_time_the_extracted_messages_pass_the_interval(
    tmp_path: Path,
) -> None:
    settings, _ = parse_settings("[memory.graph]\ncommunity_refresh_interval = 4\n")
    with Memory.open(tmp_path / "mem", settings=settings) as memory:
        _say(memory, [f"Tom Baker works at Acme Corp number {i}." for i in range(10)])
        refresh = memory._services.refresh

        memory.backfill(limit=3)  # 3 extracted: no mark passed
        refresh.wait()
        assert refresh.detections == 0

        memory.backfill(limit=2)  # 5: the mark at 4 is passed
        refresh.wait()
        assert refresh.detections == 1
        formed = list(memory.log.read(tags=["community-summarized.v1"]))
        assert formed and {e.actor for e in formed} == {"community-refresh"}
        assert memory.communities()

        memory.backfill(limit=2)  # 7: still before 8
        refresh.wait()
        assert refresh.detections == 1
        memory.backfill()  # 10: past 8
        refresh.wait()
        assert refresh.detections == 2
        assert memory.verify().ok


class GatedSummarizer:
    """A plug-in summarizer that notes how many of its calls overlap (a model asked at once)."""

    name = "gated.v1"

    def __init__(self, parties: int) -> None:
        self._gate = threading.Barrier(parties, timeout=10)
        self._lock = threading.Lock()
        self.inside = 0
        self.most = 0

    def summarize(self, draft: CommunityDraft) -> str:
        with self._lock:
            self.inside += 1
            self.most = max(self.most, self.inside)
        try:
            if self._gate.parties > 1:
                self._gate.wait()  # returns only once `parties` calls are inside together
            return f"about {draft.name}"
        finally:
            with self._lock:
                self.inside -= 1


def _three_communities(memory: Memory) -> None:
    for a, b in [("Ann Lee", "Bo Kim"), ("Cy Ray", "Di Fox"), ("Ed Lu", "Flo Ng")]:
        memory.assert_fact(subject=a, relation="knows", object=b)


def test_summaries_are_asked_at_most_concurrency_at_a_time(tmp_path: Path) -> None:
    at_once, _ = parse_settings("[memory.graph]\ncommunity_summary_concurrency = 3\n")
    with Memory.open(tmp_path / "a", settings=at_once) as memory:
        _three_communities(memory)
        summarizer = GatedSummarizer(3)
        done = memory.detect_communities(summarizer=summarizer)
        assert (done.formed, summarizer.most) == (3, 3)

    one_by_one, _ = parse_settings("[memory.graph]\ncommunity_summary_concurrency = 1\n")
    with Memory.open(tmp_path / "b", settings=one_by_one) as memory:
        _three_communities(memory)
        summarizer = GatedSummarizer(1)
        done = memory.detect_communities(summarizer=summarizer)
        assert (done.formed, summarizer.most) == (3, 1)
        summaries = [e.data for e in memory.log.read(tags=["community-summarized.v1"])]
        said = [s for s in summaries if isinstance(s, CommunitySummarized)]
        assert len(said) == 3
        assert all(s.summary == f"about {s.name}" for s in said)
