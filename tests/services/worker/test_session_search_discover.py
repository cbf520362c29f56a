"""Discover: ±5 messages around each hit plus the session's first and last 3; a title match first."""

from __future__ import annotations

from services.worker.tools.session_search import session_search
from tests.services.worker.test_session_search import chat, ctx_for
from tests.support.factories import make_session


def long_chat(db, user_id, title, hits_at, total=40):
    lines = [f"ordinary line {i} about weather" for i in range(total)]
    for i in hits_at:
        lines[i] = f"line {i}: the zeppelin hangar is open"
    return chat(db, user_id, title, lines)


def test_each_hit_gets_five_either_side_and_the_session_its_bookends(settings, db, user):
    session, msgs = long_chat(db, user.id, "Airships", hits_at=(12, 15, 30))
    here = make_session(db, user.id)
    (result,) = session_search(ctx_for(settings, user.id, here.id), {"query": "zeppelin hangar"})["results"]

    shown = [m["id"] for m in result["messages"]]
    wanted = sorted({m.id for i in (12, 15, 30) for m in msgs[max(0, i - 5):i + 6]})
    assert shown == wanted  # overlapping windows merged, each message once, in order
    assert {m["id"] for m in result["messages"] if m.get("match")} == {msgs[i].id for i in (12, 15, 30)}
    assert [m["id"] for m in result["bookend_start"]] == [m.id for m in msgs[:3]]
    assert [m["id"] for m in result["bookend_end"]] == [m.id for m in msgs[-3:]]
    assert result["messages_before"] == 7 and result["messages_after"] == 40 - 36


def test_bookends_never_repeat_what_a_window_shows(settings, db, user):
    session, msgs = long_chat(db, user.id, "Short", hits_at=(2,), total=9)
    here = make_session(db, user.id)
    (result,) = session_search(ctx_for(settings, user.id, here.id), {"query": "zeppelin"})["results"]
    assert [m["id"] for m in result["messages"]] == [m.id for m in msgs[:8]]
    assert result["bookend_start"] == [] and [m["id"] for m in result["bookend_end"]] == [msgs[8].id]


def test_output_stays_bounded_with_many_long_sessions(settings, db, user):
    for n in range(10):
        long_chat(db, user.id, f"Airships {n}", hits_at=(5, 15, 25, 35), total=45)
    here = make_session(db, user.id)
    found = session_search(ctx_for(settings, user.id, here.id), {"query": "zeppelin", "limit": 10})
    assert found["count"] == 10
    shown = sum(len(r["messages"]) + len(r.get("bookend_start", [])) + len(r.get("bookend_end", []))
                for r in found["results"])
    assert shown <= 80 + 10 * 3  # the budget, plus the anchors always shown
    assert all(len(m["text"]) < 700 for r in found["results"] for m in r["messages"] if not m.get("match"))


def test_a_session_whose_title_matches_ranks_first(settings, db, user):
    long_chat(db, user.id, "Weather talk", hits_at=(3, 4, 5))  # many strong message hits
    named, msgs = chat(db, user.id, "Zeppelin museum visit", ["Tickets are 12 euros.", "Open on Sundays."])
    here = make_session(db, user.id)
    found = session_search(ctx_for(settings, user.id, here.id), {"query": "zeppelin museum"})
    first = found["results"][0]
    assert first["session_id"] == named.id and first["matched_role"] == "session_title"
    assert [m["id"] for m in first["messages"]] == [m.id for m in msgs]
    assert found["results"][1]["title"] == "Weather talk"
    quoted = session_search(ctx_for(settings, user.id, here.id), {"query": '"Zeppelin Museum Visit"', "sort": "newest"})
    assert quoted["results"][0]["session_id"] == named.id


def test_sort_lists_sessions_by_their_newest_match(settings, db, user):
    old, _ = long_chat(db, user.id, "Old", hits_at=(1,), total=4)
    new, _ = long_chat(db, user.id, "New", hits_at=(1,), total=4)
    here = make_session(db, user.id)
    ctx = ctx_for(settings, user.id, here.id)
    assert [r["session_id"] for r in session_search(ctx, {"query": "zeppelin", "sort": "newest"})["results"]] == [new.id, old.id]
    assert [r["session_id"] for r in session_search(ctx, {"query": "zeppelin", "sort": "oldest"})["results"]] == [old.id, new.id]
