"""SQLite backend of message search: FTS5 BM25 with per-column weights, a trigram table for CJK text."""

from __future__ import annotations

import json
import math
import sqlite3
from collections import defaultdict
from functools import lru_cache
from typing import Sequence

from sqlalchemy.exc import DBAPIError
from sqlmodel import Session

from shared.models.sessions import Message
from shared.search.budget import Backend, Found, budgeted
from shared.search.common import Common
from shared.search.query import ParsedQuery, Term, fts5_match, fts5_term
from shared.search.scope import INDEXED_ROLES, Candidate, Scope

TOKENIZER = "porter unicode61 remove_diacritics 2"  # as migration 0003 built messages_fts
BODY = "body"
ALL_COLUMNS = "{body prev prev2}"
WEIGHTS = "1.0, 0.5, 0.2"  # the message, the one before it, the one before that (measured on LoCoMo)
TRIGRAM_CHARS = 3
BUDGET = 2000  # matching rows FTS5 ranks per query at most (see search_budget; 3000 until measured on 1M messages)
OWN_ROW_COST = 12  # a scope row loaded and indexed afresh ≈ 13 µs, a match ranked by messages_fts ≈ 1.1 µs
WALK = 10_000  # the whole index's newest matches a newest-first listing looks through, at most
OWN_MAX = 500  # scope rows indexed afresh at most (≈ 7 ms); a larger scope takes the whole-index plan
_FROM = "JOIN messages AS m ON m.id = {t}.rowid JOIN sessions AS s ON s.id = m.session_id"
# FTS5 keeps a row's columns in its content table, `messages_fts_content` (id = rowid, c0..c4 = body,
# prev, prev2, prev_id, prev2_id: the file format's layout). Read there by primary key, not through
# the virtual table, which loads the whole row for any column: 400 rows' context ids 1.3-2.6 ms that
# way, 0.5-0.7 ms this way (1M messages).
CONTENT = "messages_fts_content"
# The context ids of a statement's (rowid, score) rows, only for the rows kept, not for every match
# ranked or walked (~2 µs a match: 5 of 13 ms ranking 2,500 matches at 1M).
_WITH_CONTEXT = (f"SELECT r.rowid, r.score, c.c3, c.c4 FROM ({{kept}}) AS r JOIN {CONTENT} AS c ON c.id = r.rowid")
TOP_MARGIN = 1.3  # a scope holding most of the index is ranked from the index's best pool / share x 1.3 first
_TOP = (f"""
WITH top AS MATERIALIZED (
    SELECT f.rowid AS rowid, -bm25(messages_fts, {WEIGHTS}) AS score FROM messages_fts AS f
    WHERE messages_fts MATCH :match ORDER BY score DESC LIMIT :top),
edge AS (SELECT count(*) AS seen, min(score) AS lowest FROM top),
kept AS (SELECT t.rowid, t.score FROM top AS t {_FROM.format(t='t')} WHERE {{where}} ORDER BY t.score DESC LIMIT :pool)
SELECT k.rowid, k.score, c.c3, c.c4, e.seen, e.lowest
FROM kept AS k JOIN {CONTENT} AS c ON c.id = k.rowid CROSS JOIN edge AS e
""")
FIRST_SPAN = 250  # rowids in the first window a newest listing reads (see _newest)
WIDER = 4  # each next window this many times wider
# A window's matches in FTS5's order: how many, and those in the scope (one pass, each joined once).
_WINDOW_MATCHES = (f"SELECT count(*), group_concat(CASE WHEN mine THEN rowid END) FROM ("
                   f"SELECT f.rowid AS rowid, ({{where}}) AS mine FROM messages_fts AS f {_FROM.format(t='f')} "
                   "WHERE messages_fts MATCH :match AND f.rowid >= :low AND f.rowid < :high)")
# The scope's newest among a window's newest :walk matches: FTS5 hands them newest first to a co-routine
# that stops at :limit of the scope's.
_WINDOW_NEWEST = (f"SELECT rowid FROM (SELECT f.rowid AS rowid, ({{where}}) AS mine "
                  f"FROM messages_fts AS f {_FROM.format(t='f')} WHERE messages_fts MATCH :match "
                  "AND f.rowid >= :low AND f.rowid < :high ORDER BY f.rowid DESC LIMIT :walk) WHERE mine LIMIT :limit")
_SCRATCH = ("CREATE VIRTUAL TABLE own USING fts5(body, prev, prev2, prev_id UNINDEXED, prev2_id UNINDEXED, "
            f"tokenize = '{TOKENIZER}')")


