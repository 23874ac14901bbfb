"""Full-text query sanitizing, pure: query text -> the plain words a full-text search looks for.

Nothing of the query reaches a search engine as syntax: words are runs of letters and
digits (every other character separates them, so `"*():^` and quotes cannot form an
operator), and the words AND, OR, NOT and NEAR are dropped in any case (they are operators
to FTS5 and carry no content as words). The caller quotes each word and matches it as a
prefix, except a word of fewer than `MIN_TERM_BYTES` bytes, matched only whole: every word
counts ("Python 2", "Windows 10", "Person 40", "Go", "UK"), but "2" is not a prefix of
every number.

Scripts written without spaces between words (Chinese, Japanese, Korean words with their
particles, Thai, Lao, Khmer, Myanmar) are cut into overlapping pairs of characters: the
full-text tokenizers keep such a run as one word, so "北京" would never find "我住在北京".
A question's run becomes its pairs ("我住在北京" -> 我住, 住在, 在北, 北京; a run of one
character stays one word); an indexed text's runs become `gram_text`, one more column of
the index: every single character and every pair. Both are made here, for SQLite and
PostgreSQL alike, so the two backends find the same rows.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterator
from typing import Final

from apexmem.domain.names import cut_utf8

__all__ = [
    "MAX_QUERY_BYTES",
    "MAX_TERMS",
    "MIN_TERM_BYTES",
    "STOPWORDS",
    "content_terms",
    "gram_text",
    "search_terms",
]

MAX_QUERY_BYTES: Final = 4096
"""A longer query is cut to this many UTF-8 bytes (at a character boundary) before anything else."""
MAX_TERMS: Final = 16
"""At most this many words of a query are searched for (the first ones)."""
MIN_TERM_BYTES: Final = 3
"""Words shorter than this are matched as whole words only, never as prefixes."""

_WORD: Final = re.compile(r"[^\W_]+")
"""Letters and digits: what FTS5's unicode61 tokenizer keeps (underscore separates there too)."""
_OPERATORS: Final = frozenset({"and", "or", "not", "near"})

_UNSEGMENTED: Final = (
    "\u0e00-\u0eff"  # Thai, Lao
    "\u1000-\u109f"  # Myanmar
    "\u1100-\u11ff"  # Hangul jamo
    "\u1780-\u17ff"  # Khmer
    "\u3005\u3007"  # the ideographic iteration mark and number zero
    "\u3040-\u30ff\u31f0-\u31ff"  # Hiragana, Katakana
    "\u3100-\u312f\u3130-\u318f"  # Bopomofo, Hangul compatibility jamo
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # Han
    "\uac00-\ud7af"  # Hangul syllables
    "\uff66-\uff9f"  # half-width Katakana
    "\U00020000-\U0003134f"  # Han extensions
)
_PIECES: Final = re.compile(
    f"(?P<run>[{_UNSEGMENTED}]+)|(?P<word>(?:(?![{_UNSEGMENTED}])[^\\W_])+)"
)
"""A run of unsegmented-script characters, or a word of other letters and digits."""
_UNSEGMENTED_CHAR: Final = re.compile(f"[{_UNSEGMENTED}]")

STOPWORDS: Final = frozenset(
    """
     about above after again all also any are because been before being below between both
     but can could did does doing down during each few for from further had has have having
     her here hers herself him himself his how into its itself just more most must myself nor
     off once only other our ours ourselves out over own same she should some such than that
     the their theirs them themselves then there these they this those through too under
     until very was were what when where which while who whom why will with would you your
     yours yourself yourselves
     a am an as at be by d do he i if in is it ll m me my of on re s so t to up ve we
    """.split()  # noqa: SIM905 - a word list reads best as words
)
"""English words that say nothing about what a question is after ("s", "t", "ll": what
"she's", "don't" and "we'll" leave)."""


def search_terms(query: str) -> list[str]:
    """The distinct lowercased words of `query` a full-text search matches, in query order
    (an unsegmented run as its pairs of characters).

    An empty, blank or punctuation-only query gives [].
    """
    text = cut_utf8(query, MAX_QUERY_BYTES).casefold()
    if text.isascii():
        words: list[str] = _WORD.findall(text)
    else:
        words = [w for _, w in _pieces(text)]
    return list(dict.fromkeys(w for w in words if w not in _OPERATORS))[:MAX_TERMS]


def gram_text(text: str) -> str:
    """What a full-text index stores of `text` beside its words: each unsegmented run's
    characters and pairs of characters, and the other words written against a run
    ("alice" in "alice住在北京", which the tokenizers would keep in one word) or against a
    mark (the pieces of "नमस्ते"), space-separated.

    Empty for text without such runs (all English text). The gram text of texts joined by
    a space is theirs joined by a space, so an entity's names can be added one by one.
    """
    if text.isascii():
        return ""
    return " ".join(w for unit, w in _pieces(text.casefold(), stored=True) if unit != "word")


def _pieces(text: str, *, stored: bool = False) -> Iterator[tuple[str, str]]:
    """The words of `text` in order, each with its kind: "word" (letters and digits, apart),
    "glued" (such a word written against an unsegmented run or a mark) or "gram" (a run's pair of
    characters, or a character alone: every one when `stored`, else only a run of one).
    """
    for piece in _PIECES.finditer(text):
        if piece["word"] is not None:
            start, end = piece.span()
            touching = (start > 0 and _binds(text[start - 1])) or (
                end < len(text) and _binds(text[end])
            )
            yield ("glued" if touching else "word"), piece["word"]
            continue
        for units in _runs(piece["run"]):
            if stored or len(units) == 1:
                yield from (("gram", u) for u in units)
            yield from (("gram", a + b) for a, b in itertools.pairwise(units))


def _binds(char: str) -> bool:
    """Whether a word written against `char` may be kept whole by a tokenizer, or cut
    otherwise than here: an unsegmented run's character, or a mark. Python cuts "नमस्ते"
    at its vowel signs (नमस, त) as FTS5 does, while PostgreSQL keeps some of them (नमस,
    ते): the gram column holds the pieces as cut here, so both backends find them."""
    return _UNSEGMENTED_CHAR.match(char) is not None or unicodedata.category(char)[0] == "M"


def _runs(run: str) -> Iterator[list[str]]:
    """The letters and digits of an unsegmented run, in compatibility form (half-width
    Katakana as full-width, Hangul jamo as syllables), split where punctuation stands;
    vowel signs and other marks are left out (the tokenizers split words at them)."""
    units: list[str] = []
    for char in unicodedata.normalize("NFKC", run):
        kind = unicodedata.category(char)[0]
        if kind in "LN":
            units.append(char)
        elif kind != "M" and units:
            yield units
            units = []
    if units:
        yield units


def content_terms(query: str) -> list[str]:
    """`search_terms` without the stopwords (all of them when nothing else is left).

    Recall looks for any of these words, so "who", "with" and "does" would match nearly
    every row and rank nothing.
    """
    terms = search_terms(query)
    return [t for t in terms if t not in STOPWORDS] or terms
