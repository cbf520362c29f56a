"""The review is told Hermes Agent's hard-won rules: the tools it is offered carry what to save and what not to,
its instruction only what is the review's own, for what made it due."""

from __future__ import annotations

import pytest

from shared.models.reviews import ReviewTrigger
from services.worker.agent.prompt import tool_guidance
from services.worker.review.prompt import HEADERS, NOTHING, instruction
from services.worker.registrations import register_tools

REGISTRY = register_tools()  # this module's own registry of the built-in tools

pytestmark = pytest.mark.once  # backend-independent: see tests/conftest.py

# In the memory tool's description: the main agent saves by the same rules.
MEMORY_RULES = ("never a guess about the user", "A one-off request is not a standing preference",
                "'always', 'never' or 'from now on', or asked you to remember it", "'user' is who the user is and how "
                "they want you to work", "'memory' is your notes on their environment, projects and conventions",
                "short declarative facts", "not instructions to yourself", "task progress",
                "Never save transient errors, a missing binary or a claim that a tool does not work",
                "replace a similar entry rather than add a near-duplicate")
# In skill_manage's description, and the system prompt's skill guidance (steps, then pitfalls).
SKILL_RULES = ("(1) patch a skill loaded or viewed", "(2) patch an umbrella skill",
               "(3) add a support file (references/, templates/, scripts/) with a one-line pointer in SKILL.md",
               "(4) only then create one, never a near-duplicate", "class-level procedure named for a kind of task, "
               "never a ticket, an error or a one-off", "corrections about a kind of task belong in its skill",
               "skill_view the exact file before you patch it", "Never capture transient errors, missing "
               "binaries, unset credentials or claims that a tool does not work", "capture the fix of a solved setup")
STEPS_FIRST = "steps first, then pitfalls as rules with a short reason"


def description(name: str) -> str:
    return REGISTRY.get(name).description


def test_what_to_save_and_what_not_to_is_in_the_tools_every_review_is_sent():
    """The fork replays the parent's tools and system prompt byte for byte: these rules come from the prompt cache."""
    memory, skill = description("memory"), description("skill_manage")

    assert [rule for rule in MEMORY_RULES if rule not in memory] == []
    assert [rule for rule in SKILL_RULES if rule not in skill] == []
    order = [skill.index(step) for step in SKILL_RULES[:4]]
    assert order == sorted(order)
    assert STEPS_FIRST in tool_guidance(REGISTRY)


def test_each_review_gets_its_own_part_and_may_say_nothing_is_worth_saving():
    memory, skill, both = (instruction(t) for t in (ReviewTrigger.memory, ReviewTrigger.skill, ReviewTrigger.both))

    assert "the memory tool's description" in memory and "skill_manage" not in memory
    assert "skill_manage's description" in skill and "memory tool" not in skill
    assert "the memory and skill_manage descriptions" in both
    focus = "what the user revealed about themselves and how they want you to work"
    assert focus in memory and focus in both and focus not in skill
    for trigger, text in zip(ReviewTrigger, (memory, skill, both)):
        assert text.startswith(HEADERS[trigger] + "\n") and f'reply exactly "{NOTHING}" and stop' in text
        assert "the user will not read your reply, so do not ask" in text
        assert "Act only on a real signal" in text and "never repeat one" in text
    assert len(set(HEADERS.values())) == 3 and not any(a in b for a in HEADERS.values() for b in HEADERS.values()
                                                         if a != b)


def test_the_skill_review_carries_the_anchors_stance():
    """The rules were there, the stance was not: be active, note overlaps, leave merging to the curator."""
    for text in (instruction(ReviewTrigger.skill), instruction(ReviewTrigger.both)):
        assert "be active" in text and "missed chance" in text
        assert "name overlaps in your reply for the curator, never merge or delete" in text
        assert "Only skills a review created may change" in text
    assert "be active" not in instruction(ReviewTrigger.memory)


def test_the_review_budget_defaults_to_the_anchors_16(settings):
    from shared.config import Settings

    assert Settings.model_fields["review_max_iterations"].default == 16
