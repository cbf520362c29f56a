"""Full-text search over a user's stored messages, ranked BM25-style, on SQLite (FTS5) or Postgres.

`search_messages` is the one entry point: the API, the `session_search` tool and memory providers
call it. Scores are comparable within one call only. Ranking, in three steps:
1. candidates: BM25 over the query's terms, matched in the message (weight 1) and in the two
   messages before it in its session (0.5 and 0.2) — an answer is found by its question's words;
2. a candidate also gets a share of the scores of the two candidates after it that hold a term
   themselves (0.3 and 0.1) — a question is found by its answer's words;
3. a hit must hold at least one term itself (context only ranks it), every required term and no
   excluded one; coverage is measured on the message itself. Each term it holds beyond the first
   adds 10% to its score, and a message sent on a date the query names doubles it.
A query of required terms only (quoted phrases, AND) lists its matches newest first. A query
matching more rows than the backend's budget ranks its rarest terms and adds its newest matches
unranked (score 0), so one search never costs time in proportion to the whole history. A user with
fewer messages than the budget whose words are common in the whole index is searched on their own
rows alone (on SQLite ranked in a scratch index of them, by their own statistics), so what other
users wrote never makes a new user's search dearer (see search_budget).
Hybrid search adds the 50 messages closest to the query by sentence embedding (a message's similarity
takes shares of the two before it, as the index's context columns do: see search_vectors) and ranks by
keyword score (scaled to the best) + weight x similarity. Its source is the provider's /v1/embeddings when
EMBEDDINGS_MODEL is set (search_embeddings; hybrid is then on by default), else the local model of the
install extra when SEARCH_HYBRID is on. Embeddings only rank: a hit still holds a query term itself.
"""

from __future__ import annotations

import heapq
import json
import logging
import math
from dataclasses import dataclass
from datetime import datetime
from typing import Sequence

from sqlalchemy import ARRAY, Integer, bindparam, func, select
from sqlalchemy.exc import DBAPIError
from sqlmodel import Session

from shared.config import get_settings
from shared.db import Database
from shared.models.sessions import ChatSession, Message
from shared.search import postgres as search_postgres, sqlite as search_sqlite
from shared.search import embeddings as search_embeddings, timeline as search_timeline, vectors as search_vectors
from shared.search.dates import Day, named_dates
from shared.search.query import ParsedQuery, parse_query
from shared.search.scope import Candidate, Scope

log = logging.getLogger(__name__)

SEARCHABLE_ROLES = ("user", "assistant")
MAX_LIMIT = 100
MIN_POOL = 400  # candidates ranked by BM25 before followers, coverage and dates re-rank them
SINGLE_TERM_POOL = 100  # one term: no coverage to reward, so a smaller pool ranks the same and costs less
MIN_FEW = 20  # newest matches taken when a query is not ranked (required terms only, or too broad)
DENSE_POOL = 50  # most similar messages added to the candidates when hybrid search is on
NEXT_SHARES = (0.3, 0.1)  # measured on LoCoMo: the reply and the one after it vouch for a message
COVERAGE_BONUS = 0.1  # per query term held beyond the first: a message naming more of the question wins ties
DATE_BONUS = 1.0  # a message sent on a date the query names ("on 9 February, 2022", "in May 2019")


@dataclass(frozen=True)
class SearchHit:
    """One stored message that matched, with its BM25-style score (higher is better) and coverage."""

    message_id: int
    session_id: str
    role: str
    content: str
    created_at: datetime
    score: float
    coverage: float  # share (0..1) of the query's content terms this message itself contains


