"""The review instruction carries the anchor's hard-won rules, and only those for what made the review due."""

from __future__ import annotations

import pytest

from shared.models.reviews import ReviewTrigger
from services.worker.review.prompt import HEADERS, NOTHING, instruction

pytestmark = pytest.mark.once  # backend-independent: see tests/conftest.py

MEMORY_RULES = ("Never save a guess or an inference about the user", 'they said "always"', "asked you to remember it",
                'target "user" (USER.md)', 'target "memory" (MEMORY.md)', "Never save transient errors",
                "a missing binary", "a claim that a tool does not work", "instead of adding a near-duplicate")
SKILL_RULES = ("class-level procedure", "the steps first, then the pitfalls, each as a rule with one clause of why",
               "Prefer updating an existing skill over creating a near-duplicate", "Never capture transient errors",
               "missing binaries", "claims that a tool does not work")


def test_each_review_gets_its_own_rules_and_may_say_nothing_is_worth_saving():
    memory, skill, both = (instruction(t) for t in (ReviewTrigger.memory, ReviewTrigger.skill, ReviewTrigger.both))

    assert all(rule in memory for rule in MEMORY_RULES) and "class-level procedure" not in memory
    assert all(rule in skill for rule in SKILL_RULES) and "USER.md" not in skill
    assert all(rule in both for rule in MEMORY_RULES + SKILL_RULES)
    for trigger, text in zip(ReviewTrigger, (memory, skill, both)):
        assert text.startswith(HEADERS[trigger] + "\n") and f'reply exactly "{NOTHING}" and stop' in text
    assert len(set(HEADERS.values())) == 3 and not any(a in b for a in HEADERS.values() for b in HEADERS.values()
                                                         if a != b)


def test_the_skill_review_carries_the_anchors_stance_and_preference_order():
    """Issue 12: the rules were there, the stance was not: be active, patch before create, note overlaps."""
    from shared.models.reviews import ReviewTrigger
    from services.worker.review.prompt import instruction

    text = instruction(ReviewTrigger.skill)
    assert "missed chance" in text and "Be active" in text
    order = [text.index(step) for step in ("(1) patch a skill that was loaded", "(2) patch an existing umbrella",
                                           "(3) add a support file", "(4) only then create")]
    assert order == sorted(order)
    assert all(folder in text for folder in ("references/", "templates/", "scripts/"))
    assert "overlap" in text and "curator" in text
    assert "Never capture transient errors" in text  # the grounding rules stay
    assert "Be active" not in instruction(ReviewTrigger.memory)


def test_the_review_budget_defaults_to_the_anchors_16(settings):
    from shared.config import Settings

    assert Settings.model_fields["review_max_iterations"].default == 16
