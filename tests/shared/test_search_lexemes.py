"""Postgres' lexemes of a search's words: the server's answer, asked once per word."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from shared.search import lexemes as search_lexemes
from tests.support.statements import statements_of

WORDS = ["running", "lighthouses", "the", "Sketching", "run", "naïve"]
PREFIXED = [False, False, False, True, False, False]


def _server(s, words, prefixed):
    """What the search asked the server before the cache: the grouped lexemes, prefix if any word was."""
    rows = s.execute(text(
        "SELECT d.lexeme, bool_or(w.prefix) FROM unnest(CAST(:words AS text[]), CAST(:prefixed AS boolean[])) "
        "AS w(word, prefix) CROSS JOIN LATERAL unnest(to_tsvector('english', hstack_search_text(w.word))) AS d "
        "GROUP BY d.lexeme"), {"words": words, "prefixed": prefixed}).all()
    return sorted(r[0] for r in rows if not r[1]), sorted(r[0] for r in rows if r[1])


def test_the_remembered_lexemes_are_the_servers_and_a_known_word_is_not_asked_again(db):
    if db.is_sqlite:
        pytest.skip("Postgres' text search configuration; SQLite's FTS5 tokenises itself")
    with db.read() as s:
        expected = _server(s, WORDS, PREFIXED)
        whole, prefixes = search_lexemes.lexemes(s, WORDS, PREFIXED)
        assert (sorted(whole), sorted(prefixes)) == expected
        assert "run" in whole and "the" not in whole + prefixes  # "running" and "run": one lexeme; a stop word none
        with statements_of(db) as statements:
            again = search_lexemes.lexemes(s, ["run", "the", "Sketching"], [True, False, False])
        assert statements == []
        assert (sorted(again[0]), sorted(again[1])) == _server(s, ["run", "the", "Sketching"], [True, False, False])
