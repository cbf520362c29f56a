"""The `recall` provider (on by default): related messages of this user from earlier sessions.

For each incoming message it asks the session search store for this user's best-matching past
messages, never from the current session, and keeps only clearly relevant ones: a hit must hold at
least RECALL_MIN_COVERAGE of the message's search terms and at least RECALL_MIN_TERMS of them (a
one-word "thanks" recalls nothing). At most RECALL_MAX_MESSAGES hits and RECALL_MAX_CHARS characters
are returned; when nothing qualifies, nothing at all is. A hit the threat scanner flags is left out:
recalled text reaches the model on the user's message, fenced, but a payload is better not there.

After a turn, `queue_prefetch` (in the background) runs the same recall for the user's last message and
keeps it for the session; the next turn's `prefetch` takes it instead of searching again when its query
has the same search terms (a resent or regenerated message). At most PREPARED_SESSIONS sessions are
kept, each for PREPARED_TTL_SECONDS, and each text is within RECALL_MAX_CHARS.
"""

from __future__ import annotations

import logging
import threading
import time
from functools import partial
from collections import OrderedDict
from typing import Callable, NamedTuple

from shared.config import Settings
from shared.providers.base import MemoryProvider, ProviderContext
from shared.providers.registry import register
from shared.security.scanner import scan
from shared.stores.search import SearchHit, search_messages
from shared.stores.search_query import parse_query

log = logging.getLogger(__name__)

SEARCH_LIMIT = 10
SEARCH_POOL = 40  # BM25 candidates re-ranked: recall keeps at most a few clearly relevant hits, so a short
# list ranks them as well as the search tool's 400 and costs a tenth of the row loading and term checks
MIN_SNIPPET_CHARS = 80  # a hit cut shorter than this says too little to be worth its tokens
ELLIPSIS = " …"
PREPARED_SESSIONS = 1000
PREPARED_TTL_SECONDS = 600.0
ROLE_NAMES = {"user": "the user said", "assistant": "you answered"}

Search = Callable[..., "list[SearchHit]"]


class Prepared(NamedTuple):
    """A recall computed after a turn for the session's next one."""

    terms: frozenset
    text: str | None
    at: float


@register
class RecallProvider(MemoryProvider):
    """Prefetches the user's own related history; no tools, no system prompt block, nothing to sync."""

    name = "recall"

    def __init__(self, settings: Settings, search: Search = partial(search_messages, pool=SEARCH_POOL)) -> None:
        super().__init__(settings)
        self.search = search
        self._prepared: OrderedDict[str, Prepared] = OrderedDict()
        self._lock = threading.Lock()

    def prefetch(self, query: str, ctx: ProviderContext) -> str | None:
        prepared = self._take(ctx.session_id, query)
        if prepared is not None:
            return prepared.text
        return self.recall(query, ctx)

    def queue_prefetch(self, user_text: str, assistant_text: str, ctx: ProviderContext) -> None:
        """Recall for the last user message now, so a next turn asking the same needs no search."""
        prepared = Prepared(_terms(user_text), self.recall(user_text, ctx), time.monotonic())
        with self._lock:
            self._prepared[ctx.session_id] = prepared
            self._prepared.move_to_end(ctx.session_id)
            while len(self._prepared) > PREPARED_SESSIONS:
                self._prepared.popitem(last=False)

    def on_session_end(self, ctx: ProviderContext) -> None:
        with self._lock:
            self._prepared.pop(ctx.session_id, None)

    def _take(self, session_id: str, query: str) -> Prepared | None:
        """The session's prepared recall, used once, if still fresh and for the same search terms."""
        with self._lock:
            prepared = self._prepared.pop(session_id, None)
        if prepared is None or time.monotonic() - prepared.at > PREPARED_TTL_SECONDS:
            return None
        return prepared if prepared.terms == _terms(query) else None

    def recall(self, query: str, ctx: ProviderContext) -> str | None:
        """The user's best related messages from other sessions, rendered; None when none qualifies."""
        s = self.settings
        terms = len(parse_query(query).terms)
        if terms < s.recall_min_terms or s.recall_max_messages < 1:
            return None
        hits = self.search(ctx.db, ctx.user_id, query, limit=SEARCH_LIMIT, exclude_session_id=ctx.session_id)
        chosen = [h for h in hits if _relevant(h, terms, s) and h.session_id != ctx.session_id]
        return _render(_unique(chosen)[: s.recall_max_messages], s.recall_max_chars)


def _terms(text: str) -> frozenset:
    return frozenset(parse_query(text).terms)


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
