"""When a review is due: count each finished turn of a session, and send the review it makes due.

Two counters per session, kept in the database (shared.stores.reviews), as Hermes Agent does:
- user turns since the last memory write; a memory review is due at MEMORY_REVIEW_INTERVAL;
- model calls of the agent loop since the last skill write, counted across turns; a skill review is
  due at SKILL_REVIEW_INTERVAL.
A successful `memory` or `skill_manage` call (applied or staged) resets its counter, whether the
foreground agent made it or a review did. Every finished turn counts; only one that ended with an
answer (completed) makes a review due. The review row is committed first; then its id is sent. A
review nobody picked up (a lost send, a dead reviewer) is sent again after the session's next turn.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from shared.models.reviews import Review
from shared.models.sessions import Message
from shared.models.turns import Turn
from shared.queue.app import enqueue
from shared.queue.names import REVIEW_SESSION
from shared.queue.payloads import ReviewSession
from shared.stores import reviews, sessions
from shared.stores.reviews import Intervals, TurnCount
from services.worker.agent.context import TurnContext

log = logging.getLogger(__name__)

MEMORY_TOOL, SKILL_TOOL = "memory", "skill_manage"


def succeeded(content: Any) -> bool:
    """Whether a stored tool result says the call succeeded (a staged write counts)."""
    try:
        value = json.loads(content) if isinstance(content, str) else None
    except ValueError:
        return False
    return isinstance(value, dict) and value.get("success") is True


MEMORY_ACTIONS = ("add", "replace", "remove")


def valid_memory_call(call: dict[str, Any]) -> bool:
    """A memory call whose arguments name a real action or a batch: it resets the memory counter, as in the
    anchor, even when the store refused it (over the limit, no match)."""
    try:
        args = json.loads((call.get("function") or {}).get("arguments") or "")
    except ValueError:
        return False
    return isinstance(args, dict) and (args.get("action") in MEMORY_ACTIONS or isinstance(args.get("operations"), list))


def turn_count(turn: Turn, rows: list[Message], *, completed: bool) -> TurnCount:
    """What this turn adds: its model calls (one assistant message each), its valid memory calls and skill writes."""
    ok_calls = {m.tool_call_id for m in rows if m.role == "tool" and succeeded(m.content)}
    assistant = [m for m in rows if m.role == "assistant"]
    memory_written = False
    last_skill_write = None
    for index, message in enumerate(assistant):
        for call in message.tool_calls or []:
            name = (call.get("function") or {}).get("name")
            if name == MEMORY_TOOL and valid_memory_call(call):
                memory_written = True
            if call.get("id") not in ok_calls:
                continue
            if name == SKILL_TOOL:
                last_skill_write = index
    after_skill = None if last_skill_write is None else len(assistant) - 1 - last_skill_write
    return TurnCount(session_id=turn.session_id, turn_id=turn.id, seq=turn.seq, iterations=len(assistant),
                     memory_written=memory_written, iterations_after_skill_write=after_skill, completed=completed)


def on_turn_finished(ctx: TurnContext, status: str, output: str | None) -> None:
    """After-turn hook: count the turn; send the review it made due, or one a lost send left behind."""
    settings = ctx.settings
    if settings.memory_review_interval == 0 and settings.skill_review_interval == 0:
        return
    rows = list(ctx.rows) if ctx.rows is not None else sessions.turn_messages(ctx.db, ctx.turn.id)
    count = turn_count(ctx.turn, rows, completed=status == "completed")
    intervals = Intervals(memory=settings.memory_review_interval, skill=settings.skill_review_interval)
    review = reviews.count_turn(ctx.db, count, intervals, ctx.session.system_prompt, settings.review_lease_seconds)
    if review is None:
        return
    if review.turn_id == ctx.turn.id:
        log.info("%s review due for session %s: %s", review.trigger, review.session_id, review.id)
    else:
        log.warning("review %s was never picked up or its reviewer stopped; sending it again", review.id)
    send(review)


def send(review: Review) -> None:
    """Enqueue the review's session on queue `review` (the row is already committed)."""
    enqueue(REVIEW_SESSION, ReviewSession(session_id=review.session_id, review_id=review.id))
