"""sort=newest|oldest: every match is ordered by time in the database before the limit applies."""

from __future__ import annotations

from datetime import timedelta

from shared.clock import utcnow
from shared.stores import sessions
from shared.search.engine import search_messages
from tests.support.factories import make_session


def store_dated(db, user_id, lines):
    """Messages of one session, each a day after the one before, in the order given."""
    session = make_session(db, user_id)
    start = utcnow() - timedelta(days=len(lines) + 1)
    return sessions.append_messages(db, session.id, [
        {"role": "user", "content": line, "created_at": start + timedelta(days=i)} for i, line in enumerate(lines)
    ])


def test_newest_and_oldest_order_all_matches_not_only_the_best(db, user):
    # one old message ranks far above 30 weak newer ones: a time order must not start from the best hits
    stored = store_dated(db, user.id, ["kayak kayak kayak kayak paddle kayak"]
                         + [f"a long note number {i} that mentions a kayak once among many other words" for i in range(30)]
                         + ["the very latest kayak note"])
    assert search_messages(db, user.id, "kayak", limit=1)[0].message_id == stored[0].id  # the best, by rank
    newest = search_messages(db, user.id, "kayak", limit=3, sort="newest")
    assert [h.message_id for h in newest] == [m.id for m in reversed(stored[-3:])]
    oldest = search_messages(db, user.id, "kayak paddle", limit=2, sort="oldest")
    assert [h.message_id for h in oldest] == [m.id for m in stored[:2]]
    assert all(h.coverage > 0 for h in oldest)


def test_time_order_keeps_required_and_excluded_terms(db, user):
    stored = store_dated(db, user.id, ["red kayak", "blue kayak", "red canoe", "red kayak again", "green kayak"])
    newest = search_messages(db, user.id, "kayak NOT green", limit=2, sort="newest")
    assert [h.message_id for h in newest] == [stored[3].id, stored[1].id]
    both = search_messages(db, user.id, "red AND kayak", limit=10, sort="oldest")
    assert [h.message_id for h in both] == [stored[0].id, stored[3].id]
