"""Full-text query sanitizing, pure: query text -> the plain words a full-text search looks for.

Nothing of the query reaches a search engine as syntax: words are runs of letters and
digits (every other character separates them, so `"*():^` and quotes cannot form an
operator), and the words AND, OR, NOT and NEAR are dropped in any case (they are operators
to FTS5 and carry no content as words). The caller quotes each word and matches it as a
prefix, except a word of fewer than `MIN_TERM_BYTES` bytes, matched only whole: every word
counts ("Python 2", "Windows 10", "Person 40", "Go", "UK"), but "2" is not a prefix of
every number.
"""

from __future__ import annotations

import re
from typing import Final

from apexmem.domain.names import cut_utf8

__all__ = [
    "MAX_QUERY_BYTES",
    "MAX_TERMS",
    "MIN_TERM_BYTES",
    "STOPWORDS",
    "content_terms",
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
    """The distinct lowercased words of `query` a full-text search matches, in query order.

    An empty, blank or punctuation-only query gives [].
    """
    words = _WORD.findall(cut_utf8(query, MAX_QUERY_BYTES).casefold())
    return list(dict.fromkeys(w for w in words if w not in _OPERATORS))[:MAX_TERMS]


def content_terms(query: str) -> list[str]:
    """`search_terms` without the stopwords (all of them when nothing else is left).

    Recall looks for any of these words, so "who", "with" and "does" would match nearly
    every row and rank nothing.
    """
    terms = search_terms(query)
    return [t for t in terms if t not in STOPWORDS] or terms
