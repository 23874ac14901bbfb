"""Recall on LoCoMo: gold evidence turns found by `Memory.recall` against plain BM25 over turns.

Run from the repository root:  python bench/locomo.py [--limit-conversations N] [--variants a,b,c]
A quick run (2 conversations, no file written unless --out):  python bench/locomo.py --quick
A full run (every conversation and variant) writes bench/results/locomo.json; a partial one
writes only to --out. --details PATH also writes each question's ranked turn ids.
The data is read from ../shared/datasets/locomo/locomo10.json beside the repository (or
--data), never copied into it.

Each conversation gets its own memory, in a fresh directory, opened with the default
settings (WordLlama vectors). Variant a records every turn as a message (an image turn's
caption appended as "[image: ...]"), timed at its session's date plus one second per turn;
variant b also asserts the dataset's observations as notes about their speaker, each
referring to the turns it came from; variant c records the messages as a does, then
extracts facts from them with the default offline extractor (`Memory.backfill`), its facts
referring to the turn each came from. The baselines are BM25 (bm25s, Lucene's variant, k1
1.2, b 0.75; `pip install bm25s`, in the `bench` extra) over the same turn texts, one index
per conversation, on lowercase alphanumeric words: all of them (bm25), or all but NLTK's
English stop words (bm25-stop, the setting that matches the dataset README's reference
figures).

--embedder wordllama,minilm runs each variant once per embedder (the vectors' model, set as
`[memory.vectors] embedder` would: minilm needs its optional package), in the same run, and
reports each one's query embedding time per question beside its scores; systems are then
named "a wordllama", "a minilm".

Scoring follows the dataset's README: questions of categories 1-4 with evidence; each
system's top 10 results (one call per question) are mapped to turn ids (a message's ref, a
fact's comma-joined refs); recall@k is the fraction of the gold ids among the turn ids of
the first k results, any-hit@k is 1 when at least one is, averaged over questions. Gold ids
written loosely ("D8:6; D9:17", "D:11:26", "D30:05") are normalized; the rest ("D", a turn
the conversation does not have) stay in the denominator as misses.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from functools import partial
from itertools import groupby
from pathlib import Path
from typing import Any, Final

import msgspec

from apexmem import AssertFact, Command, Memory, RecordMessage
from apexmem.domain.embedding import Embedder, Vectors

RESULTS: Final = Path(__file__).parent / "results" / "locomo.json"
DATA: Final = Path(__file__).resolve().parents[2] / "shared/datasets/locomo/locomo10.json"
CATEGORIES: Final = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS: Final = (5, 10)
VARIANTS: Final = ("a", "b", "c")
EMBEDDERS: Final = ("wordllama", "minilm")
DESCRIPTIONS: Final = {
    "bm25": "BM25 over turns (bm25s, k1 1.2, b 0.75), every word",
    "bm25-stop": "BM25 over turns (bm25s, k1 1.2, b 0.75), NLTK English stop words left out",
    "a": "Memory.recall: every turn as a message",
    "b": "Memory.recall: every turn as a message, the observations as notes",
    "c": "Memory.recall: every turn as a message, then extraction (default extractor)",
}
_BATCH: Final = 1_000
_QUICK_CONVERSATIONS: Final = 2
_SESSION: Final = re.compile(r"session_(\d+)")
_WORD: Final = re.compile(r"[a-z0-9]+")
_STOP_TEXT: Final = """
    i me my myself we our ours ourselves you your yours yourself yourselves he him his himself
    she her hers herself it its itself they them their theirs themselves what which who whom
    this that these those am is are was were be been being have has had having do does did
    doing a an the and but if or because as until while of at by for with about against between
    into through during before after above below to from up down in out on off over under again
    further then once here there when where why how all any both each few more most other some
    such no nor not only own same so than too very s t can will just don should now d ll m o re
    ve y ain aren couldn didn doesn hadn hasn haven isn ma mightn mustn needn shan shouldn wasn
    weren won wouldn"""
STOP_WORDS: Final = frozenset(_STOP_TEXT.split())
"""NLTK's English stop words, as the alphanumeric pieces this tokenizer makes of them."""
BASELINES: Final = {"bm25": frozenset[str](), "bm25-stop": STOP_WORDS}

