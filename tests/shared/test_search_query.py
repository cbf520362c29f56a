"""Query parsing: what people and models type becomes safe terms, phrases, prefixes and operators."""

from __future__ import annotations

import sqlite3

import pytest

from shared.search.dates import Day, named_dates
from shared.search.query import fts5_match, parse_query, tsquery_match

pytestmark = pytest.mark.once  # backend-independent: see tests/conftest.py

HOSTILE = [
    '"', '""', '"unbalanced phrase', 'a "b" "c', "*", "**deploy", "(", ")", "((a OR b)", "NEAR", "NEAR(a b)",
    "a NEAR/3 b", "-", "--x", "-foo", ":", "TODO: fix", "col:value", "body : x", "^start", "{body prev}: x",
    "AND", "OR", "NOT", "hello AND", "NOT NOT x", "a OR OR b", "'; DROP TABLE messages; --", "\\", "%_%",
    "🙂🔥", "x\x00y", "\u200b", "a" * 5000, "ñandú café", "C++ and C#", "e-mail@host.com", "$(rm -rf /)",
]


def words(query: str) -> list[tuple[str, ...]]:
    return [tuple(atom.text for atom in term.atoms) for term in parse_query(query).terms]


def test_a_natural_question_keeps_its_content_words_only():
    assert words("When did Priya go to the evening choir rehearsal?") == [
        ("priya",), ("go", "gone", "went"), ("evening",), ("choir",), ("rehearsal",),
    ]


def test_a_query_of_stop_words_only_keeps_them_rather_than_searching_nothing():
    assert words("the who") == [("the",), ("who",)]


def test_a_negated_auxiliary_is_a_stop_word_straight_or_curly():
    assert words("Why did she say she won't?") == words("Why did she say she won’t?") == [("said", "say"),]
    assert words("who won't lose") == [("lose", "lost")]
    assert words("who won") == [("win", "won")]


def test_quoted_phrases_are_required_and_plain_words_are_alternatives():
    parsed = parse_query('"choir rehearsal" priya')
    assert [(t.atoms[0].text, t.required) for t in parsed.terms] == [("choir rehearsal", True), ("priya", False)]


def test_and_requires_both_neighbours_and_not_excludes_the_next_word():
    parsed = parse_query("deploy AND staging NOT friday")
    assert [(t.atoms[0].text, t.required) for t in parsed.terms] == [("deploy", True), ("staging", True)]
    assert [t.atoms[0].text for t in parsed.excluded] == ["friday"]


def test_operators_count_in_capitals_only():
    assert words("rock and roll or not") == [("rock",), ("roll",)]


def test_a_trailing_star_searches_by_prefix():
    (term,) = parse_query("deploy*").terms
    assert term.atoms[0].prefix and term.atoms[0].text == "deploy"


def test_words_joined_by_connectors_are_one_phrase():
    assert words("chat-send v2.1 my_var") == [("chat send",), ("v2 1",), ("my var",)]


def test_cjk_runs_become_substring_atoms():
    (term,) = parse_query("桂林").terms
    assert term.cjk and term.atoms[0].text == "桂林"


def test_nothing_searchable_gives_an_empty_query():
    for text in ("", "   ", "🙂", "NOT", "NOT friday", None):
        assert parse_query(text).empty


@pytest.mark.parametrize("text", HOSTILE)
def test_any_text_renders_a_query_fts5_accepts(text):
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(body, prev, prev2, tokenize='porter unicode61 remove_diacritics 2')")
    db.execute("INSERT INTO t VALUES ('hello world', '', '')")
    match = fts5_match(parse_query(text), "body", "{body prev prev2}")
    if match is not None:
        db.execute("SELECT rowid FROM t WHERE t MATCH ?", (match,)).fetchall()


@pytest.mark.parametrize("text", HOSTILE)
def test_any_text_renders_only_quoted_letters_and_digits_for_tsquery(text):
    rendered = tsquery_match(parse_query(text)) or ""
    outside_quotes = rendered.split("'")[::2]
    assert all(set(part) <= set(" ()|&!:*AB") for part in outside_quotes)


def test_dates_named_in_a_query_are_read_and_verbs_are_not():
    assert named_dates("on 9 February, 2022") == (Day(2, 9, 2022),)
    assert named_dates("on November 20, 2021 and in May 2019") == (Day(11, 20, 2021), Day(5, None, 2019))
    assert named_dates("What did we pack for the hike in August?") == (Day(8),)
    assert named_dates("May I ask what march they joined?") == ()
