"""The one line a user sees after a review saved something: `review.completed`, as Hermes Agent's notice.

Built from the review's ledger (only memory and skill writes that were applied or staged), so a review
that saved nothing says nothing. The event waits in the session's notices (shared.messaging.events) and goes out
on the stream of the session's next turn: the one already queued or running when the review ends, or
else the next one the user starts, right after its `turn.started`.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import redis

from shared.messaging import events
from shared.models.reviews import CallOutcome, Review, ReviewCall
from shared.stores import reviews, turns
from services.worker.runtime import Runtime

log = logging.getLogger(__name__)

EVENT = "review.completed"
PREFIX = "Self-improvement review: "
SAVED = (CallOutcome.applied.value, CallOutcome.staged.value)
MEMORY_VERBS = {"add": "saved to", "replace": "updated in", "remove": "removed from"}
SKILL_VERBS = {"create": "created", "edit": "rewritten", "patch": "patched", "delete": "archived",
               "write_file": "file added", "remove_file": "file removed"}
TARGETS = {"user": "user profile", "memory": "memory"}


def arguments(call: ReviewCall) -> dict[str, Any]:
    try:
        value = json.loads(call.arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def writes(ledger: list[ReviewCall]) -> list[dict[str, Any]]:
    """What the review saved, one entry per memory operation or skill write, in order."""
    out = []
    for call in ledger:
        if call.outcome not in SAVED:
            continue
        args = arguments(call)
        if call.name == "memory":
            ops = args.get("operations") if isinstance(args.get("operations"), list) else [args]
            out += [{"tool": "memory", "action": op.get("action"), "target": op.get("target") or "memory",
                     "outcome": call.outcome} for op in ops if isinstance(op, dict)]
        elif call.name == "skill_manage":
            out.append({"tool": "skill_manage", "action": args.get("action"), "skill": args.get("name"),
                        "outcome": call.outcome})
    return out


def describe(write: dict[str, Any]) -> str:
    """`saved to user profile`, `skill 'x' created`; a staged write says it awaits approval."""
    if write["tool"] == "memory":
        target = TARGETS.get(str(write["target"]), str(write["target"]))
        text = f"{MEMORY_VERBS.get(str(write['action']), 'changed in')} {target}"
    else:
        text = f"skill '{write['skill']}' {SKILL_VERBS.get(str(write['action']), 'changed')}"
    return text + (" (awaiting approval)" if write["outcome"] == CallOutcome.staged.value else "")


def summary(saved: list[dict[str, Any]]) -> str:
    """`Self-improvement review: a · b`, duplicates removed, as Hermes Agent prints it."""
    return PREFIX + " · ".join(dict.fromkeys(describe(w) for w in saved))


def announce(runtime: Runtime, review: Review) -> bool:
    """Publish the review's notice if it saved anything; returns whether it did. Best effort: the
    writes are already final, so a Redis failure only costs the line."""
    saved = writes(reviews.ledger(runtime.db, review.id))
    if not saved:
        return False
    data = {"review_id": review.id, "session_id": review.session_id, "turn_id": review.turn_id,
            "summary": summary(saved), "writes": saved}
    try:
        events.hold_notice(runtime.redis, review.session_id, EVENT, data)
        waiting = turns.open_turn(runtime.db, review.session_id)
        if waiting is not None:
            events.deliver_notices(runtime.redis, review.session_id, waiting.id)
    except (redis.RedisError, OSError):
        log.warning("review %s saved something but its notice could not be published", review.id, exc_info=True)
        return False
    return True