Ranker = Callable[[str, int], list[list[str]]]
"""A question and k -> the turn ids of each of the top k results, best first."""


class Turn(msgspec.Struct, frozen=True, kw_only=True):
    """One dialogue turn, its text as recorded (caption included) and its time."""

    session: int
    dia_id: str
    speaker: str
    text: str
    at: datetime


class Observation(msgspec.Struct, frozen=True, kw_only=True):
    """A generated fact about a speaker and the turns it came from (comma-joined ids)."""

    session: int
    speaker: str
    text: str
    ref: str
    at: datetime


class Evidence(msgspec.Struct, frozen=True, kw_only=True):
    """A question's gold turn ids; `normalized` and `missing` name the loose ones found."""

    ids: list[str]
    normalized: list[str] = []
    missing: list[str] = []


class Question(msgspec.Struct, frozen=True, kw_only=True):
    """A scored question: categories 1-4, with its normalized evidence."""

    text: str
    category: int
    evidence: Evidence


class Conversation(msgspec.Struct, frozen=True, kw_only=True):
    """One LoCoMo sample: its turns, observations and scored questions."""

    sample_id: str
    turns: list[Turn]
    observations: list[Observation]
    questions: list[Question]


# Data ------------------------------------------------------------------------------------


def session_time(text: str) -> datetime:
    """A session's "1:56 pm on 8 May, 2023" as an aware UTC datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def canonical_turn(piece: str) -> str | None:
    """ "D30:05" -> "D30:5", "D:11:26" -> "D11:26"; None when not two numbers after a D."""
    piece = piece.strip()
    if not re.fullmatch(r"D[\d:]*", piece):
        return None
    numbers = [int(n) for n in piece[1:].split(":") if n]
    return f"D{numbers[0]}:{numbers[1]}" if len(numbers) == 2 else None


def normalize_evidence(raw: Iterable[str], turns: Collection[str]) -> Evidence:
    """Gold ids split on ";", "," and spaces, made canonical; unknown ones kept as misses."""
    ids: list[str] = []
    normalized: list[str] = []
    missing: list[str] = []
    for entry in raw:
        pieces = [p for p in re.split(r"[;,\s]+", entry) if p]
        for piece in pieces:
            turn = canonical_turn(piece)
            if turn is None or turn not in turns:
                missing.append(piece)
                turn = piece
            elif turn != piece or len(pieces) > 1:
                normalized.append(piece)
            if turn not in ids:
                ids.append(turn)
    return Evidence(ids=ids, normalized=normalized, missing=missing)


def turn_ids(ref: str | None) -> list[str]:
    """The turn ids a result's ref names ("D1:3" or "D1:3,D1:5")."""
    return [p.strip() for p in ref.split(",") if p.strip()] if ref else []


def _sessions(conversation: dict[str, Any]) -> Iterator[tuple[int, datetime, list[Any]]]:
    """Sessions that have turns, in order, with their start time."""
    numbers = sorted(int(m[1]) for key in conversation if (m := _SESSION.fullmatch(key)))
    for n in numbers:
        if conversation[f"session_{n}"]:
            at = session_time(conversation[f"session_{n}_date_time"])
            yield n, at, conversation[f"session_{n}"]


def _turn(raw: dict[str, Any], session: int, at: datetime) -> Turn:
    caption = raw.get("blip_caption")
    text = raw["text"] + (f" [image: {caption}]" if caption else "")
    return Turn(session=session, dia_id=raw["dia_id"], speaker=raw["speaker"], text=text, at=at)


def _observations(sample: dict[str, Any], times: dict[int, datetime]) -> list[Observation]:
    found = []
    for n, at in times.items():
        for speaker, facts in sample["observation"].get(f"session_{n}_observation", {}).items():
            for text, refs in facts:
                listed = refs if isinstance(refs, list) else [refs]
                pieces = [p for r in listed for p in re.split(r"[;,\s]+", r) if p]
                ref = ",".join(t for p in pieces if (t := canonical_turn(p)) is not None)
                found.append(Observation(session=n, speaker=speaker, text=text, ref=ref, at=at))
    return found


