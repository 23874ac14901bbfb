"""The built-in extractor: speakers, names, first-person statements as typed facts, co-mentions.

Deterministic and small, so it runs without a model: it finds what a careful reader finds
first ("I live in Lisbon": the speaker lives in Lisbon; see `domain.statements`) and claims
little about the rest (two names in one message were mentioned together). Plug a model in
through the `Extractor` protocol for more.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from typing import Final, NamedTuple

from apexmem.domain.extraction import (
    MAX_FACTS_PER_MESSAGE,
    MAX_MENTIONS_PER_MESSAGE,
    ExtractedFact,
    Extraction,
    KnownName,
    Mention,
    Utterance,
)
from apexmem.domain.names import MIN_NAME_BYTES, display_name, normalize
from apexmem.domain.recall.evidence import CO_MENTION_RELATION
from apexmem.domain.statements import statements

__all__ = ["CO_MENTION_CONFIDENCE", "CO_MENTION_RELATION", "HeuristicExtractor"]

CO_MENTION_CONFIDENCE: Final = 0.3
"""Low: two names in one message say little about how they are related."""

_APOSTROPHE: Final = "\u2019"
_TOKEN: Final = re.compile(r"\w+(?:['\u2019.\-+&]\w+)*[+#]*")
_SENTENCE_END: Final = re.compile(r"[.!?:;\n\"\u201c\u2026(\[]")
"""Between two words, what makes the second one start a sentence (or a quote, or a list item)."""
_CONTRACTION: Final = re.compile(r"['\u2019](?:d|ll|ve|re|m|t|all)$", re.IGNORECASE)
_MAX_SPAN: Final = 6
"""Words in one name at most (capitalized, or known and looked up)."""
_CONNECTORS: Final = frozenset({"of", "de", "da", "del", "der", "van", "von", "la", "le", "du"})
"""Lowercase words a capitalized name may hold between two capitalized words."""
_STOPWORD_TEXT: Final = """
    a about above after again against all also although always am among an and another any
    anyway anyways are around as at be because been before being behind below between both
    but by can could did do does doing done down during each either even ever every few for
    from get gets got had has have having he her here hers herself him himself his how however
    i if in into is it its itself just last later lately least less let lets like many may
    maybe me might mine more most much must my myself near neither never next no nor not now
    of off often on once one only or other our ours ourselves out over own perhaps please plus
    quite rather really same second she should since so some sometimes soon still such than
    that the their theirs them themselves then there these they this those though through
    thus to today together tomorrow tonight too under unless until up upon us usually very was
    we well were what whatever when where whether which while who whom whose why will with
    within without would yes yet yesterday you your yours yourself yourselves
    actually absolutely ah anyhow awesome basically btw bye congrats congratulations cool
    definitely dear first finally glad good great haha happy hello hey hi hmm honestly lol
    love nice no nope oh ok okay omg oops recently sorry sounds sure thank thanks totally um
    wow yeah yep woohoo yay aww woah whoa yikes ugh hooray
    i'm i've i'll i'd it's that's there's what's let's don't can't won't didn't isn't aren't
    wasn't you're you've we're we've they're he's she's doesn't haven't hasn't wouldn't
    mr mrs ms dr mon tue tues wed thu thur thurs fri
    monday tuesday wednesday thursday friday saturday sunday january february march april
    june july august september october november december