def search_messages(
    db: Database,
    user_id: str,
    query: str | None,
    *,
    limit: int = 10,
    session_id: str | None = None,
    exclude_session_id: str | None = None,
    role: str | Sequence[str] | None = None,
    sort: str = "rank",
    hybrid: bool | None = None,
    pool: int | None = None,
) -> list[SearchHit]:
    """The user's messages best matching `query` (any text; never a syntax error), best first.

    `sort` "newest"/"oldest" lists every match by time in the database, then keeps `limit` (those
    hits are not ranked: score 0). `hybrid` (default: on when EMBEDDINGS_MODEL or SEARCH_HYBRID is
    set) fuses embedding similarity into the ranking, from the provider or the local model's extra.
    `pool` caps the BM25 candidates re-ranked (default MIN_POOL): a caller wanting a few clearly
    relevant hits (recall) ranks fewer and answers sooner.
    """
    parsed = parse_query(query)
    roles = _roles(role)
    if parsed.empty or not roles:
        return []
    limit = max(1, min(int(limit), MAX_LIMIT))
    scope = Scope(user_id, session_id, exclude_session_id, roles)
    backend = search_sqlite if db.is_sqlite else search_postgres
    timed = sort in ("newest", "oldest")
    semantic = None if timed else _semantic(db, scope, query or "", hybrid)
    try:
        with db.read(planner=search_postgres.PLANNER) as s:
            if timed:
                return _by_time(s, db.is_sqlite, backend, parsed, scope, limit, sort == "newest")
            hits = _rank(s, backend, parsed, scope, limit, semantic, named_dates(query or ""), pool)
    except DBAPIError as exc:
        if not backend.is_query_error(exc):
            raise
        log.warning("search query refused by the database (%s); answering with no hits", type(exc.orig).__name__)
        return []
    return hits


def _by_time(s: Session, sqlite: bool, backend, parsed: ParsedQuery, scope: Scope, limit: int,
             newest: bool) -> list[SearchHit]:
    """Every match ordered by time in SQL, then the first `limit` that hold the terms as a ranked hit must."""
    found: dict[int, SearchHit] = {}

    def accept(ids: list[int]) -> list[int]:
        rows = _messages(s, ids, scope)
        holding = backend.holders(s, parsed.terms + parsed.excluded, rows)
        presence, excluded = holding[: len(parsed.terms)], set().union(*holding[len(parsed.terms):])
        kept = []
        for message_id in ids:
            row = rows.get(message_id)
            held = [message_id in holders for holders in presence]
            if row is None or not _acceptable(held, parsed, message_id in excluded):
                continue
            found[message_id] = SearchHit(message_id, row.session_id, row.role, row.content or "", row.created_at,
                                          0.0, round(sum(held) / len(held), 4))
            kept.append(message_id)
        return kept

    return [found[i] for i in search_timeline.by_time(s, sqlite, parsed, scope, limit, newest, accept)]


def _roles(role: str | Sequence[str] | None) -> tuple[str, ...]:
    """The searchable roles asked for: "user", "assistant", a comma list, or both when None."""
    if role is None:
        return SEARCHABLE_ROLES
    names = role.split(",") if isinstance(role, str) else role
    wanted = {n.strip().lower() for n in names if n and n.strip()}
    return tuple(r for r in SEARCHABLE_ROLES if r in wanted) if wanted else SEARCHABLE_ROLES


def _semantic(db: Database, scope: Scope, query: str, hybrid: bool | None) -> dict[int, float] | None:
    """Embedding similarities of the scope's messages to the query, when hybrid search is on: from the
    provider when EMBEDDINGS_MODEL is set, else from the local model when its extra is installed."""
    settings = get_settings()
    provider = search_embeddings.configured(settings)
    if not ((settings.search_hybrid or provider) if hybrid is None else hybrid):
        return None
    if provider:
        return search_embeddings.similarities(db, settings, scope, query)
    if not search_vectors.available():
        log.warning("SEARCH_HYBRID is on but the hybrid extra is not installed; searching by keywords only")
        return None
    return search_vectors.similarities(db, scope, query)


