"""First-person statements as typed, dated facts about the speaker (the offline extractor's rules).

"I live in Lisbon", "I just moved to Berlin last week", "I work at Acme", "I'm vegetarian",
"My manager Tom Baker ...": each clause that starts with the speaker's "I" (or "my") and
says where they live or moved, where they work or worked, what they use, like, prefer,
own, study or plan, or what they are, becomes one fact about the speaker. A named
object (capitalized, or a name the memory knows) is an entity; anything else is a literal
value. A time the clause names ("last week", "since March") is when the fact starts.
Questions, negations and conditionals ("if I move to ...") state nothing and are skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Final, NamedTuple

from apexmem.domain.extraction import ExtractedFact, KnownName, Mention
from apexmem.domain.names import MIN_NAME_BYTES, normalize
from apexmem.domain.when import named_time

__all__ = ["STATEMENT_CONFIDENCE", "statements"]

STATEMENT_CONFIDENCE: Final = 0.8
"""A speaker saying something about themselves is direct evidence, if not certain."""


class _Rule(NamedTuple):
    pattern: re.Pattern[str]
    relation: str
    sentence: str
    """How the fact reads: `{s}` the speaker, `{o}` the object."""
    entity_type: str
    """The object's type when it is named (an entity)."""
    dated: bool = True
    """Whether a time the clause names is when the fact starts."""
    phrase: bool = False
    """Whether the object is a whole phrase ("go to Paris"), not cut at a preposition."""


_ADVERBS: Final = (
    r"(?:(?:just|recently|finally|actually|also|still|currently|now|really|totally|"
    r"absolutely|already|even|mostly|usually|always|often|truly|definitely|kind of|"
    r"sort of|officially|basically|honestly|so|too)\s+)*"
)


def _rule(
    verbs: str,
    relation: str,
    sentence: str,
    entity_type: str,
    *,
    dated: bool = True,
    phrase: bool = False,
) -> _Rule:
    pattern = re.compile(rf"^i\s+{_ADVERBS}(?:{verbs})\s+(?P<o>.+)$", re.IGNORECASE)
    return _Rule(pattern, relation, sentence, entity_type, dated, phrase)


