"""When a pass runs: the interval since the last pass AND a quiet user (the idle gate really applies);
a user seen for the first time only starts the clock."""

from __future__ import annotations

from datetime import timedelta

from services.curator.curate import check, curate_user
from shared import clock
from shared.queue.names import CURATE_SKILLS
from shared.stores import curator, turns
from tests.support.factories import make_session

DAY = timedelta(days=1)
HOUR = timedelta(hours=1)


def recorder():
    sent: list[str] = []
    return sent, lambda name, payload, expires: sent.append(payload.user_id) if name == CURATE_SKILLS else None


def a_turn(db, user_id: str) -> None:
    """A turn the user sent now (then cancelled, so it is finished and only its time counts)."""
    session = make_session(db, user_id)
    turn, _ = turns.create_turn(db, user_id, session.id, "hello")
    turns.request_cancel(db, user_id, turn.id)


def test_first_sight_starts_the_clock_and_prunes_nothing_even_for_old_skills(db, settings, skills):
    mine = skills()
    mine.agent("ancient")
    clock.advance(40 * DAY)
    sent, send = recorder()

    assert check(settings, clock.utcnow(), send) >= 1 and mine.user.id in sent
    first = curate_user(settings, mine.user.id, clock.utcnow())
    assert first.skipped.startswith("first seen") and mine.states()["ancient"] == "active"

    clock.advance(7 * DAY - HOUR)
    sent, send = recorder()
    check(settings, clock.utcnow(), send)
    assert mine.user.id not in sent
    waiting = curate_user(settings, mine.user.id, clock.utcnow())
    assert waiting.skipped == "last pass 6 days 23 h ago; the next after 7 days"

    clock.advance(HOUR)
    report = curate_user(settings, mine.user.id, clock.utcnow())
    assert report.summary == "1 archived" and mine.states()["ancient"] == "archived"


def test_a_user_with_a_recent_turn_is_skipped_until_two_quiet_hours_passed(db, settings, skills):
    mine = skills()
    mine.agent("old-notes")
    curate_user(settings, mine.user.id, clock.utcnow())
    clock.advance(15 * DAY)
    a_turn(db, mine.user.id)
    clock.advance(HOUR + 59 * timedelta(minutes=1))

    sent, send = recorder()
    check(settings, clock.utcnow(), send)
    skipped = curate_user(settings, mine.user.id, clock.utcnow())
    assert skipped.skipped == "the user had a turn 1 h 59 min ago; a pass waits for 2 h of quiet"
    assert mine.user.id not in sent
    assert mine.states()["old-notes"] == "active" and curator.runs(db, mine.user.id) == []

    clock.advance(2 * timedelta(minutes=1))
    sent, send = recorder()
    check(settings, clock.utcnow(), send)
    assert mine.user.id in sent
    assert curate_user(settings, mine.user.id, clock.utcnow()).summary == "1 marked stale"


def test_a_turn_still_waiting_or_running_keeps_the_user_busy(db, settings, skills):
    mine = skills()
    mine.agent("old-notes")
    curate_user(settings, mine.user.id, clock.utcnow())
    session = make_session(db, mine.user.id)
    turn, _ = turns.create_turn(db, mine.user.id, session.id, "still queued")
    clock.advance(15 * DAY)

    assert curate_user(settings, mine.user.id, clock.utcnow()).skipped.startswith("the user had a turn 0 min ago")
    turns.request_cancel(db, mine.user.id, turn.id)
    assert curate_user(settings, mine.user.id, clock.utcnow()).summary == "1 marked stale"


def test_after_a_pass_the_next_waits_a_full_interval(db, settings, skills):
    mine = skills()
    mine.agent("a-skill")
    curate_user(settings, mine.user.id, clock.utcnow())
    clock.advance(15 * DAY)
    assert curate_user(settings, mine.user.id, clock.utcnow()).summary == "1 marked stale"

    clock.advance(DAY)
    assert curate_user(settings, mine.user.id, clock.utcnow()).skipped.startswith("last pass 1 day ago")
    clock.advance(6 * DAY)
    assert curate_user(settings, mine.user.id, clock.utcnow()).summary == "no changes"
    assert curator.state(db, mine.user.id).pass_count == 2


def test_a_disabled_curator_sends_and_changes_nothing(db, settings, skills, monkeypatch):
    mine = skills()
    mine.agent("a-skill")
    monkeypatch.setattr(settings, "curator_enabled", False)
    sent, send = recorder()
    assert check(settings, clock.utcnow(), send) == 0 and sent == []
    assert curate_user(settings, mine.user.id, clock.utcnow()).skipped.startswith("the curator is disabled")
    assert curator.state(db, mine.user.id) is None
