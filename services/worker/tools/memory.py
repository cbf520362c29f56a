"""The `memory` tool: add, replace or remove entries of the user's MEMORY.md and USER.md."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from shared.db import get_database
from shared.security.classifier import SAFE, UNSAFE, classify_texts
from shared.stores import memory_staged
from shared.stores.memory import MemoryRequest, MemoryStore, failure
from services.worker.tools.registry import Tool, ToolContext

MAX_FAILURES = 3
# Failures a retry in the same turn might fix by consolidating; the cap stops the model looping on them.
COUNTED = frozenset({"memory_over_limit", "memory_no_match", "memory_ambiguous", "memory_drift"})
TRACKED_TURNS = 4096  # far above the turns one worker runs at once; bounds what a lost cleanup can leave


class TurnFailures:
    """Failed memory writes per turn id; a worker runs many turns at once, in threads."""

    def __init__(self) -> None:
        self._counts: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()

    def failed(self, turn_id: str) -> int:
        """Count one more failure of this turn; returns the count so far."""
        with self._lock:
            count = self._counts.pop(turn_id, 0) + 1
            self._counts[turn_id] = count
            while len(self._counts) > TRACKED_TURNS:
                self._counts.popitem(last=False)
            return count

    def forget(self, turn_id: str) -> None:
        """A success, or the end of the turn, starts the count again."""
        with self._lock:
            self._counts.pop(turn_id, None)


FAILURES = TurnFailures()


def memory(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """Apply (or stage, under MEMORY_WRITE_APPROVAL) one memory write of the calling user."""
    request = MemoryRequest.from_args(args)
    store = MemoryStore.for_user(ctx.settings, ctx.user_id)
    judged = _second_opinion(ctx, store, request)
    if judged is not None:
        return judged
    if ctx.settings.memory_write_approval:
        refused = store.precheck(request)
        if refused is not None:
            return refused.payload
        staged = memory_staged.stage(get_database(ctx.settings.sqlalchemy_url), ctx.settings, ctx.user_id, request,
                                     session_id=ctx.session_id)
        return {"success": True, "staged": True, "pending_id": staged.id,
                "message": "Memory write staged: the user must approve it before it is saved. Do not repeat it."}
    result = store.write(request)
    if result.ok:
        FAILURES.forget(ctx.turn_id)
        return result.payload
    if result.code not in COUNTED:
        return result.payload
    failures = FAILURES.failed(ctx.turn_id)
    if failures <= MAX_FAILURES:
        return result.payload
    return {"success": False, "done": True,
            "error": f"Memory writes failed {failures} times this turn. Stop retrying: leave memory as it is and "
                     "continue with your reply to the user."}


def _second_opinion(ctx: ToolContext, store: MemoryStore, request: MemoryRequest) -> dict[str, Any] | None:
    """Under MEMORY_SCAN_MODEL: refuse what the classifier calls unsafe, stage what it could not judge."""
    if not ctx.settings.memory_scan_model:
        return None
    refused = store.precheck(request)  # the patterns first: the classifier sees only what they let through
    if refused is not None:
        return refused.payload
    verdict = classify_texts(ctx.settings, request.contents())
    if verdict.outcome == SAFE:
        return None
    if verdict.outcome == UNSAFE:
        return failure("memory_blocked", f"Blocked: {verdict.reason}. Content is injected into the system prompt "
                                         "and must not contain injection or exfiltration payloads.").payload
    staged = memory_staged.stage(get_database(ctx.settings.sqlalchemy_url), ctx.settings, ctx.user_id, request,
                                 session_id=ctx.session_id)
    return {"success": True, "staged": True, "pending_id": staged.id,
            "message": f"Memory write staged: {verdict.reason}, so the user must approve it before it is saved. "
                       "Do not repeat it."}


# What to save and what not to: the main agent's rules and the background review's, which reads them here (its
# first request replays the parent's tools byte for byte, so these words come from the prompt cache; review/prompt.py).
DESCRIPTION = (
    "Save durable facts to memory; they appear in the system prompt of later sessions. What to save, most "
    "important first: the user's preferences, corrections and personal details; then facts about their "
    "environment; then conventions, tool quirks and lessons learned. 'user' is who the user is and how they want "
    "you to work; 'memory' is your notes on their environment, projects and conventions. Save only what a message "
    "or tool result showed, never a guess about the user. A one-off request is not a standing preference unless "
    "the user said 'always', 'never' or 'from now on', or asked you to remember it. Write short declarative facts "
    "('User prefers British English'), not instructions to yourself. Skip trivia, easily found facts, raw data, "
    "task progress, work logs and TODO state; procedures belong in skills. Never save transient errors, a missing "
    "binary or a claim that a tool does not work; replace a similar entry rather than add a near-duplicate. When "
    "a store is full, the error lists its entries: merge or prune, then retry this turn."
)
_OPERATION = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["add", "replace", "remove"]},
        "content": {"type": "string"},
        "old_text": {"type": "string"},
    },
    "required": ["action"],
}

MEMORY = Tool(
    name="memory",
    description=DESCRIPTION,
    parameters={
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["add", "replace", "remove"], "description": "A single change."},
            "target": {"type": "string", "enum": ["memory", "user"],
                       "description": "'user' for who the user is; 'memory' for your own notes."},
            "content": {"type": "string", "description": "The entry text, for add and replace."},
            "old_text": {"type": "string",
                         "description": "A substring of exactly one existing entry, for replace and remove."},
            "operations": {"type": "array", "items": _OPERATION,
                           "description": "Several changes applied in order, all or nothing."},
        },
        "required": ["target"],
    },
    handler=memory,
    guidance=(
        "Save what you learn that lasts (above all the user's preferences, corrections and personal details) "
        "with the memory tool, in short entries: both stores have a character limit. The memory in this prompt "
        "was captured when the conversation started; later changes arrive as a <memory-update> note.",
    ),
)