_RULES: Final = (
    _rule(
        r"(?:am|have been) (?:living|based|staying|settled) in|live in|have lived in|reside in",
        "lives_in",
        "{s} lives in {o}",
        "location",
    ),
    _rule(
        r"(?:have )?(?:moved|relocated)(?: back)? to", "lives_in", "{s} lives in {o}", "location"
    ),
    _rule(r"used to live in|lived in", "lived_in", "{s} lived in {o}", "location"),
    _rule(r"am from|come from|grew up in|was born in", "from", "{s} is from {o}", "location"),
    _rule(
        r"(?:work|am working|have been working) (?:at|for)"
        r"|(?:started|start|began|have started) (?:working |a new job |a job )?(?:at|for|with)"
        r"|joined|got (?:a |the )?(?:new )?job (?:at|with)|got hired (?:at|by)|was hired (?:at|by)",
        "works_at",
        "{s} works at {o}",
        "organization",
    ),
    _rule(
        r"worked (?:at|for)|used to work (?:at|for)",
        "worked_at",
        "{s} worked at {o}",
        "organization",
    ),
    _rule(r"(?:work|am working) as(?: an?)?", "works_as", "{s} works as {o}", "concept"),
    _rule(
        r"(?:am|have been) using|use|switched to|started using",
        "uses",
        "{s} uses {o}",
        "tool",
    ),
    _rule(r"prefer", "prefers", "{s} prefers {o}", "concept", dated=False),
    _rule(
        r"(?:do not|don't|dont) (?:like|enjoy)|hate|dislike|(?:can't|cannot) stand",
        "dislikes",
        "{s} dislikes {o}",
        "concept",
        dated=False,
    ),
    _rule(
        r"like|love|enjoy|adore|am (?:really )?into|am (?:a |such a )?(?:big |huge )?fan of",
        "likes",
        "{s} likes {o}",
        "concept",
        dated=False,
    ),
    _rule(
        r"am (?:studying|majoring in|learning|taking (?:a |an )?(?:class|course|classes) (?:in|on))"
        r"|study|major in|have been (?:studying|learning)|started (?:studying|learning)",
        "studies",
        "{s} studies {o}",
        "concept",
    ),
    _rule(r"am a student at|go to school at", "studies_at", "{s} studies at {o}", "organization"),
    _rule(
        r"am (?:planning|going|hoping|about|intending) to|plan to|want to|would like to|hope to"
        r"|intend to|am gonna|am thinking (?:about|of)",
        "plans",
        "{s} plans to {o}",
        "concept",
        dated=False,
        phrase=True,
    ),
    _rule(
        r"(?:own|have got|bought|got|adopted|have)(?=\s+(?:a|an|two|three|four|five|\d+)\s)",
        "owns",
        "{s} owns {o}",
        "concept",
    ),
)
_ATTRIBUTE: Final = re.compile(
    rf"^i\s+{_ADVERBS}am\s+(?P<o>(?:a\s+|an\s+)?(?:strict\s+|proud\s+|full-time\s+)?"
    r"(?:vegetarian|vegan|pescatarian|gluten[- ]free|lactose[- ]intolerant|allergic to \w+"
    r"|married|single|divorced|engaged|pregnant|retired|widowed|left[- ]handed|diabetic"
    r"|sober|introvert(?:ed)?|extrovert(?:ed)?|atheist|christian|muslim|jewish|hindu|buddhist"
    r"|transgender|trans woman|trans man|nonbinary|non-binary|gay|lesbian|bisexual|queer"
    r"|single (?:mom|dad|parent|mother|father)|(?:mom|dad|mother|father|parent) of \w+"
    r"|only child|twin|nurse|teacher|doctor|student|engineer|developer|programmer|designer"
    r"|lawyer|artist|writer|musician|painter|photographer|chef|counselor|therapist"
    r"|software engineer|data scientist|manager|freelancer|entrepreneur|volunteer))\b",
    re.IGNORECASE,
)
_PEOPLE: Final = (
    "manager|boss|wife|husband|partner|girlfriend|boyfriend|fiance|fiancee|sister|brother"
    "|mom|mother|dad|father|son|daughter|friend|best friend|roommate|colleague|coworker"
    "|co-worker|teacher|mentor|doctor|therapist|cousin|aunt|uncle|grandma|grandmother"
    "|grandpa|grandfather|kid|child|neighbor|neighbour|landlord|lead|team lead|ceo"
)
_MY_PERSON: Final = re.compile(
    r"^(?i:my\s+(?:new\s+|old\s+|older\s+|younger\s+|little\s+|big\s+)?)"
    rf"(?P<r>(?i:{_PEOPLE}))"
    r"(?:'s name)?(?:\s+is|\s+was|,)?\s+(?P<o>[A-Z][\w'\-]*(?:\s+[A-Z][\w'\-]*){0,3})",
)
_MY_VALUE: Final = re.compile(
    r"^my\s+(?P<r>(?:favou?rite\s+)?[a-z]+(?:\s+[a-z]+)?)\s+(?:is|are)\s+(?P<o>.+)$",
    re.IGNORECASE,
)
_MY_SKIPPED: Final = frozenset(
    {"name", "point", "bad", "guess", "question", "answer", "pleasure", "problem", "fault"}
)
_CLAUSE_BREAK: Final = re.compile(
    r"(?:[.!?;:\n]+|,?\s+(?:and|but|so|because|though|although|plus)\s+(?=(?:i|i'm|i've|my)\b)"
    r"|,\s+(?=(?:i|my)\b))",
    re.IGNORECASE,
)
_LEAD: Final = re.compile(
    r"^(?:(?:oh|well|yeah|yes|yep|so|and|but|also|actually|btw|by the way|anyway|hey|hi"
    r"|honestly|now|guess what|fun fact|ok|okay|wow|haha|lol|right|plus|then|lately"
    r"|recently|these days|nowadays),?\s+)+",
    re.IGNORECASE,
)
_CONTRACTIONS: Final = (
    (re.compile(r"\bi'm\b", re.IGNORECASE), "I am"),
    (re.compile(r"\bim\b"), "I am"),
    (re.compile(r"\bi've\b", re.IGNORECASE), "I have"),
    (re.compile(r"\bi'll\b", re.IGNORECASE), "I will"),
    (re.compile(r"\bi'd\b", re.IGNORECASE), "I would"),
)
_OBJECT_END: Final = re.compile(
    r"\s+(?:and|but|so|because|since|when|while|with|which|who|that|where|as|after|before|"
    r"until|for|if|though|although|now|anymore|too|again|lately|these days|right now"
    r"|at the moment|every \w+|a lot|so much|very much|more|than|or|to be)\b.*$"
    r"|[,()\"\u201c\u201d].*$",
    re.IGNORECASE,
)
_PREPOSITION: Final = re.compile(
    r"\s+(?:at|in|on|from|to|about|with|by|into|during|over|since)\b.*$", re.IGNORECASE
)
_ARTICLE: Final = re.compile(r"^(?:the|a|an|my|our|some|this|that)\s+", re.IGNORECASE)
_DEFINITE: Final = re.compile(r"^(?:the|my|our|some|this|that)\s+", re.IGNORECASE)
_BLOCKED: Final = re.compile(
    r"\b(?:not|never|no longer|if|whether|wish|should|could|might|maybe)\b|n't\b",
    re.IGNORECASE,
)
"""A clause holding one of these states nothing for sure ("if I move", "I don't live")."""
_VAGUE: Final = frozenset(
    {
        "it",
        "this",
        "that",
        "them",
        "those",
        "these",
        "you",
        "him",
        "her",
        "us",
        "one",
        "something",
        "anything",
        "everything",
        "nothing",
        "lot",
        "question",
        "idea",
        "feeling",
        "time",
        "chance",
        "bit",
        "little",
        "couple",
        "few",
        "moment",
        "day",
        "way",
        "thing",
        "things",
        "go",
        "to",
        "here",
        "there",
        "home",
        "back",
        "out",
        "up",
        "doing",
        "been",
        "had",
        "gone",
        "done",
        "seen",
        "got",
        "how",
        "what",
        "when",
        "why",
        "where",
        "seeing",
        "hearing",
        "your",
        "yours",
        "his",
        "their",
        "so",
        "such",
        "fun",
        "lots",
    }
)
"""Objects that name nothing on their own."""
_MAX_OBJECT_WORDS: Final = 6


