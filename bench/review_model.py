"""The bench's scripted model answers a background review the way a real model does: one short tool call or
"Nothing to save.", for our reviewer and for Hermes Agent's review fork alike.

Echoing the review instruction back (what the scripted model does with anything unscripted) made every review
a cheap no-op, in both runs, so neither side paid for a review's write and the turn that follows it. Here a
memory review (or a combined one) saves one short fact about the user on every other request and says
"Nothing to save." on the others; a skills-only review says "Nothing to save." (a real model's skill write is
a long document, not a short call); once the tool result is back, the review closes with one word.
"""

from __future__ import annotations

from typing import Callable

from services.demo_model.replies import Reply, latest_user_text, text, tool_call

# Our review instruction's header (services/worker/review/prompt.py) and the opening of Hermes Agent 0.19.0's
# review prompts (agent/background_review.py: _MEMORY_REVIEW_PROMPT, _SKILL_REVIEW_PROMPT, _COMBINED_…).
REVIEW_OPENINGS = ("[Background review", "Review the conversation above")
SKILLS_ONLY = ("[Background review — skills]", "Review the conversation above and update the skill library")
NOTHING = "Nothing to save."


def is_review(body: dict) -> bool:
    return latest_user_text(body).startswith(REVIEW_OPENINGS)


def review_reply(body: dict) -> Reply:
    """A real model's answer to a review request (see the module's docstring)."""
    messages = body.get("messages") or []
    if messages and messages[-1].get("role") == "tool":
        return text("Saved.")
    asked = latest_user_text(body)
    offered = {t.get("function", {}).get("name") for t in body.get("tools") or []}
    if asked.startswith(SKILLS_ONLY) or "memory" not in offered or len(messages) % 2:
        return text(NOTHING)
    fact = f"User keeps long working sessions ({len(messages)} messages in this one)."
    return tool_call([("memory", {"action": "add", "target": "user", "content": fact})])


def reviewing(default: Callable[[dict], Reply]) -> Callable[[dict], Reply]:
    """A responder that answers reviews as above and everything else with `default`."""

    def respond(body: dict) -> Reply:
        return review_reply(body) if is_review(body) else default(body)

    return respond
