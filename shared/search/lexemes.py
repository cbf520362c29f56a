"""A word's lexemes as Postgres' search index stores them, remembered per database.

Every ranked search asked the server how its words normalise (`to_tsvector('english', …)`): a round trip
for the same few thousand words a user writes over and over. A word's lexemes depend only on the
database's text search configuration, so each is asked once per process and database (at most SIZE
words); a query asks the server only for the words it has not seen.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Sequence

from sqlalchemy import text
from sqlalchemy.engine import URL
from sqlmodel import Session

SIZE = 20_000

_KNOWN: OrderedDict[tuple[URL, str], tuple[str, ...]] = OrderedDict()
_LOCK = threading.Lock()

_NORMALISED = text(
    "SELECT w.word, d.lexeme FROM unnest(CAST(:words AS text[])) AS w(word) "
    "CROSS JOIN LATERAL unnest(to_tsvector('english', hstack_search_text(w.word))) AS d"
)


def lexemes(s: Session, words: Sequence[str], prefixed: Sequence[bool]) -> tuple[list[str], list[str]]:
    """The distinct lexemes of `words`: whole ones, and those of a word searched as a prefix (either wins)."""
    database = s.get_bind().url  # immutable and hashable: the database, whichever of its pools the read uses
    with _LOCK:
        known = {word: _KNOWN.get((database, word)) for word in dict.fromkeys(words)}
    missing = [word for word, found in known.items() if found is None]
    if missing:
        asked: dict[str, list[str]] = {word: [] for word in missing}
        for word, lexeme in s.execute(_NORMALISED, {"words": missing}):
            asked[word].append(lexeme)
        with _LOCK:
            for word, found in asked.items():
                known[word] = _KNOWN[(database, word)] = tuple(found)
            while len(_KNOWN) > SIZE:
                _KNOWN.popitem(last=False)
    prefix: dict[str, bool] = {}
    for word, as_prefix in zip(words, prefixed):
        for lexeme in known[word]:
            prefix[lexeme] = prefix.get(lexeme, False) or as_prefix
    return [lexeme for lexeme, p in prefix.items() if not p], [lexeme for lexeme, p in prefix.items() if p]
