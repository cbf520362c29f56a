"""The review instruction: the one user message a review fork adds after the parent's conversation.

Each kind opens with its own header line, so logs (and the scripted model in tests) can tell which
review is talking. What to save and what not to is in the tools' own descriptions, which the main
agent follows too: memory (only what a message or tool result showed, no guesses, a one-off request
is not a standing preference, who the user is to target "user", declarative facts, no transient
failures, replace rather than duplicate) and skill_manage (patch before create, in Hermes Agent's
order; class-level skills; load before patching; no transient failures, but the fix of a solved
setup problem); the system prompt's skill guidance adds steps first, then pitfalls with a reason.
The fork sends those tools and that prompt byte for byte, so the provider has them cached; this
message, which it has not seen, holds only what is the review's own (bench/README.md).
"""

from __future__ import annotations

from shared.models.reviews import ReviewTrigger

HEADERS = {
    ReviewTrigger.memory: "[Background review — memory]",
    ReviewTrigger.skill: "[Background review — skills]",
    ReviewTrigger.both: "[Background review — memory and skills]",
}
NOTHING = "Nothing to save."

TOOLS = {
    ReviewTrigger.memory: "the memory tool's description",
    ReviewTrigger.skill: "skill_manage's description",
    ReviewTrigger.both: "the memory and skill_manage descriptions",
}

OPENING = (
    "The conversation above has ended and the user will not read your reply, so do not ask: keep what will help "
    "you serve this user in future sessions, by the rules in {tools}."
)
MEMORY_FOCUS = "Memory: look for what the user revealed about themselves and how they want you to work."
SKILL_STANCE = (
    "Skills: be active; real work usually deserves a skill update, and saving nothing is a missed chance. Only "
    "skills a review created may change; name overlaps in your reply for the curator, never merge or delete."
)
CLOSING = (
    "Act only on a real signal; every write is final, so never repeat one. "
    f'If nothing is worth saving, reply exactly "{NOTHING}" and stop.'
)


def instruction(trigger: ReviewTrigger) -> str:
    """The review instruction for what made the review due."""
    parts = {ReviewTrigger.memory: [MEMORY_FOCUS], ReviewTrigger.skill: [SKILL_STANCE],
             ReviewTrigger.both: [MEMORY_FOCUS, SKILL_STANCE]}[trigger]
    return "\n\n".join([HEADERS[trigger], OPENING.format(tools=TOOLS[trigger]), *parts, CLOSING])