def conversation_of(sample: dict[str, Any]) -> Conversation:
    """A sample's turns, observations and questions of categories 1-4 with evidence."""
    times: dict[int, datetime] = {}
    turns = []
    for n, at, raw_turns in _sessions(sample["conversation"]):
        times[n] = at
        turns += [_turn(raw, n, at + timedelta(seconds=i)) for i, raw in enumerate(raw_turns)]
    known = {t.dia_id for t in turns}
    questions = [
        Question(
            text=q["question"],
            category=q["category"],
            evidence=normalize_evidence(q["evidence"], known),
        )
        for q in sample["qa"]
        if q["category"] in CATEGORIES and q.get("evidence")
    ]
    observations = _observations(sample, times)
    return Conversation(
        sample_id=sample["sample_id"], turns=turns, observations=observations, questions=questions
    )


def load(path: Path) -> list[Conversation]:
    """Every conversation of locomo10.json; exits with a message when the file is absent."""
    if not path.is_file():
        raise SystemExit(
            f"LoCoMo data not found at {path}: put locomo10.json there (see "
            "shared/datasets/locomo/README.md) or pass --data PATH"
        )
    return [conversation_of(sample) for sample in json.loads(path.read_bytes())]


# Retrieval -------------------------------------------------------------------------------


def tokens(text: str, stop: Collection[str] = ()) -> list[str]:
    """Lowercase alphanumeric words, less those in `stop`."""
    return [w for w in _WORD.findall(text.lower()) if w not in stop]


class Bm25:
    """Okapi BM25 (bm25s, Lucene's variant) over a fixed list of documents, on `tokens`."""

    def __init__(
        self,
        documents: Sequence[str],
        *,
        stop: Collection[str] = (),
        k1: float = 1.2,
        b: float = 0.75,
    ) -> None:
        import bm25s  # type: ignore[import-untyped]  # the bench baseline only (`bench` extra)

        self._stop = stop
        self._index = bm25s.BM25(k1=k1, b=b, method="lucene")
        self._index.index([tokens(d, stop) for d in documents], show_progress=False)

    def top(self, query: str, k: int) -> list[int]:
        """Indexes of the `k` best-scoring documents (ties by position), none scoring zero."""
        terms = tokens(query, self._stop)
        if not terms:
            return []
        scores = self._index.get_scores(terms)
        ranked = sorted((-float(s), i) for i, s in enumerate(scores) if s > 0)
        return [i for _, i in ranked[:k]]


def bm25_turns(index: Bm25, turns: Sequence[Turn], question: str, k: int) -> list[list[str]]:
    """The baseline's ranker: each of the top `k` turns is its own id."""
    return [[turns[i].dia_id] for i in index.top(question, k)]


def recall_turns(
    memory: Memory, question: str, k: int, *, cut_short: list[str] | None = None
) -> list[list[str]]:
    """The memory's ranker: the turn ids of each of `recall`'s top `k` hits.

    A question whose recall the time budget cut short is added to `cut_short`.
    """
    found = memory.recall(question, limit=k)
    if found.cut_short and cut_short is not None:
        cut_short.append(question)
    return [turn_ids(hit.provenance.ref) for hit in found]


def _message(conversation: Conversation, turn: Turn) -> Command:
    return RecordMessage(
        episode=conversation.sample_id,
        speaker=turn.speaker,
        text=turn.text,
        at=turn.at,
        ref=turn.dia_id,
    )


def _note(conversation: Conversation, observation: Observation) -> Command:
    return AssertFact(
        subject=observation.speaker,
        subject_type="person",
        relation="observed",
        fact=observation.text,
        ref=observation.ref,
        episode=conversation.sample_id,
        valid_from=observation.at,
    )


