"""The `recall` provider (on by default): related messages of this user from earlier sessions.

For each incoming message it asks the session search store for this user's best-matching past
messages, never from the current session, and keeps only clearly relevant ones: a hit must hold at
least RECALL_MIN_COVERAGE of the message's search terms and at least RECALL_MIN_TERMS of them (a
one-word "thanks" recalls nothing). At most RECALL_MAX_MESSAGES hits and RECALL_MAX_CHARS characters
are returned; when nothing qualifies, nothing at all is. A hit the threat scanner flags is left out:
recalled text reaches the model on the user's message, fenced, but a payload is better not there.

Each turn searches for its own message (the search starts as the turn begins, beside its other pre-call
work). Nothing is prepared after a turn: the next message is not known then, and a search for the last
one served only a resend of it, at a whole search's CPU on the worker after every turn (about 7 ms at
100,000 messages of history, on the same GIL as the next turn's own work).
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Callable

from shared.config import Settings
from shared.providers.base import MemoryProvider, ProviderContext
from shared.security.scanner import scan
from shared.search.engine import SearchHit, search_messages
from shared.search.query import parse_query

log = logging.getLogger(__name__)

SEARCH_LIMIT = 10
# Keywords only (hybrid=False): this search runs on the turn's path, and an embeddings call there (or the local
# model embedding a user's history) would put a provider round trip before every model call; the kept hits
# must hold most of the message's terms anyway (RECALL_MIN_COVERAGE), which embeddings do not change.
SEARCH_POOL = 40  # BM25 candidates re-ranked: recall keeps at most a few clearly relevant hits, so a short
# list ranks them as well as the search tool's 400 and costs a tenth of the row loading and term checks
MIN_SNIPPET_CHARS = 80  # a hit cut shorter than this says too little to be worth its tokens
ELLIPSIS = " …"
ROLE_NAMES = {"user": "the user said", "assistant": "you answered"}

Search = Callable[..., "list[SearchHit]"]


class RecallProvider(MemoryProvider):
    """Prefetches the user's own related history; no tools, no system prompt block, nothing to sync."""

    name = "recall"

    def __init__(self, settings: Settings,
                 search: Search = partial(search_messages, pool=SEARCH_POOL, hybrid=False)) -> None:
        super().__init__(settings)
        self.search = search

    def prefetch(self, query: str, ctx: ProviderContext) -> str | None:
        return self.recall(query, ctx)

    def recall(self, query: str, ctx: ProviderContext) -> str | None:
        """The user's best related messages from other sessions, rendered; None when none qualifies."""
        s = self.settings
        terms = len(parse_query(query).terms)
        if terms < s.recall_min_terms or s.recall_max_messages < 1:
            return None
        hits = self.search(ctx.db, ctx.user_id, query, limit=SEARCH_LIMIT, exclude_session_id=ctx.session_id)
        chosen = [h for h in hits if _relevant(h, terms, s) and h.session_id != ctx.session_id]
        return _render(_unique(chosen)[: s.recall_max_messages], s.recall_max_chars)


def _relevant(hit: SearchHit, terms: int, settings: Settings) -> bool:
    matched = round(hit.coverage * terms)
    if hit.coverage < settings.recall_min_coverage or matched < settings.recall_min_terms:
        return False
    finding = scan(hit.content)
    if finding is not None:
        log.info("recall left out message %s: %s", hit.message_id, finding.pattern_id)
    return finding is None and bool(hit.content.strip())


def _unique(hits: list[SearchHit]) -> list[SearchHit]:
    seen: set[str] = set()
    out = []
    for hit in hits:
        key = " ".join(hit.content.split())
        if key not in seen:
            seen.add(key)
            out.append(hit)
    return out


def _render(hits: list[SearchHit], budget: int) -> str | None:
    """One line per hit, best first, `[date, who] text`, cut so the whole stays within `budget` chars."""
    lines: list[str] = []
    used = 0
    for hit in hits:
        head = f"[{hit.created_at:%Y-%m-%d}, {ROLE_NAMES.get(hit.role, hit.role)}] "
        room = budget - used - (1 if lines else 0) - len(head)
        text = " ".join(hit.content.split())
        if len(text) > room:
            if room < MIN_SNIPPET_CHARS:
                break
            text = text[: room - len(ELLIPSIS)].rstrip() + ELLIPSIS
        line = head + text
        lines.append(line)
        used += len(line) + (1 if len(lines) > 1 else 0)
    return "\n".join(lines) or None
