"""`hstack reviews` against a live api, with a user's key."""

from __future__ import annotations

from shared.models.reviews import CallOutcome
from tests.support.factories import make_session, make_user
from tests.support.reviews import completed_review

REMEMBER = {"action": "add", "target": "user", "content": "User wants answers in British English."}
CREATE = {"action": "create", "name": "release-notes", "content": "---\nname: release-notes\n---\n"}


def test_reviews_prints_each_review_and_its_writes(hstack, db):
    user = make_user(db)
    chat = make_session(db, user.id)
    review = completed_review(db, user.id, chat.id, [
        ("memory", REMEMBER, CallOutcome.staged, {"success": True, "staged": True}),
        ("skill_manage", CREATE, CallOutcome.refused, {"success": False, "error": "refused"}),
    ], summary="Staged the preference.")

    code, out, _ = hstack("reviews", "--session", chat.id, "--key", user.key)

    assert code == 0
    header, staged, refused, said = out.splitlines()
    assert header.startswith(f"{review.id}  {chat.id}  memory completed ")
    assert header.endswith("2 model call(s), 1,950 tokens")
    assert staged == "  staged      memory add user: User wants answers in British English."
    assert refused == "  refused     skill_manage create release-notes"
    assert said == "  said: Staged the preference."


def test_no_reviews_says_so(hstack, db):
    user = make_user(db)
    code, out, _ = hstack("reviews", "--key", user.key)
    assert code == 0 and out == "No reviews yet.\n"
