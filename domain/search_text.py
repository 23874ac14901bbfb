"""Full-text query sanitizing, pure: query text -> the plain words a full-text search looks for.

Nothing of the query reaches a search engine as syntax: words are runs of letters and
digits (every other character separates them, so `"*():^` and quotes cannot form an
operator), and the words AND, OR, NOT and NEAR are dropped in any case (they are operators
to FTS5 and carry no content as words). The caller quotes each word and matches it as a
prefix. Words of fewer than 3 bytes are left out (DESIGN 6.1) unless no longer word
remains, so a query of short words still finds something.
"""

from __future__ import annotations

import re
from typing import Final

from apexmem.domain.names import cut_utf8

__all__ = ["MAX_QUERY_BYTES", "MAX_TERMS", "MIN_TERM_BYTES", "search_terms"]

MAX_QUERY_BYTES: Final = 4096
"""A longer query is cut to this many UTF-8 bytes (at a character boundary) before anything else."""
MAX_TERMS: Final = 16
"""At most this many words of a query are searched for (the first ones)."""
MIN_TERM_BYTES: Final = 3

_WORD: Final = re.compile(r"[^\W_]+")
"""Letters and digits: what FTS5's unicode61 tokenizer keeps (underscore separates there too)."""
_OPERATORS: Final = frozenset({"and", "or", "not", "near"})


def search_terms(query: str) -> list[str]:
    """The distinct lowercased words of `query` a full-text search matches, in query order.

    An empty, blank or punctuation-only query gives [].
    """
    words = _WORD.findall(cut_utf8(query, MAX_QUERY_BYTES).casefold())
    kept = list(dict.fromkeys(w for w in words if w not in _OPERATORS))
    long_enough = [w for w in kept if len(w.encode()) >= MIN_TERM_BYTES]
    return (long_enough or kept)[:MAX_TERMS]
