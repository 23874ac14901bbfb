"""What one forget costs on a memory of a given size, and where the time goes.

    python bench/forget.py --facts 10000

Builds a memory of `--facts` facts among people (each person in ~20 of them), with a
conversation of one message per 10 facts, extracted; then forgets one person and times
the request's steps: the two passes over the log that decide the scope and the blanking
(under the write lock), the rebuild of the read models, and the scrub (VACUUM and WAL
checkpoints). The hashing embedder stands in for WordLlama (a rebuild reuses cached
embeddings either way). Prints one JSON object; nothing is written to bench/results.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from apexmem import Memory
from apexmem.domain.embedding import HashingEmbedder
from apexmem.service import erasure_cleanup


def _other(i: int, people: int) -> int:
    """Fact `i`'s object: someone other than its subject (`i % people`)."""
    other = (i * 7 + 1) % people
    return (other + 1) % people if other == i % people else other


def build(directory: Path, facts: int) -> Memory:
    """A memory of `facts` facts and facts/10 messages, extracted."""
    people = max(2, facts // 20)
    memory = Memory.open(directory, embedder=HashingEmbedder())
    batch = [
        {
            "subject": f"Person {i % people:05d}",
            "subject_type": "person",
            "relation": "knows",
            "object": f"Person {_other(i, people):05d}",
            "object_type": "person",
            "fact": f"Person {i % people:05d} knows someone ({i})",
        }
        for i in range(facts)
    ]
    for start in range(0, facts, 1000):
        memory.assert_facts(batch[start : start + 1000])
    messages = [
        {"speaker": "user", "text": f"I saw Person {i % people:05d} at the station ({i})"}
        for i in range(facts // 10)
    ]
    memory.add_messages(episode="conv-1", messages=messages, extract=True)
    memory.extract_pending()
    return memory


def timed_forget(memory: Memory, name: str) -> dict[str, Any]:
    """Forget `name`, timing the decision and blanking apart from the clean-up's steps."""
    steps: dict[str, float] = {}

    def clean_up_timed() -> None:
        started = time.perf_counter()
        memory.projections.rebuild()
        steps["rebuild_s"] = time.perf_counter() - started
        started = time.perf_counter()
        erasure_cleanup.scrub(memory.log, memory.projections)
        steps["scrub_s"] = time.perf_counter() - started

    memory._forgetting._clean_up = clean_up_timed  # timing the clean-up step by step
    started = time.perf_counter()
    report = memory.forget(entity=name, entity_type="person", reason="bench")
    total = time.perf_counter() - started
    steps["decide_and_blank_s"] = total - steps["rebuild_s"] - steps["scrub_s"]
    return {"erased": report.erased, "total_s": round(total, 3)} | {
        k: round(v, 3) for k, v in steps.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--facts", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch) / "mem"
        started = time.perf_counter()
        memory = build(directory, args.facts)
        built_s = time.perf_counter() - started
        try:
            events = memory.log.last_position()
            result = timed_forget(memory, "Person 00001")
            assert memory.verify().ok
        finally:
            memory.close()
    print(
        json.dumps({"facts": args.facts, "events": events, "build_s": round(built_s, 1), **result})
    )


if __name__ == "__main__":
    main()