class _Object(NamedTuple):
    mention: Mention | None
    value: str | None
    text: str


def statements(
    speaker: Mention, text: str, at: datetime, known: Mapping[str, KnownName]
) -> list[ExtractedFact]:
    """The facts about `speaker` their message `text`, said at `at`, states."""
    facts: dict[tuple[str, str], ExtractedFact] = {}
    for clause in _clauses(text):
        fact = _fact(speaker, clause, at, known)
        if fact is not None:
            facts.setdefault((fact.relation, fact.fact or ""), fact)
    return list(facts.values())


def _clauses(text: str) -> Iterator[str]:
    """Statements of the text, each without its opening filler; questions left out."""
    for match in re.finditer(r"[^.!?\n]+[.!?\n]*", text):
        sentence = match.group()
        if "?" in sentence:
            continue
        for part in _CLAUSE_BREAK.split(sentence):
            clause = _expanded(_LEAD.sub("", part.strip()))
            if clause:
                yield clause


def _expanded(clause: str) -> str:
    clause = clause.replace("\u2019", "'")
    for pattern, full in _CONTRACTIONS:
        clause = pattern.sub(full, clause)
    return clause


def _fact(
    speaker: Mention, clause: str, at: datetime, known: Mapping[str, KnownName]
) -> ExtractedFact | None:
    when, plain = named_time(clause, at)
    if (found := _MY_PERSON.match(plain)) is not None:
        return _my_person(speaker, found, known)
    if _BLOCKED.search(plain) and not plain.lower().startswith(("i do not", "i don't", "i dont")):
        return None
    if (found := _ATTRIBUTE.match(plain)) is not None:
        value = found["o"].lower()
        return _made(speaker, "is", "{s} is {o}", _Object(None, value, value), when=when)
    if (found := _MY_VALUE.match(plain)) is not None:
        return _my_value(speaker, found, known)
    return _ruled(speaker, plain, when, known)