def _run(s: Session, sql: str, params: dict) -> sqlite3.Cursor:
    """A statement on the session's own driver connection, in its transaction, with `:name` parameters.

    Straight to sqlite3, which binds named parameters itself: through SQLAlchemy's `execute` each of a
    search's seven or so statements cost 50-100 µs of Python around SQLite's own work, on the GIL the turn
    shares (a recall search at 100k messages: see bench/README.md). Its errors are SQLAlchemy's, as if it
    had run there (`is_query_error`, the worker's transient errors)."""
    try:
        return s.connection().connection.driver_connection.execute(sql, params)
    except sqlite3.Error as exc:
        raise DBAPIError.instance(sql, params, exc, sqlite3.Error) from exc


def _scope_size(s: Session, scope: Scope, cap: int) -> int:
    """`Scope.size`, on the driver connection."""
    return _run(s, *scope.counted(cap)).fetchone()[0]


def is_query_error(exc: DBAPIError) -> bool:
    """An FTS5 refusal of the query text (the parser should never let one through)."""
    message = str(exc.orig).lower()
    return "fts5" in message or "match" in message


def candidates(s: Session, parsed: ParsedQuery, scope: Scope, pool: int, few: int) -> list[Candidate]:
    """The best `pool` messages by BM25 (or `few` newest, unranked), plus every one holding a CJK term."""
    where, params = scope.where()
    found: dict[int, Candidate] = {}
    if fts5_match(parsed, BODY, ALL_COLUMNS) is not None:
        found = _latin(s, parsed, scope, pool, few)
    cjk = [t for t in parsed.terms if t.cjk]
    if cjk:
        scores = _cjk_scores(s, cjk, where, params)
        for message_id in sorted(scores, key=scores.get, reverse=True)[:pool]:
            old = found.get(message_id) or _with_context(s, message_id)
            found[message_id] = Candidate(message_id, old.score + scores[message_id], old.prev_id, old.prev2_id)
    return list(found.values())


def _latin(s: Session, parsed: ParsedQuery, scope: Scope, pool: int, few: int) -> Found:
    """The non-CJK terms' candidates, within the ranking budget (see search_budget)."""
    where, params = scope.where()
    latin = ParsedQuery(tuple(t for t in parsed.terms if not t.cjk), tuple(t for t in parsed.excluded if not t.cjk))
    return budgeted(latin, Backend(
        count=lambda q, cap: _count(s, fts5_match(q, BODY, ALL_COLUMNS), cap),
        count_many=lambda qs, cap: _counts(s, [fts5_match(q, BODY, ALL_COLUMNS) for q in qs], cap),
        ranked=lambda q: _ranked(s, fts5_match(q, BODY, ALL_COLUMNS), where, params, pool, _top(s, scope, pool)),
        newest=lambda q, own: _newest(s, fts5_match(q, BODY, BODY if own else ALL_COLUMNS), where, params, few),
        budget=BUDGET,
        scope_size=lambda cap: _scope_size(s, scope, cap),
        own=lambda q, newest: _own(s, q, scope, few if newest else pool, newest),
        own_row_cost=OWN_ROW_COST,
        own_max=OWN_MAX,
    ))


def _own(s: Session, parsed: ParsedQuery, scope: Scope, limit: int, newest: bool) -> Found:
    """A small scope's best (or newest) matches, from a scratch in-memory index of its rows alone.

    FTS5 over the big index would read every user's matches: bm25() counts each term's rows in the
    whole table, and a `rowid IN (...)` filter costs a seek per row and term. The scratch index has
    the big one's columns, tokenizer and weights; its BM25 statistics are the user's own."""
    members, params = scope.members()
    rows = _run(s, f"SELECT c.id, c.c0, c.c1, c.c2, c.c3, c.c4 FROM {CONTENT} AS c WHERE c.id IN ({members})",
                params).fetchall()
    if not rows:
        return {}
    score = "0.0" if newest else f"-bm25(own, {WEIGHTS})"
    order = "rowid DESC" if newest else "score DESC"
    scratch = sqlite3.connect(":memory:")
    try:
        scratch.execute(_SCRATCH)
        scratch.executemany("INSERT INTO own (rowid, body, prev, prev2, prev_id, prev2_id) VALUES (?, ?, ?, ?, ?, ?)",
                            [tuple(r) for r in rows])
        found = scratch.execute(
            f"SELECT rowid, {score} AS score, prev_id, prev2_id FROM own WHERE own MATCH ? ORDER BY {order} LIMIT ?",
            (fts5_match(parsed, BODY, ALL_COLUMNS), limit))
        return {r[0]: Candidate(r[0], r[1], r[2], r[3]) for r in found}
    finally:
        scratch.close()