def commands(conversation: Conversation, *, observations: bool) -> list[Command]:
    """Each session's messages, then (with `observations`) its observations as notes."""
    notes: dict[int, list[Command]] = {}
    if observations:
        for o in conversation.observations:
            notes.setdefault(o.session, []).append(_note(conversation, o))
    found: list[Command] = []
    for session, turns in groupby(conversation.turns, key=lambda t: t.session):
        found += [_message(conversation, t) for t in turns]
        found += notes.get(session, [])
    return found


def build(
    directory: Path,
    conversation: Conversation,
    *,
    observations: bool,
    embedder: Embedder | None = None,
) -> Memory:
    """A memory in `directory` (default settings; `embedder` when given) holding one
    conversation."""
    memory = Memory.open(directory, embedder=embedder)
    written = commands(conversation, observations=observations)
    for i in range(0, len(written), _BATCH):
        memory.execute(written[i : i + _BATCH])
    return memory


# Scoring ---------------------------------------------------------------------------------


def score(gold: Sequence[str], ranked: Sequence[Sequence[str]], k: int) -> tuple[float, float]:
    """recall@k and any-hit@k of one question: gold ids among the first `k` results' turn ids."""
    seen = {turn for ids in ranked[:k] for turn in ids}
    found = sum(turn in seen for turn in gold)
    return found / len(gold), float(found > 0)


class Scored(msgspec.Struct, frozen=True, kw_only=True):
    """One question's metrics ("recall@5", "any-hit@10", ...) and its top results."""

    category: int
    metrics: dict[str, float]
    ranked: list[list[str]]
    ms: float


class System(msgspec.Struct, kw_only=True):
    """What one system (the baseline or a variant) gathered over the conversations."""

    scored: list[Scored] = []
    build_s: float = 0.0
    cut_short: list[str] = []
    embed_ms: list[float] = []
    """Time each question's recall spent embedding (its vectors' model), per question."""


class Timed:
    """An embedder that notes how long each of its calls took (an `Embedder` itself)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.ms: list[float] = []

    @property
    def name(self) -> str:
        """The inner embedder's name: its cached vectors stay its own."""
        return self.inner.name

    @property
    def dimension(self) -> int:
        """The inner embedder's dimension."""
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        """The inner embedder's vectors, the call timed."""
        started = time.perf_counter()
        try:
            return self.inner.embed(texts)
        finally:
            self.ms.append((time.perf_counter() - started) * 1_000)


def evaluate(questions: Iterable[Question], ranker: Ranker) -> Iterator[Scored]:
    """Ask each question once for max(KS) results and score every k on that list."""
    for question in questions:
        started = time.perf_counter()
        ranked = ranker(question.text, max(KS))
        ms = (time.perf_counter() - started) * 1_000
        metrics = {}
        for k in KS:
            metrics[f"recall@{k}"], metrics[f"any-hit@{k}"] = score(
                question.evidence.ids, ranked, k
            )
        yield Scored(category=question.category, metrics=metrics, ranked=ranked, ms=ms)


def summary(scored: Sequence[Scored]) -> dict[str, dict[str, float]]:
    """Mean of every metric per category ("1".."4") and "overall", with the question count."""
    groups = {str(c): [s for s in scored if s.category == c] for c in CATEGORIES}
    groups["overall"] = list(scored)
    return {
        name: {
            "questions": len(group),
            **{m: statistics.fmean(s.metrics[m] for s in group) for m in group[0].metrics},
        }
        for name, group in groups.items()
        if group
    }


def _percentiles(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50_ms": statistics.median(ordered),
        "p95_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))],
    }


# Running ---------------------------------------------------------------------------------


def system_name(variant: str, embedder: str, embedders: Sequence[str]) -> str:
    """A variant's name in the results: the variant alone when it runs with WordLlama only
    (as every earlier run did), else the variant and its embedder."""
    return variant if list(embedders) == ["wordllama"] else f"{variant} {embedder}"


def _embedder(name: str) -> Embedder:
    from apexmem.domain.settings import VectorSettings
    from apexmem.embedders import embedder_for

    return embedder_for(VectorSettings(embedder=name))  # type: ignore[arg-type]