"""
_STOPWORDS: Final = frozenset(_STOPWORD_TEXT.split())
"""Words that start sentences or fill them, never names on their own."""


class _Token(NamedTuple):
    text: str
    start: int
    end: int
    sentence_start: bool
    """Capitalized because a sentence starts here, perhaps not because it is a name."""
    joined: bool
    """Only spaces (no line break) separate it from the token before."""


class HeuristicExtractor:
    """Speakers as persons, capitalized spans and known names as mentions, co-mentions as facts.

    - The speaker is a person, unless it is a role (`user`, `assistant`, ...).
    - A run of capitalized words (`Bob Stone`, `Bank of America`) is a mention, a known
      name's entity when the memory knows it, else a new concept; filler words (`The`,
      `Yesterday`), contractions and a possessive `'s` are left out, and a single word
      that starts a sentence counts only when known or written like a name (`LGBTQ`).
    - A known name written in lowercase (`acme`, `rust-lang`) is a mention too, unless it
      is a single plain word naming a concept (too often a common word).
    - Every two entities of one message (the speaker included) get a `mentioned_with` fact,
      semantic, confidence 0.3, at most 15 per message.
    """

    name: Final = "heuristic.v2"

    def extract(self, message: Utterance, known: Mapping[str, KnownName]) -> Extraction:
        """The speaker, the names of the text, what the speaker says of themselves, and a
        co-mention fact per pair of names."""
        mentions: dict[tuple[str, str], Mention] = {}
        speaker = _speaker(message.speaker_name(), known)
        stated: list[ExtractedFact] = []
        if speaker is not None:
            mentions[_key(speaker)] = speaker
            stated = statements(speaker, message.text, message.at, known)
        for fact in stated:
            if fact.object is not None:
                mentions.setdefault(_key(fact.object), fact.object)
        named = {normalize(m.name) for m in mentions.values()}
        for mention in _names(message.text, known):
            if normalize(mention.name) not in named:  # "Lisbon" the place, not a concept too
                mentions.setdefault(_key(mention), mention)
        chosen = list(mentions.values())[:MAX_MENTIONS_PER_MESSAGE]
        kept = {_key(m) for m in chosen}
        typed = [f for f in stated if f.object is None or _key(f.object) in kept]
        co_mentions = _co_mentions(chosen)[: max(0, MAX_FACTS_PER_MESSAGE - len(typed))]
        return Extraction(tuple(chosen), (*typed[:MAX_FACTS_PER_MESSAGE], *co_mentions))


def _key(mention: Mention) -> tuple[str, str]:
    return normalize(mention.name), mention.entity_type


def _speaker(speaker: str | None, known: Mapping[str, KnownName]) -> Mention | None:
    if speaker is None:
        return None
    name = display_name(speaker)
    key = normalize(name)
    if len(key.encode()) < MIN_NAME_BYTES:
        return None
    found = known.get(key)
    if found is not None and found.entity_type == "person":
        return Mention(found.name, "person")
    return Mention(name, "person")


def _co_mentions(mentions: Sequence[Mention]) -> tuple[ExtractedFact, ...]:
    facts = []
    for a, b in itertools.islice(itertools.combinations(mentions, 2), MAX_FACTS_PER_MESSAGE):
        first, second = sorted((a, b), key=_key)  # one slot for the pair, whoever came first
        facts.append(
            ExtractedFact(
                subject=first,
                relation=CO_MENTION_RELATION,
                object=second,
                edge_type="semantic",
                confidence=CO_MENTION_CONFIDENCE,
                fact=f"{first.name} and {second.name} were mentioned together",
            )
        )
    return tuple(facts)


def _tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    previous_end = 0
    for match in _TOKEN.finditer(text):
        gap = text[previous_end : match.start()]
        first = not tokens
        tokens.append(
            _Token(
                match.group(),
                match.start(),
                match.end(),
                sentence_start=first or _SENTENCE_END.search(gap) is not None,
                joined=not first and gap.isspace() and "\n" not in gap,
            )
        )
        previous_end = match.end()
    return tokens


def _names(text: str, known: Mapping[str, KnownName]) -> list[Mention]:
    """Mentions in text order: at each word the longest known name or capitalized run."""
    tokens = _tokens(text)
    found: list[Mention] = []
    i = 0
    while i < len(tokens):
        hit = _known_at(tokens, i, known)
        span = _capitalized_at(tokens, i)
        if hit is not None and hit[0] >= span:
            found.append(Mention(hit[1].name, hit[1].entity_type))
            i += hit[0]
        elif span > 1 or (span and _name_like(tokens[i])):
            found += _span_mention(text, tokens[i : i + span], known)
            i += span
        else:
            i += 1
    return found


def _known_at(
    tokens: Sequence[_Token], i: int, known: Mapping[str, KnownName]
) -> tuple[int, KnownName] | None:
    """The longest known name (of at most 6 words) starting at token `i`, and its length."""
    run = 1
    while run < _MAX_SPAN and i + run < len(tokens) and tokens[i + run].joined:
        run += 1
    for n in range(run, 0, -1):
        words = [t.text for t in tokens[i : i + n]]
        for key in dict.fromkeys((normalize(" ".join(words)), normalize(_possessive(words)))):
            found = known.get(key)
            if found is not None and _plausible(words, key, found):
                return n, found
    return None


def _plausible(words: list[str], key: str, found: KnownName) -> bool:
    """Whether a known name written this way stands for its entity, not for a common word."""
    if len(words) > 1 or not key.isalpha() or words[0][:1].isupper():
        return key not in _STOPWORDS
    return found.entity_type != "concept" and key not in _STOPWORDS


def _capitalized_at(tokens: Sequence[_Token], i: int) -> int:
    """How many tokens from `i` form a capitalized name (0 when none starts there)."""
    if not _capital(tokens[i]):
        return 0
    n = 1
    while i + n < len(tokens) and n < _MAX_SPAN and tokens[i + n].joined:
        word = tokens[i + n]
        if _capital(word):
            n += 1
        elif (
            word.text in _CONNECTORS
            and i + n + 1 < len(tokens)
            and tokens[i + n + 1].joined
            and _capital(tokens[i + n + 1])
            and n + 2 <= _MAX_SPAN
        ):
            n += 2
        else:
            break
    return n


def _capital(token: _Token) -> bool:
    text = token.text
    return (
        text[:1].isupper() and _plain(text) not in _STOPWORDS and _CONTRACTION.search(text) is None
    )


def _name_like(token: _Token) -> bool:
    """Whether a capitalized word alone is a name: inside a sentence, or an acronym or a
    mixed-case word (`LGBTQ`, `GitHub`) where a sentence starts."""
    return not token.sentence_start or any(c.isupper() for c in token.text[1:])


def _plain(word: str) -> str:
    return word.lower().replace(_APOSTROPHE, "'")


def _possessive(words: list[str]) -> str:
    last = words[-1]
    if len(last) > 2 and _plain(last[-2:]) == "'s":
        return " ".join([*words[:-1], last[:-2]])
    return " ".join(words)


def _span_mention(
    text: str, span: Sequence[_Token], known: Mapping[str, KnownName]
) -> list[Mention]:
    surface = text[span[0].start : span[-1].end]
    name = display_name(_possessive([surface]))
    key = normalize(name)
    if len(key.encode()) < MIN_NAME_BYTES:
        return []
    found = known.get(key)
    return [Mention(found.name, found.entity_type) if found else Mention(name, "concept")]
