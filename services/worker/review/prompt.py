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
    "The conversation above has ended and the user will not read your reply. Keep what will make you better at "
    "helping this user in future sessions."
)

MEMORY_RULES = (
    "Memory (the memory tool):",
    "- Save only facts stated in a message or shown in a tool result above. Never save a guess or an inference "
    "about the user.",
    '- Facts about the user (who they are, preferences, how they want you to work) go to target "user" (USER.md); '
    'facts about their environment, projects, conventions and tool quirks go to target "memory" (MEMORY.md).',
    "- A one-off request is not a standing preference: save one only when they said \"always\", \"never\", "
    '"from now on", or asked you to remember it.',
    '- Write short declarative facts ("User prefers British English"), not instructions to yourself.',
    "- Never save transient errors, a missing binary, a failed connection, or a claim that a tool does not work.",
    "- Skip task progress, logs of finished work, and anything easy to find again.",
    '- When an entry already says nearly the same, update it (action "replace") instead of adding a near-duplicate.',
)

SKILL_RULES = (
    "Skills (skills_list, skill_view, skill_manage):",
    "- Be active: most conversations with real work deserve a skill update; saving nothing is a missed chance, "
    "not the default.",
    "- Prefer, in order: (1) patch a skill that was loaded or viewed here; (2) patch an existing umbrella skill for "
    "this class of task (skills_list, then skill_view); (3) add a support file to it (references/, templates/, "
    "scripts/) with a one-line pointer in its SKILL.md; (4) only then create a new umbrella skill.",
    "- Load the exact file with skill_view before you patch it; a write to a file not loaded in this review is "
    "refused.",
    "- A skill is a class-level procedure for a kind of task, named for the class (\"deploy-static-site\"), never "
    "for a ticket, an error or a one-off.",
    "- In SKILL.md put the steps first, then the pitfalls, each as a rule with one clause of why.",
    '- A new SKILL.md starts with front matter: "---", "name: <name>", "description: <one line>", "---".',
    "- Prefer updating an existing skill over creating a near-duplicate.",
    "- User corrections and preferences about how to do a kind of task belong in that task's skill.",
    "- Never capture transient errors, missing binaries, unconfigured credentials, or claims that a tool does not "
    "work; capture the fix of a solved setup problem.",
    "- If two skills overlap, say so in your final reply for the curator; do not merge or delete them.",
    "- Only skills a review created may change; the user's own, pinned and bundled skills are read-only.",
)

CLOSING = (
    "Act only on a real signal; every write is final, so never repeat one. "
    f'If nothing is worth saving, reply exactly "{NOTHING}" and stop. Only the memory, skills_list, skill_view '
    "and skill_manage tools run in this review."
)


def instruction(trigger: ReviewTrigger) -> str:
    """The review instruction for what made the review due."""
    rules = {ReviewTrigger.memory: [MEMORY_RULES], ReviewTrigger.skill: [SKILL_RULES],
             ReviewTrigger.both: [MEMORY_RULES, SKILL_RULES]}[trigger]
    return "\n\n".join([HEADERS[trigger], OPENING, *("\n".join(lines) for lines in rules), CLOSING])