def _newest(s: Session, match: str, where: str, params: dict, limit: int) -> dict[int, Candidate]:
    """The scope's newest matches among the whole index's newest WALK matches: unbounded, a user owning
    few of a common word's matches walked all of them (55 ms of a 66 ms search for a 1,200-message user
    beside a 100k one); the scope's older matches of such a word are left to the ranked rare terms.

    Newest first a window of rowids at a time, each window's matches read in FTS5's own (ascending)
    order: read descending, FTS5 cannot skip through a long doclist, and a phrase with a word in 99% of
    the rows cost 15-17 ms through all its matches instead of 10-13 (a light user's phrase at 1M). The
    first window is small (FIRST_SPAN rowids, for a heavy user's common word), each next one sized by
    the scope's matches found so far (at most four times wider); the window where the WALK-th newest
    match falls is walked newest first instead."""
    found: list[int] = []
    top = (_run(s, "SELECT max(id) FROM messages", {}).fetchone()[0] or 0) + 1
    seen, high, span = 0, top, FIRST_SPAN
    while len(found) < limit and seen < WALK and high > 0:
        low = max(0, high - span)
        window = {**params, "match": match, "low": low, "high": high}
        n, mine = _run(s, _WINDOW_MATCHES.format(where=where), window).fetchone()
        if seen + n > WALK:  # the bound falls in this window: its newest WALK - seen matches only
            rows = _run(s, _WINDOW_NEWEST.format(where=where),
                        {**window, "walk": WALK - seen, "limit": limit - len(found)})
            found += [r[0] for r in rows]
            break
        found += sorted(map(int, mine.split(",")), reverse=True)[:limit - len(found)] if mine else []
        seen, high = seen + n, low
        # the next window as wide as should hold what is still wanted, at the rate found so far (a light
        # user's common word: 4x wider overshot, joining twice the matches the newest-first walk did)
        wanted = int(1.5 * (limit - len(found)) * (top - low) / len(found)) if found else span * WIDER
        span = max(FIRST_SPAN, min(span * WIDER, wanted))
    if not found:
        return {}
    rows = _run(s, _WITH_CONTEXT.format(kept="SELECT value AS rowid, 0.0 AS score FROM json_each(:ids)"),
                {"ids": json.dumps(found)})
    return {r[0]: Candidate(r[0], r[1], r[2], r[3]) for r in rows}


def _count(s: Session, match: str, cap: int) -> int:
    """How many rows match, counting no further than `cap`."""
    return _counts(s, [match], cap)[0]


def _counts(s: Session, matches: list[str], cap: int) -> list[int]:
    """`_count` of each, in one statement (a broad question counts up to eight terms); a query known to be
    common answers `cap` without counting (search_common.Common)."""
    index = str(s.get_bind().url)
    counts = [cap if COMMON.holds(index, match, cap) else None for match in matches]
    unknown = [match for match, n in zip(matches, counts) if n is None]
    if unknown:
        params = {f"m{i}": match for i, match in enumerate(unknown)}
        counted = iter(_run(s, _counting(len(unknown)), {**params, "cap": cap}).fetchone())
        counts = [next(counted) if n is None else n for n in counts]
        for match, n in zip(matches, counts):
            COMMON.counted(index, match, n)
    return counts


COMMON = Common(BUDGET)  # queries known to match the budget's rows: not counted again


@lru_cache(maxsize=16)
def _counting(n: int) -> str:
    """The statement counting `n` queries' matches, each no further than :cap (built once per n)."""
    one = "(SELECT count(*) FROM (SELECT 1 FROM messages_fts WHERE messages_fts MATCH :m{i} LIMIT :cap))"
    return "SELECT " + ", ".join(one.format(i=i) for i in range(n))


def _top(s: Session, scope: Scope, pool: int) -> int:
    """How many of the whole index's best matches to rank the scope's `pool` from (0: rank the scope's
    own): for a scope that is most of the index, by its share of the sessions (at least half), enough
    to hold `pool` of its own with TOP_MARGIN to spare."""
    if scope.session_id is not None or set(scope.roles) != set(INDEXED_ROLES):
        return 0
    share = _run(s, "SELECT CAST((SELECT count(*) FROM sessions WHERE user_id = :u) AS REAL) "
                 "/ max(1, (SELECT max(rowid) FROM sessions))", {"u": scope.user_id}).fetchone()[0] or 0.0
    return int(pool * TOP_MARGIN / min(share, 1.0)) if share >= 0.5 else 0


