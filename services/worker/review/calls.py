"""A review's tools and their calls, each run at most once whatever happens to the worker running it.

The review is offered the parent's whole tool list (the same schemas, byte for byte, so the
provider's prompt cache covers the tools), but only memory, skills_list, skill_view and skill_manage
run: any other call is answered with a tool error and nothing executes. Skill writes run as the
writer "review": only unpinned skills a review created may change, and only files this review loaded
with skill_view (read from the ledger, so a takeover keeps what was read). Every call is written to the ledger
before it runs; a call found written but unfinished after a takeover has an unknown effect, so it
is answered as interrupted and never run again.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from shared.llm import ToolCall
from shared.models.reviews import CallOutcome, Review, ReviewCall
from shared.files.skill_format import SKILL_FILE
from shared.stores import reviews, sessions
from services.worker.agent.toolcalls import ToolBatch
from services.worker.runtime import Runtime
from services.worker.tools.registry import ToolContext, ToolRegistry
from services.worker.tools.skills import writing_as
from services.worker.mcp_client import tools as mcp_tools
from services.worker.tools.toolsets import WEBHOOK_SOURCE, tools_for_session

REVIEW_TOOLS = ("memory", "skills_list", "skill_view", "skill_manage")
RESETS = {"memory": "memory", "skill_manage": "skill"}  # the counter a successful write resets
WRITES = frozenset(RESETS)


REFUSED = "[review] only memory and skill tools may be used during a background review; {name} was not run."


def review_tools(registry: ToolRegistry) -> ToolRegistry:
    """The parent's review tools, in the parent's order: the only ones a review runs."""
    return ToolRegistry([tool for tool in registry if tool.name in REVIEW_TOOLS])


def refused(name: str) -> str:
    """The tool error for a call of one of the parent's other tools: offered for the cache, never run."""
    return json.dumps({"success": False, "error": REFUSED.format(name=name)})


def interrupted(name: str) -> str:
    return json.dumps({"success": False, "error": (
        f"Tool execution interrupted: the reviewer stopped while {name} was running, so its effect is unknown. "
        "Check the current state before trying again.")})


def outcome_of(name: str, content: str) -> CallOutcome:
    """What a call's result says happened."""
    try:
        value = json.loads(content)
    except ValueError:
        value = None
    if not isinstance(value, dict) or "error" in value or value.get("success") is False:
        return CallOutcome.refused
    if name not in WRITES:
        return CallOutcome.done
    return CallOutcome.staged if value.get("staged") else CallOutcome.applied


def pending_calls(own: list[dict[str, Any]]) -> list[tuple[int, ToolCall]]:
    """(ledger index, call) of the latest assistant message's calls that have no result message yet."""
    index, last = 0, None
    for position, message in enumerate(own):
        if message["role"] == "assistant" and message.get("tool_calls"):
            if last is not None:
                index += len(own[last]["tool_calls"])
            last = position
    if last is None:
        return []
    answered = {m.get("tool_call_id") for m in own[last + 1:]}
    calls = [(index + i, c) for i, c in enumerate(own[last]["tool_calls"])]
    return [(i, ToolCall(c["id"], c["function"]["name"], c["function"]["arguments"]))
            for i, c in calls if c["id"] not in answered]


class ReviewCalls:
    """Runs one review's tool calls through its ledger."""

    def __init__(self, runtime: Runtime, review: Review, cancelled: Callable[[], bool]) -> None:
        self.rt = runtime
        self.review = review
        session = sessions.get_session(runtime.db, None, review.session_id)
        self.offered = mcp_tools.for_turn(tools_for_session(runtime.tools, runtime.settings, runtime.db, session),
                                          runtime.settings, review.user_id, review.session_id,
                                          writes=session.source != WEBHOOK_SOURCE)
        self.tools = review_tools(runtime.tools)
        self.cancelled = cancelled
        self.ctx = ToolContext(user_id=review.user_id, session_id=review.session_id, turn_id=review.id,
                               settings=runtime.settings, cancelled=cancelled)
        self.started = {call.call_index for call in reviews.ledger(runtime.db, review.id)}

    def schemas(self) -> list[dict[str, Any]] | None:
        """Exactly what the parent's turn sent as its tools."""
        return self.offered.schemas() or None

    def run(self, pending: list[tuple[int, ToolCall]]) -> list[dict[str, Any]]:
        """Answer each pending call, in order; returns the tool messages, each already recorded."""
        return [self.answer(index, call) for index, call in pending]

    def answer(self, index: int, call: ToolCall) -> dict[str, Any]:
        if index in self.started:
            content, outcome = interrupted(call.name), CallOutcome.interrupted
        else:
            reviews.start_call(self.rt.db, self.review.id, self.rt.worker_id, index, call.id, call.name,
                               call.arguments)
            content = self.execute(call)
            outcome = outcome_of(call.name, content)
        message = {"role": "tool", "tool_call_id": call.id, "content": content}
        resets = RESETS.get(call.name) if outcome in (CallOutcome.applied, CallOutcome.staged) else None
        reviews.finish_call(self.rt.db, self.review.id, self.rt.worker_id, index, outcome, content, message, resets)
        return message

    def execute(self, call: ToolCall) -> str:
        """Run one call as the foreground agent would, except that skill writes are the review's.

        A call of another of the parent's tools is refused here; an unknown name gets ToolBatch's own error.
        """
        if call.name in self.offered and call.name not in REVIEW_TOOLS:
            return refused(call.name)
        with writing_as("review", viewed_files(reviews.ledger(self.rt.db, self.review.id))):
            return ToolBatch(self.tools, self.ctx, self.cancelled).run([call], lambda result: None)[0].content


def viewed_files(ledger: list[ReviewCall]) -> frozenset[tuple[str, str]]:
    """(skill, file) of every skill_view this review made that answered: what it may now rewrite."""
    seen = set()
    for call in ledger:
        if call.name != "skill_view" or call.outcome != CallOutcome.done.value:
            continue
        try:
            args = json.loads(call.arguments)
        except ValueError:
            continue
        if isinstance(args, dict) and isinstance(args.get("name"), str):
            seen.add((args["name"], args.get("file_path") or SKILL_FILE))
    return frozenset(seen)