def _rank(s: Session, backend, parsed: ParsedQuery, scope: Scope, limit: int,
          semantic: dict[int, float] | None, dates: tuple[Day, ...] = (), pool_cap: int | None = None) -> list[SearchHit]:
    wanted = MIN_POOL if len(parsed.terms) > 1 or dates else SINGLE_TERM_POOL
    size = min(pool_cap, wanted) if pool_cap else max(wanted, limit * 5)
    pool = backend.candidates(s, parsed, scope, size, max(MIN_FEW, limit * 2))
    similar = sorted(semantic or {}, key=lambda i: -semantic[i])[:DENSE_POOL]
    rows = _messages(s, [c.message_id for c in pool] + similar, scope)
    ids = list(rows)
    holding = backend.holders(s, parsed.terms + parsed.excluded, rows)
    presence, excluded = holding[: len(parsed.terms)], set().union(*holding[len(parsed.terms):])
    held = {i: [i in holders for holders in presence] for i in ids}
    totals = _with_followers(pool, {i for i, found in held.items() if any(found)})
    if semantic is not None:
        totals = _fused(totals, semantic, similar)
    rarity = [math.log(1 + (len(ids) - len(h) + 0.5) / (len(h) + 0.5)) for h in presence]
    ranked: list[tuple[float, float, int]] = []  # (score, rarity of the terms held, id) of each acceptable row
    for message_id, row in rows.items():
        found = held[message_id]
        if not _acceptable(found, parsed, message_id in excluded):
            continue
        score = totals.get(message_id, 0.0) * _bonus(found, row.created_at, dates)
        ranked.append((score, sum(w for w, ok in zip(rarity, found) if ok), message_id))
    # In a small history FTS5 floors every IDF to 1e-6: scores stay ordered but may tie, and then the rarer
    # terms a message holds decide. Hits are built for the rows kept only (a heavy question's 400 candidates).
    return [SearchHit(message_id=i, session_id=rows[i].session_id, role=rows[i].role, content=rows[i].content or "",
                      created_at=rows[i].created_at, score=score, coverage=round(sum(held[i]) / len(held[i]), 4))
            for score, _, i in heapq.nlargest(limit, ranked)]


def _bonus(found: list[bool], sent: datetime, dates: tuple[Day, ...]) -> float:
    """The factor for holding several query terms, and for being sent on a date the query names."""
    terms = 1 + COVERAGE_BONUS * max(0, sum(found) - 1)
    return terms * (1 + DATE_BONUS * any(d.holds(sent) for d in dates))


def _acceptable(found: list[bool], parsed: ParsedQuery, excluded: bool) -> bool:
    """A hit holds at least one term itself, every required one, and no excluded one. Context and embeddings only
    rank hits: a message close in meaning but holding none of the words asked for is not something the user
    can see why it was found, so it is never one."""
    if excluded or not any(found):
        return False
    return all(ok or not term.required for term, ok in zip(parsed.terms, found))


def _fused(totals: dict[int, float], semantic: dict[int, float], similar: list[int]) -> dict[int, float]:
    """Keyword score scaled to the best one, plus the weighted cosine similarity (measured on LoCoMo)."""
    best = max(totals.values(), default=0.0) or 1.0
    weight = get_settings().search_hybrid_weight
    return {i: totals.get(i, 0.0) / best + weight * semantic.get(i, 0.0) for i in set(totals) | set(similar)}


def _with_followers(pool: list[Candidate], speaking: set[int]) -> dict[int, float]:
    """Each candidate's score plus shares of the scores of the candidates after it that hold a term
    themselves (one matching only through its context would hand the message back its own words)."""
    totals = {c.message_id: c.score for c in pool}
    for c in pool:
        if c.message_id not in speaking:
            continue
        for before, share in zip((c.prev_id, c.prev2_id), NEXT_SHARES):
            if before in totals:
                totals[before] += share * c.score
    return totals


def _messages(s: Session, ids: list[int], scope: Scope) -> dict[int, Message]:
    """The rows among `ids` the scope allows, looked up by primary key and checked here.

    Plain rows of the columns a hit needs, not ORM objects: building hundreds of Message instances
    per search cost more than the search itself. The ids travel as one parameter, so the statement
    is prepared once (an IN list of ~400 placeholders was compiled afresh each search: 3.1 -> 1.6 ms)."""
    if not ids:
        return {}
    sqlite = s.get_bind().dialect.name == "sqlite"
    rows = s.connection().execute(_BY_IDS_SQLITE if sqlite else _BY_IDS_POSTGRES,
                                  {"ids": json.dumps(ids) if sqlite else ids}).all()
    return {
        m.id: m for m in rows
        if m.user_id == scope.user_id and m.role in scope.roles
        and (scope.session_id is None or m.session_id == scope.session_id)
        and (scope.exclude_session_id is None or m.session_id != scope.exclude_session_id)
    }


_HIT_COLUMNS = (select(Message.id, Message.session_id, Message.role, Message.content, Message.created_at,
                       ChatSession.user_id).join(ChatSession, ChatSession.id == Message.session_id))
_BY_IDS_SQLITE = _HIT_COLUMNS.where(Message.id.in_(
    select(func.json_each(bindparam("ids")).table_valued("value").c.value)))
_BY_IDS_POSTGRES = _HIT_COLUMNS.where(Message.id == func.any(bindparam("ids", type_=ARRAY(Integer))))
