"""Skills belong to whoever asked for them. The curator only touches what a background review
created; a skill the user asked for in the foreground survives any pass and no review may edit it; a
stale agent skill stays in the next session's skill index."""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from services.curator.curate import curate_user
from services.worker.agent.prompt import compose_system_prompt
from services.worker.registrations import register_tools
from shared import clock
from shared.errors import HermesError
from shared.stores.skill_writes import SkillEditor
from tests.support.factories import make_session

REGISTRY = register_tools()  # this module's own registry of the built-in tools

DAY = timedelta(days=1)


def test_a_foreground_skill_survives_a_pass_60_days_later_and_a_review_cannot_edit_it(db, settings, skills):
    mine = skills()
    mine.agent("asked-for", writer="agent")  # the foreground agent, because the user asked
    mine.agent("reviews-own")  # a background review
    curate_user(settings, mine.user.id, clock.utcnow())  # first sight: the clock starts

    clock.advance(60 * DAY)
    report = curate_user(settings, mine.user.id, clock.utcnow())

    assert [(t.skill, t.to_state.value) for t in report.transitions] == [("reviews-own", "archived")]
    assert mine.states()["asked-for"] == "active" and "asked-for" in mine.index()
    review = SkillEditor(mine.store, "review", viewed=frozenset({("asked-for", "SKILL.md")}))
    with pytest.raises(HermesError) as refused:
        review.patch("asked-for", "Do the asked-for thing", "Do something else")
    assert refused.value.code == "skill_read_only"
    assert "Do the asked-for thing" in mine.store.detail("asked-for").content


def test_a_stale_agent_skill_is_still_in_the_next_sessions_index(db, settings, skills):
    mine = skills()
    mine.agent("resting-notes")
    curate_user(settings, mine.user.id, clock.utcnow())

    clock.advance(settings.curator_stale_after_days * DAY + DAY)
    curate_user(settings, mine.user.id, clock.utcnow())

    assert mine.states()["resting-notes"] == "stale"
    prompt = compose_system_prompt(make_session(db, mine.user.id), REGISTRY, settings, date(2026, 1, 1), db).text
    assert "- resting-notes:" in prompt
