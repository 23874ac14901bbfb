"""How much extraction the RPE gate saves on LoCoMo's conversations, and what it costs.

Each conversation's turns are recorded (with their session times) in two memories, one
backfilled with the gate off and one with it on (`[memory.graph.rpe]`, WordLlama
embeddings); the figures are the share of turns the gate skipped (model calls saved with a
chat extractor) and the share of the facts found without it that are still found with it.

Run from the repository root:  python bench/rpe_gate.py [--limit-conversations N]
    [--threshold 0.3] [--max-skip-turns 5] [--out FILE]
A run over every conversation writes bench/results/rpe_gate.json (unless --out names another).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any, Final

sys.path.insert(0, str(Path(__file__).parent))

from locomo import DATA, Conversation, load
from sqlalchemy import select

from apexmem import Memory, parse_settings
from apexmem.readmodels.tables import facts

RESULTS: Final = Path(__file__).parent / "results" / "rpe_gate.json"


def facts_found(memory: Memory) -> set[tuple[str, str, str]]:
    """Every fact version ever asserted, as (subject id, relation, object id or value)."""
    statement = select(facts.c.subject_id, facts.c.relation, facts.c.object_id, facts.c.value)
    with memory.store.read() as connection:
        return {(str(s), r, str(o or v)) for s, r, o, v in connection.execute(statement)}


def backfilled(conversation: Conversation, directory: Path, gate: str) -> dict[str, Any]:
    """Record the conversation's turns, backfill, and count what came of it."""
    settings, _ = parse_settings(gate)
    with Memory.open(directory, settings=settings) as memory:
        for turn in conversation.turns:
            memory.record_message(
                episode=conversation.sample_id, speaker=turn.speaker, text=turn.text, at=turn.at
            )
        report = memory.backfill()
        return {"messages": report.messages, "gated": report.gated, "facts": facts_found(memory)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--limit-conversations", type=int, default=None)
    parser.add_argument("--threshold", type=float, default=0.3)
    parser.add_argument("--max-skip-turns", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    conversations = load(args.data)[: args.limit_conversations]
    gate = (
        f"[memory.graph.rpe]\nenabled = true\nthreshold = {args.threshold}\n"
        f"max_skip_turns = {args.max_skip_turns}\n"
    )
    rows = []
    with tempfile.TemporaryDirectory(prefix="apexmem-rpe-") as tmp:
        for n, conversation in enumerate(conversations):
            off = backfilled(conversation, Path(tmp) / f"off-{n}", "")
            on = backfilled(conversation, Path(tmp) / f"on-{n}", gate)
            kept = len(off["facts"] & on["facts"])
            rows.append(
                {
                    "conversation": conversation.sample_id,
                    "turns": on["messages"],
                    "skipped": on["gated"],
                    "facts_without_gate": len(off["facts"]),
                    "facts_kept_with_gate": kept,
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    turns = sum(r["turns"] for r in rows)
    skipped = sum(r["skipped"] for r in rows)
    without = sum(r["facts_without_gate"] for r in rows)
    kept = sum(r["facts_kept_with_gate"] for r in rows)
    summary = {
        "threshold": args.threshold,
        "max_skip_turns": args.max_skip_turns,
        "embedder": "wordllama",
        "turns": turns,
        "skipped": skipped,
        "skipped_share": round(skipped / turns, 3) if turns else 0.0,
        "facts_without_gate": without,
        "facts_kept_share": round(kept / without, 3) if without else 1.0,
        "conversations": rows,
    }
    print(json.dumps({k: v for k, v in summary.items() if k != "conversations"}))
    out = (
        args.out
        if args.out is not None
        else (RESULTS if args.limit_conversations is None else None)
    )
    if out is not None:
        out.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