def _ruled(
    speaker: Mention, plain: str, when: datetime | None, known: Mapping[str, KnownName]
) -> ExtractedFact | None:
    """The fact of the first rule the clause matches (None when its object names nothing)."""
    for rule in _RULES:
        if (found := rule.pattern.match(plain)) is None:
            continue
        target = _object(found["o"], rule.entity_type, known, phrase=rule.phrase)
        if target is None:
            return None
        return _made(
            speaker, rule.relation, rule.sentence, target, when=when if rule.dated else None
        )
    return None


def _my_person(
    speaker: Mention, found: re.Match[str], known: Mapping[str, KnownName]
) -> ExtractedFact | None:
    """ "My manager Tom Baker ...": the speaker's manager is that person."""
    noun = found["r"].lower()
    person = _object(found["o"], "person", known)
    if person is None:
        return None
    relation = "has_" + noun.replace(" ", "_").replace("-", "_")
    return _made(speaker, relation, f"{speaker.name}'s {noun} is {{o}}", person)


def _my_value(
    speaker: Mention, found: re.Match[str], known: Mapping[str, KnownName]
) -> ExtractedFact | None:
    noun = found["r"].lower()
    if noun.split()[-1] in _MY_SKIPPED:
        return None
    target = _object(found["o"], "concept", known)
    if target is None:
        return None
    relation = noun.replace(" ", "_").replace("favourite", "favorite")
    return _made(speaker, relation, f"{speaker.name}'s {noun} is {{o}}", target)


def _made(
    speaker: Mention,
    relation: str,
    sentence: str,
    target: _Object,
    *,
    when: datetime | None = None,
) -> ExtractedFact | None:
    if target.mention is not None and normalize(target.mention.name) == normalize(speaker.name):
        return None
    return ExtractedFact(
        subject=speaker,
        relation=relation,
        object=target.mention,
        value=target.value,
        confidence=STATEMENT_CONFIDENCE,
        fact=sentence.format(s=speaker.name, o=target.text),
        valid_from=when,
    )


def _object(
    raw: str, entity_type: str, known: Mapping[str, KnownName], *, phrase: bool = False
) -> _Object | None:
    """What a statement is about: a known or capitalized name (an entity), else a value."""
    said = _OBJECT_END.sub("", raw.strip())
    if not phrase:
        said = _PREPOSITION.sub("", said)
    said = _DEFINITE.sub("", said.strip(" .!,;:'\"-")).strip()
    text = _ARTICLE.sub("", said).strip()
    words = text.split()
    if not words or len(words) > _MAX_OBJECT_WORDS or words[0].lower() in _VAGUE:
        return None
    key = normalize(text)
    if len(key.encode()) < MIN_NAME_BYTES:
        return None
    hit = known.get(key)
    if hit is not None:
        return _Object(Mention(hit.name, hit.entity_type), None, hit.name)
    if all(w[:1].isupper() or w.lower() in {"of", "de", "the", "and"} for w in words) and (
        words[0][:1].isupper()
    ):
        return _Object(Mention(text, entity_type), None, text)
    return _Object(None, said, said)
