"""Matches listed by time (sort=newest|oldest): the database orders every match, then the limit applies.

Ranking looks at the best few hundred candidates only; a time order must see them all, so it skips
BM25 and asks the index for the messages that hold the query's terms themselves, ordered by
(created_at, id) in SQL. Each page is checked the way ranked hits are (every required term, no
excluded one; on SQLite a CJK run is only a substring test), and the next page is read until `limit`
hits are found or the matches run out.
"""

from __future__ import annotations

from typing import Callable

from sqlalchemy import text
from sqlmodel import Session

from shared.search.query import ParsedQuery, fts5_match, tsquery_match
from shared.search.scope import Scope

PAGE_FACTOR = 2  # a page reads twice the hits still wanted: most pages are exact, CJK ones may not be
MAX_PAGES = 20  # a bound on pages read per search (each is one indexed query)

_SQLITE = """
SELECT m.id FROM messages AS m JOIN sessions AS s ON s.id = m.session_id
WHERE ({matches}) AND {where}
ORDER BY m.created_at {direction}, m.id {direction} LIMIT :page OFFSET :skip
"""
_POSTGRES = """
SELECT m.id FROM message_search AS ms
JOIN messages AS m ON m.id = ms.message_id JOIN sessions AS s ON s.id = m.session_id
WHERE ms.document @@ to_tsquery('english', :match) AND {where}
ORDER BY m.created_at {direction}, m.id {direction} LIMIT :page OFFSET :skip
"""


def by_time(s: Session, sqlite: bool, parsed: ParsedQuery, scope: Scope, limit: int, newest: bool,
            accept: Callable[[list[int]], list[int]]) -> list[int]:
    """Ids of up to `limit` messages matching `parsed` in time order; `accept` keeps a page's true hits."""
    sql, params = (_sqlite if sqlite else _postgres)(parsed, scope)
    if sql is None:
        return []
    sql = sql.replace("{direction}", "DESC" if newest else "ASC")
    found: list[int] = []
    skip = 0
    for _ in range(MAX_PAGES):
        page = max(1, (limit - len(found)) * PAGE_FACTOR)
        ids = [r[0] for r in s.execute(text(sql), {**params, "page": page, "skip": skip})]
        found += accept(ids)
        skip += len(ids)
        if len(found) >= limit or len(ids) < page:
            break
    return found[:limit]


def _sqlite(parsed: ParsedQuery, scope: Scope) -> tuple[str | None, dict]:
    where, params = scope.where()
    matches = []
    match = fts5_match(parsed, "body", "body")  # the message itself must hold a term
    if match is not None:
        matches.append("m.id IN (SELECT rowid FROM messages_fts WHERE messages_fts MATCH :match)")
        params["match"] = match
    for i, term in enumerate(t for t in parsed.terms if t.cjk):
        # a candidate test only: `accept` then applies required and excluded terms
        matches.append(f"instr(m.content, :cjk{i}) > 0")
        params[f"cjk{i}"] = term.atoms[0].words[0]
    if not matches:
        return None, params
    return _SQLITE.replace("{matches}", " OR ".join(matches)).replace("{where}", where), params


def _postgres(parsed: ParsedQuery, scope: Scope) -> tuple[str | None, dict]:
    where, params = scope.where()
    match = tsquery_match(parsed, body_only=True)
    if match is None:
        return None, params
    return _POSTGRES.replace("{where}", where), {**params, "match": match}