def _ranked(s: Session, match: str, where: str, params: dict, pool: int, top: int = 0) -> dict[int, Candidate]:
    """The scope's best `pool` matches by BM25; for a scope holding most of the index (`top` > 0), first
    from the whole index's best `top` (see _best_of_top)."""
    if top:
        found = _best_of_top(s, match, where, params, pool, top)
        if found is not None:
            return found
    kept = (f"SELECT f.rowid AS rowid, -bm25(messages_fts, {WEIGHTS}) AS score "
            f"FROM messages_fts AS f {_FROM.format(t='f')} "
            f"WHERE messages_fts MATCH :match AND {where} ORDER BY score DESC LIMIT :pool")
    rows = _run(s, _WITH_CONTEXT.format(kept=kept), {**params, "match": match, "pool": pool})
    return {r[0]: Candidate(r[0], r[1], r[2], r[3]) for r in rows}


def _best_of_top(s: Session, match: str, where: str, params: dict, pool: int, top: int) -> Found | None:
    """The scope's best `pool` among the whole index's best `top` matches, or None when that may not be
    the scope's best `pool` of all: exact when `top` held every match, or when the scope's `pool`-th best
    scores above the `top`-th (no match left out can beat it). Scoring every match without joining
    each to messages and sessions, then joining `top` of them: a heavy user's question at 1M, ranking
    2,500 matches, 7.5 -> 5 ms."""
    rows = _run(s, _TOP.format(where=where), {**params, "match": match, "pool": pool, "top": top}).fetchall()
    if not rows:
        return None
    seen, lowest = rows[0][4], rows[0][5]
    if seen == top and (len(rows) < pool or min(r[1] for r in rows) <= lowest):
        return None
    return {r[0]: Candidate(r[0], r[1], r[2], r[3]) for r in rows}


def _with_context(s: Session, message_id: int) -> Candidate:
    row = _run(s, f"SELECT c3, c4 FROM {CONTENT} WHERE id = :id", {"id": message_id}).fetchone()
    return Candidate(message_id, 0.0, row[0] if row else None, row[1] if row else None)


def _cjk_scores(s: Session, terms: list[Term], where: str, params: dict) -> dict[int, float]:
    """BM25 with one occurrence per message: each CJK term found adds its IDF."""
    total = _run(s, "SELECT max(rowid) FROM messages_fts", {}).fetchone()[0] or 1
    scores: dict[int, float] = defaultdict(float)
    for term in terms:
        ids = _cjk_ids(s, term.atoms[0].words[0], where, params)
        idf = math.log(1 + (total - len(ids) + 0.5) / (len(ids) + 0.5))
        for message_id in ids:
            scores[message_id] += idf
    return scores


def _cjk_ids(s: Session, needle: str, where: str, params: dict) -> list[int]:
    """Messages holding the CJK run: through the trigram index, or by scanning CJK messages when short."""
    if len(needle) >= TRIGRAM_CHARS:
        condition, value = "messages_cjk MATCH :needle", f'"{needle}"'
    else:
        condition, value = "instr(m.content, :needle) > 0", needle
    rows = _run(s, f"SELECT c.rowid FROM messages_cjk AS c {_FROM.format(t='c')} WHERE {condition} AND {where}",
                {**params, "needle": value})
    return [r[0] for r in rows]


def holders(s: Session, terms: Sequence[Term], rows: dict[int, Message]) -> list[set[int]]:
    """For each term, which of these messages hold it themselves.

    FTS5 decides, on a scratch in-memory index of just these messages with the same tokenizer:
    asking the big index about a hundred rowids costs a seek per row and term.
    """
    if not terms or not rows:
        return [set() for _ in terms]
    scratch = sqlite3.connect(":memory:")
    try:
        scratch.execute(f"CREATE VIRTUAL TABLE t USING fts5(body, tokenize = '{TOKENIZER}')")
        scratch.executemany("INSERT INTO t (rowid, body) VALUES (?, ?)", [(i, m.content or "") for i, m in rows.items()])
        return [_holding(scratch, term, rows) for term in terms]
    finally:
        scratch.close()


def _holding(scratch: sqlite3.Connection, term: Term, rows: dict[int, Message]) -> set[int]:
    if term.cjk:
        return {i for i, m in rows.items() if term.atoms[0].words[0] in (m.content or "")}
    return {r[0] for r in scratch.execute("SELECT rowid FROM t WHERE t MATCH ?", (fts5_term(term),))}
