"""The review instruction: the one user message a review fork adds after the parent's conversation.

Each kind opens with its own header line, so logs (and the scripted model in tests) can tell which
review is talking. The rules are the ones the anchor agent learned the hard way: save only what a
message or tool result showed, keep one-off requests out of standing preferences, route user facts
to USER.md, keep skills class-level, never record transient failures, update rather than duplicate.
"""

from __future__ import annotations

from shared.models.reviews import ReviewTrigger

HEADERS = {
    ReviewTrigger.memory: "[Background review — memory]",
    ReviewTrigger.skill: "[Background review — skills]",
    ReviewTrigger.both: "[Background review — memory and skills]",
}
NOTHING = "Nothing to save."

OPENING = (
    "The conversation above has ended; the user will not read your reply. Keep what will help you serve this "
    "user in future sessions."
)

# Every rule stays; the wording is short because this message is the one part of a review's first request that
# no provider has cached (the fork replays the parent's request byte for byte before it: bench.cache).
MEMORY_RULES = (
    "Memory (the memory tool):",
    "- Save only what a message or tool result above showed. Never save a guess or an inference about the user.",
    '- Who the user is and how they want you to work: target "user" (USER.md); their environment, projects, '
    'conventions and tool quirks: target "memory" (MEMORY.md).',
    '- A one-off request is not a standing preference unless they said "always", "never", "from now on", or '
    "asked you to remember it.",
    '- Short declarative facts ("User prefers British English"), not instructions to yourself; no task progress.',
    "- Never save transient errors, a missing binary, or a claim that a tool does not work.",
    '- Update a similar entry (action "replace") instead of adding a near-duplicate.',
)

SKILL_RULES = (
    "Skills (skills_list, skill_view, skill_manage):",
    "- Be active: real work usually deserves a skill update; saving nothing is a missed chance.",
    "- Prefer (1) patch a skill that was loaded or viewed here; (2) patch an existing umbrella skill for this "
    "class of task; (3) add a support file (references/, templates/, scripts/) with a one-line pointer in "
    "SKILL.md; (4) only then create a new one.",
    "- A skill is a class-level procedure named for a kind of task, never for a ticket, an error or a one-off. "
    "Load the exact file with skill_view before you patch it.",
    "- Put the steps first, then the pitfalls, each as a rule with one clause of why. User corrections about a "
    "kind of task belong in its skill.",
    "- Never capture transient errors, missing binaries, unset credentials, or claims that a tool does not work; "
    "capture the fix of a solved setup problem.",
    "- Prefer updating an existing skill over creating a near-duplicate; name overlaps in your reply for the "
    "curator, never merge or delete. Only skills a review created may change.",
)

CLOSING = (
    "Act only on a real signal; every write is final, so never repeat one. "
    f'If nothing is worth saving, reply exactly "{NOTHING}" and stop.'
)


def instruction(trigger: ReviewTrigger) -> str:
    """The review instruction for what made the review due."""
    rules = {ReviewTrigger.memory: [MEMORY_RULES], ReviewTrigger.skill: [SKILL_RULES],
             ReviewTrigger.both: [MEMORY_RULES, SKILL_RULES]}[trigger]
    return "\n\n".join([HEADERS[trigger], OPENING, *("\n".join(lines) for lines in rules), CLOSING])
