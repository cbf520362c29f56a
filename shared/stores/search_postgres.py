"""Postgres backend of message search: a tsvector per message (GIN), BM25 computed in SQL.

The document holds the message (weight A) and the two messages before it (B, C); BM25 counts an
occurrence as 1, 0.5 or 0.2 by weight, the way FTS5's column weights do on SQLite.
"""

from __future__ import annotations

from typing import Sequence

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlmodel import Session

from shared.models.sessions import Message
from shared.stores.search_query import ParsedQuery, Term, tsquery_match, tsquery_term
from shared.stores.search_scope import Candidate, Scope

SYNTAX_ERROR = "42601"
K1, B = 1.2, 0.75
SMALL_TABLE = 10_000  # below this many rows the planner's estimate may be stale: count them

_RANK = f"""
WITH hits AS MATERIALIZED (
    SELECT ms.message_id, ms.prev_id, ms.prev2_id, ms.doc_len, ms.document
    FROM message_search AS ms
    JOIN messages AS m ON m.id = ms.message_id JOIN sessions AS s ON s.id = m.session_id
    WHERE ms.document @@ to_tsquery('english', :match) AND {{where}}),
terms AS (
    SELECT DISTINCT lexeme, prefix FROM unnest(CAST(:lexemes AS text[]), CAST(:prefixes AS boolean[])) AS q(lexeme, prefix)),
tf AS (
    SELECT h.message_id, t.lexeme,
           sum(CASE w WHEN 'A' THEN 1.0 WHEN 'B' THEN 0.5 WHEN 'C' THEN 0.2 ELSE 0 END) AS tf
    FROM hits AS h
    CROSS JOIN LATERAL unnest(h.document) AS d
    JOIN terms AS t ON d.lexeme = t.lexeme OR (t.prefix AND starts_with(d.lexeme, t.lexeme))
    CROSS JOIN LATERAL unnest(d.weights) AS w
    GROUP BY h.message_id, t.lexeme),
df AS (SELECT lexeme, count(*) AS n FROM tf GROUP BY lexeme),
stats AS (SELECT greatest(:total, count(*)) AS n, greatest(avg(doc_len), 1) AS avgdl FROM hits)
SELECT h.message_id,
       sum(greatest(ln((stats.n - df.n + 0.5) / (df.n + 0.5)), 1e-6)
           * tf.tf * {K1 + 1} / (tf.tf + {K1} * (1 - {B} + {B} * h.doc_len / stats.avgdl))) AS score,
       h.prev_id, h.prev2_id
FROM tf JOIN df USING (lexeme) JOIN hits AS h USING (message_id) CROSS JOIN stats
GROUP BY h.message_id, h.prev_id, h.prev2_id
ORDER BY score DESC, h.message_id DESC
LIMIT :pool
"""

_NEWEST = """
SELECT ms.message_id, ms.prev_id, ms.prev2_id
FROM message_search AS ms JOIN messages AS m ON m.id = ms.message_id JOIN sessions AS s ON s.id = m.session_id
WHERE ms.document @@ to_tsquery('english', :match) AND {where}
ORDER BY ms.message_id DESC LIMIT :few
"""


def is_query_error(exc: DBAPIError) -> bool:
    """Postgres refused the tsquery text (the parser should never let one through)."""
    return getattr(exc.orig, "sqlstate", None) == SYNTAX_ERROR


def candidates(s: Session, parsed: ParsedQuery, scope: Scope, pool: int, few: int) -> list[Candidate]:
    """The best `pool` messages by BM25 over every positive term; `few` newest for required terms only."""
    match = tsquery_match(parsed)
    if match is None:
        return []
    where, params = scope.where()
    if all(t.required for t in parsed.terms):
        rows = s.execute(text(_NEWEST.format(where=where)), {**params, "match": match, "few": few})
        return [Candidate(r[0], 0.0, r[1], r[2]) for r in rows]
    lexemes, prefixes = _lexemes(s, parsed)
    if not lexemes:
        return []
    rows = s.execute(text(_RANK.format(where=where)), {
        **params, "match": match, "lexemes": lexemes, "prefixes": prefixes, "total": _total(s), "pool": pool,
    })
    return [Candidate(r[0], float(r[1]), r[2], r[3]) for r in rows]


def _lexemes(s: Session, parsed: ParsedQuery) -> tuple[list[str], list[bool]]:
    """The normalised lexemes of the query's words, as the index stores them, and which are prefixes."""
    words, prefixes = [], []
    for term in parsed.terms:
        for atom in term.atoms:
            for i, word in enumerate(atom.words):
                words.append(word)
                prefixes.append(atom.prefix and i == len(atom.words) - 1)
    rows = s.execute(text(
        "SELECT d.lexeme, bool_or(w.prefix) FROM unnest(CAST(:words AS text[]), CAST(:prefixes AS boolean[])) "
        "AS w(word, prefix) CROSS JOIN LATERAL unnest(to_tsvector('english', hstack_search_text(w.word))) AS d "
        "GROUP BY d.lexeme"
    ), {"words": words, "prefixes": prefixes}).all()
    return [r[0] for r in rows], [bool(r[1]) for r in rows]


def _total(s: Session) -> int:
    """How many messages are indexed: the planner's estimate, or a count while the table is small."""
    estimate = s.execute(text("SELECT reltuples FROM pg_class WHERE relname = 'message_search'")).scalar() or 0
    if estimate >= SMALL_TABLE:
        return int(estimate)
    return s.execute(text("SELECT count(*) FROM message_search")).scalar()


def holders(s: Session, terms: Sequence[Term], rows: dict[int, Message]) -> list[set[int]]:
    """For each term, which of these messages hold it themselves (weight A of their document)."""
    return _holding(s, terms, list(rows))


def _holding(s: Session, terms: Sequence[Term], ids: list[int]) -> list[set[int]]:
    if not ids or not terms:
        return [set() for _ in terms]
    checks = ", ".join(f"document @@ to_tsquery('english', :t{i})" for i in range(len(terms)))
    params = {f"t{i}": tsquery_term(term, "A") for i, term in enumerate(terms)}
    rows = s.execute(text(
        f"SELECT message_id, {checks} FROM message_search WHERE message_id = ANY(CAST(:ids AS integer[]))"
    ), {**params, "ids": list(ids)}).all()
    return [{r[0] for r in rows if r[i + 1]} for i in range(len(terms))]