def _run_variant(
    conversation: Conversation, variant: str, embedder: Timed, system: System
) -> float:
    """Build one variant's memory and ask its questions; the build's seconds."""
    with tempfile.TemporaryDirectory(prefix="apexmem-locomo-") as tmp:
        started = time.perf_counter()
        observations = variant == "b"
        with build(Path(tmp), conversation, observations=observations, embedder=embedder) as memory:
            if variant == "c":
                memory.backfill()
            built = time.perf_counter() - started

            def ranker(question: str, k: int) -> list[list[str]]:
                embedder.ms.clear()
                ranked = recall_turns(memory, question, k, cut_short=system.cut_short)
                system.embed_ms.append(sum(embedder.ms))
                return ranked

            system.scored += evaluate(conversation.questions, ranker)
    system.build_s += built
    return built


def _run_conversation(
    conversation: Conversation,
    variants: Sequence[str],
    systems: dict[str, System],
    embedders: dict[str, Timed],
) -> None:
    for name, stop in BASELINES.items():
        started = time.perf_counter()
        index = Bm25([t.text for t in conversation.turns], stop=stop)
        systems[name].build_s += time.perf_counter() - started
        ranker = partial(bm25_turns, index, conversation.turns)
        systems[name].scored += evaluate(conversation.questions, ranker)
    for variant in variants:
        for name, embedder in embedders.items():
            label = system_name(variant, name, list(embedders))
            built = _run_variant(conversation, variant, embedder, systems[label])
            print(f"{conversation.sample_id} {label}: built in {built:.1f} s", file=sys.stderr)


def run(
    conversations: Sequence[Conversation],
    variants: Sequence[str],
    embedders: Sequence[str] = ("wordllama",),
) -> dict[str, System]:
    """Score the baseline and each variant (with each embedder) on every conversation."""
    timed = {name: Timed(_embedder(name)) for name in embedders}
    labels = [system_name(v, e, embedders) for v in variants for e in embedders]
    systems = {name: System() for name in (*BASELINES, *labels)}
    for conversation in conversations:
        _run_conversation(conversation, variants, systems, timed)
    return systems


# Reporting -------------------------------------------------------------------------------

_COLUMNS: Final = ("recall@5", "recall@10", "any-hit@10")


def _row(label: str, cells: Iterable[str]) -> str:
    return (f"{label:<12}" + "".join(f"{c:<20}" for c in cells)).rstrip()


def table(summaries: dict[str, dict[str, dict[str, float]]]) -> str:
    """One row per system; per category and overall, recall@5, recall@10 and any-hit@10."""
    groups = [*(str(c) for c in CATEGORIES), "overall"]
    counts = summaries[next(iter(summaries))]
    lines = [
        _row("", (f"{CATEGORIES[int(g)]} ({g})" if g != "overall" else g for g in groups)),
        _row(
            "questions", (str(int(counts[g]["questions"])) if g in counts else "" for g in groups)
        ),
        _row("system", ("r@5   r@10  hit@10" for _ in groups)),
    ]
    for name, summary_ in summaries.items():
        cells = (
            " ".join(f"{summary_[g][c]:.3f}" for c in _COLUMNS) if g in summary_ else "-"
            for g in groups
        )
        lines.append(_row(name, cells))
    return "\n".join(lines)


def _data_summary(conversations: Sequence[Conversation]) -> dict[str, Any]:
    evidence = [q.evidence for c in conversations for q in c.questions]
    return {
        "conversations": len(conversations),
        "turns": sum(len(c.turns) for c in conversations),
        "observations": sum(len(c.observations) for c in conversations),
        "questions": len(evidence),
        "gold_ids": sum(len(e.ids) for e in evidence),
        "gold_ids_normalized": [p for e in evidence for p in e.normalized],
        "gold_ids_missing": [p for e in evidence for p in e.missing],
    }


