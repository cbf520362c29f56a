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
    "The conversation above has ended; the user is not waiting and will not read your reply. Review it now "
    "and keep what will make you better at helping this user in future sessions."
)

MEMORY_RULES = (
    "Memory (the memory tool):",
    "- Save only facts stated in a message or shown in a tool result above. Never save a guess or an inference "
    "about the user.",
    '- Facts about the user (who they are, their preferences, how they want you to work) go to target "user" '
    '(USER.md). Facts about their environment, projects, conventions and tool quirks go to target "memory" '
    "(MEMORY.md).",
    "- A one-off request is not a standing preference. Save a preference only when the user made it standing: "
    'they said "always", "never", "from now on", or asked you to remember it.',
    '- Write short declarative facts ("User prefers British English"), not instructions to yourself.',
    "- Never save transient errors, a missing binary or command, a failed connection, or a claim that a tool does "
    "not work: these change, and would mislead you later.",
    "- Skip task progress, logs of finished work, and anything easy to find again.",
    '- When an entry already says nearly the same, update it (action "replace") instead of adding a '
    "near-duplicate.",
)

SKILL_RULES = (
    "Skills (skills_list, skill_view, skill_manage):",
    "- Be active: most conversations with real work in them deserve at least one skill update. A pass that "
    "saves nothing is a missed chance, not the default.",
    "- Prefer, in this order: (1) patch a skill that was loaded or viewed in this conversation; (2) patch an "
    "existing umbrella skill for this class of task (find it with skills_list, read it with skill_view); (3) add "
    "a support file to such a skill (references/ for detail or condensed knowledge, templates/ for starters, "
    "scripts/ for re-runnable actions) with a one-line pointer in its SKILL.md; (4) only then create a new "
    "umbrella skill.",
    "- Load the exact file with skill_view before you patch or rewrite it; a write to a file you did not load in "
    "this review is refused.",
    "- A skill is a class-level procedure for a kind of task, not a record of this session. Name it for the "
    'class of task (for example "deploy-static-site"), never for a ticket, an error message or a one-off.',
    "- In SKILL.md put the steps first, then the pitfalls, each as a rule with one clause of why (\"Run "
    'migrations before restarting the api, because the old schema rejects new writes").',
    '- A new SKILL.md starts with front matter: a line "---", then "name: <the skill\'s name>", then '
    '"description: <one line>", then "---".',
    "- Prefer updating an existing skill over creating a near-duplicate: check skills_list, load a likely match "
    "with skill_view, and patch it. Create a skill only when none covers this class of task.",
    "- A correction from the user about style, format or workflow belongs in the skill for that task.",
    "- Never capture transient errors, missing binaries, unconfigured credentials, or claims that a tool does not "
    "work; if a setup problem was solved, capture the fix.",
    "- User preferences about how to do a kind of task belong in that skill's SKILL.md, not only in memory.",
    "- When two skills overlap, say so in your final reply for the curator; do not merge or delete them yourself.",
    "- You may change only skills a review created; the user's own skills (installed, or created because they "
    "asked), pinned skills and bundled skills are read-only.",
)

CLOSING = (
    "Act only where the conversation gives a real signal; every write is final, so never repeat one. "
    f'If nothing is worth saving, reply exactly "{NOTHING}" and stop. Only the memory, skills_list, skill_view '
    "and skill_manage tools are available in this review."
)


def instruction(trigger: ReviewTrigger) -> str:
    """The review instruction for what made the review due."""
    rules = {ReviewTrigger.memory: [MEMORY_RULES], ReviewTrigger.skill: [SKILL_RULES],
             ReviewTrigger.both: [MEMORY_RULES, SKILL_RULES]}[trigger]
    return "\n\n".join([HEADERS[trigger], OPENING, *("\n".join(lines) for lines in rules), CLOSING])
