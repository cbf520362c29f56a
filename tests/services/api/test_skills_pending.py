"""SKILL_WRITE_APPROVAL stages skill writes like memory writes, each with a diff, decided over
`/v1/skills/pending`, applied under the same rules on approval and expired by the curator's sweep."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shared.clock import utcnow
from shared.errors import HermesError
from shared.stores.skill_writes import SkillEditor
from shared.stores.skills import SkillStore
from services.worker.tools.registry import ToolContext
from services.worker.tools.skills import skill_manage, writing_as

SKILL_MD = "---\nname: {name}\ndescription: Brew a good cup of tea.\n---\n1. Boil water.\n"


@pytest.fixture
def ctx(settings, user):
    return ToolContext(user_id=user.id, session_id="ses_x", turn_id="turn_x",
                       settings=settings.model_copy(update={"skill_write_approval": True}))


def pending(client, user) -> list[dict]:
    return client.get("/v1/skills/pending", headers=user.headers).json()["data"]


def decide(client, user, staged_id: str, decision: str):
    return client.post(f"/v1/skills/pending/{staged_id}", json={"decision": decision}, headers=user.headers)


def test_a_foreground_create_is_staged_with_its_diff_and_applied_on_approval(client, user, ctx, db, settings):
    answer = skill_manage(ctx, {"action": "create", "name": "brew-tea", "content": SKILL_MD.format(name="brew-tea")})

    assert answer["staged"] is True and answer["success"] is True
    store = SkillStore.for_user(db, settings, user.id)
    assert store.locate("brew-tea") is None
    [row] = pending(client, user)
    assert row["id"] == answer["pending_id"] and row["action"] == "create" and row["writer"] == "agent"
    assert row["summary"].startswith("create 'brew-tea' — Brew a good cup of tea.")
    assert "+++ b/brew-tea/SKILL.md" in row["diff"] and "+1. Boil water." in row["diff"]

    approved = decide(client, user, row["id"], "approve")
    assert approved.status_code == 200 and approved.json()["result"]["message"] == "Skill 'brew-tea' created."
    assert store.get("brew-tea").origin.value == "user"
    assert pending(client, user) == []
    assert decide(client, user, row["id"], "deny").json()["error"]["code"] == "staged_write_decided"


def test_a_reviews_patch_is_checked_when_staged_and_a_denied_one_changes_nothing(client, user, ctx, db, settings):
    store = SkillStore.for_user(db, settings, user.id)
    SkillEditor(store, "review").create("reviews-own", SKILL_MD.format(name="reviews-own"))
    patch = {"action": "patch", "name": "reviews-own", "old_string": "Boil water.", "new_string": "Boil fresh water."}

    with writing_as("review", frozenset()):
        with pytest.raises(HermesError) as unread:
            skill_manage(ctx, patch)
    assert unread.value.code == "skill_not_read"  # the read-before-write guard holds before staging
    with writing_as("review", frozenset({("reviews-own", "SKILL.md")})):
        staged = skill_manage(ctx, patch)
    [row] = [r for r in pending(client, user) if r["id"] == staged["pending_id"]]
    assert row["writer"] == "review" and "-1. Boil water.\n+1. Boil fresh water.\n" in row["diff"]
    assert row["summary"] == "patch 'reviews-own' SKILL.md (+1/-1 lines)"

    assert decide(client, user, row["id"], "deny").json()["staged"]["status"] == "denied"
    assert "Boil fresh" not in store.detail("reviews-own").content


def test_approval_applies_under_the_rules_of_now(client, user, ctx, db, settings):
    store = SkillStore.for_user(db, settings, user.id)
    SkillEditor(store, "review").create("soon-pinned", SKILL_MD.format(name="soon-pinned"))
    with writing_as("review", frozenset({("soon-pinned", "SKILL.md")})):
        staged = skill_manage(ctx, {"action": "edit", "name": "soon-pinned",
                                    "content": SKILL_MD.format(name="soon-pinned") + "2. Steep.\n"})
    store.set_pinned("soon-pinned", True)

    refused = decide(client, user, staged["pending_id"], "approve")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "skill_pinned"
    assert staged["pending_id"] in [r["id"] for r in pending(client, user)]  # still pending


def test_the_curator_sweep_expires_undecided_skill_writes(client, user, ctx, db, redis_client):
    from services.curator.expiry import sweep

    staged = skill_manage(ctx, {"action": "create", "name": "late-tea", "content": SKILL_MD.format(name="late-tea")})

    later = utcnow() + timedelta(seconds=ctx.settings.skill_staged_ttl_seconds + 1)
    expired, _ = sweep(db, redis_client, now=later, ttl_seconds=3600, scan_limit=10, cursor_key=f"test:{user.id}")
    assert expired >= 1
    assert staged["pending_id"] not in [r["id"] for r in pending(client, user)]
    assert decide(client, user, staged["pending_id"], "approve").json()["error"]["code"] == "staged_write_decided"


def test_another_users_staged_write_is_not_found(client, user, ctx, db):
    from tests.support.factories import make_user

    staged = skill_manage(ctx, {"action": "create", "name": "mine", "content": SKILL_MD.format(name="mine")})
    other = make_user(db)
    assert decide(client, other, staged["pending_id"], "approve").status_code == 404