def results(
    conversations: Sequence[Conversation], systems: dict[str, System], model_s: float
) -> dict[str, Any]:
    """The results file's content: data, machine, and per system its scores and timings."""
    # A sibling script, importable when this file runs as a script (not when a test loads it).
    from append import machine

    return {
        "data": _data_summary(conversations),
        "machine": machine(),
        "protocol": "categories 1-4 with evidence; top 10 per question; recall@k, any-hit@k",
        "model_load_s": model_s,
        "systems": {
            name: {
                "description": _description(name),
                "scores": summary(system.scored),
                "build_s": system.build_s,
                "query": _percentiles([s.ms for s in system.scored]),
                "total_s": system.build_s + sum(s.ms for s in system.scored) / 1_000,
                "recalls_cut_short": len(system.cut_short),
                **(
                    {"embed_per_question": _percentiles(system.embed_ms)} if system.embed_ms else {}
                ),
            }
            for name, system in systems.items()
        },
    }


def _description(name: str) -> str:
    variant, _, embedder = name.partition(" ")
    return DESCRIPTIONS[variant] + (f" (vectors: {embedder})" if embedder else "")


def write_details(
    path: Path, conversations: Sequence[Conversation], systems: dict[str, System]
) -> None:
    """One JSON line per question: its gold ids and every system's ranked turn ids."""
    questions = [(c.sample_id, q) for c in conversations for q in c.questions]
    with path.open("w", encoding="utf-8") as file:
        for i, (sample_id, question) in enumerate(questions):
            row = {
                "sample_id": sample_id,
                "category": question.category,
                "question": question.text,
                "gold": question.evidence.ids,
                **{name: s.scored[i].ranked for name, s in systems.items()},
            }
            file.write(json.dumps(row) + "\n")


def _warm_up(embedders: Sequence[str]) -> float:
    """Load each embedding model once, outside the build timings."""
    started = time.perf_counter()
    for name in embedders:
        _embedder(name).embed(["warm up"])
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> None:
    """Parse the options, run, print the table and write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA, help=f"default: {DATA}")
    parser.add_argument("--limit-conversations", type=int, default=None, metavar="N")
    parser.add_argument(
        "--variants",
        default="a,b,c",
        help="a: messages; b: and observations; c: messages, then extraction",
    )
    parser.add_argument(
        "--embedder",
        default="wordllama",
        help="the variants' vectors, comma-separated: wordllama (default), minilm (optional)",
    )
    parser.add_argument("--quick", action="store_true", help="2 conversations")
    parser.add_argument("--out", type=Path, default=None, help=f"default (a full run): {RESULTS}")
    parser.add_argument("--details", type=Path, default=None, help="per-question JSON lines")
    args = parser.parse_args(argv)
    variants = [v for v in args.variants.split(",") if v]
    if unknown := [v for v in variants if v not in VARIANTS]:
        parser.error(f"unknown variants {unknown}: expected a subset of a,b,c")
    embedders = [e for e in args.embedder.split(",") if e]
    if not embedders or (unknown := [e for e in embedders if e not in EMBEDDERS]):
        parser.error(f"unknown embedders {args.embedder!r}: expected a subset of wordllama,minilm")
    limit = _QUICK_CONVERSATIONS if args.quick else args.limit_conversations
    conversations = load(args.data)[:limit]
    model_s = _warm_up(embedders) if variants else 0.0
    systems = run(conversations, variants, embedders)
    report = results(conversations, systems, model_s)
    print(table({name: s["scores"] for name, s in report["systems"].items()}))
    for name, system in report["systems"].items():
        if "embed_per_question" in system:
            embed = system["embed_per_question"]
            print(
                f"{name}: embedding a question p50 {embed['p50_ms']:.2f} ms,"
                f" p95 {embed['p95_ms']:.2f} ms"
            )
    full = limit is None and set(variants) == set(VARIANTS) and embedders == ["wordllama"]
    out = args.out if args.out is not None or not full else RESULTS
    if out is not None:
        out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    if args.details is not None:
        write_details(args.details, conversations, systems)


if __name__ == "__main__":
    main()
