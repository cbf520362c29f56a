"""The learning loop with the real processes: ten user turns, a skill review and a memory review on the
reviewers, and the next session's system prompt knows the user's preference and lists the new skill."""

from __future__ import annotations

import json

import pytest

from shared.models.reviews import ReviewTrigger
from services.worker.review.prompt import HEADERS
from tests.fakes.model import text, tool_call
from tests.fakes.replies import latest_user_text
from tests.support.processes import Stack, wait_for_turn, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.once]  # process behaviour: see tests/conftest.py

MEMORY_REVIEW, SKILL_REVIEW = HEADERS[ReviewTrigger.memory], HEADERS[ReviewTrigger.skill]
PREFERENCE = "User wants every answer in British English (they said: always)."
SKILL_MD = ("---\nname: release-notes\ndescription: Draft release notes from the changelog.\n---\n"
            "1. Read CHANGELOG.md.\n2. Group the entries by area, newest first.\n3. Write RELEASE_NOTES.md.\n\n"
            "Pitfalls:\n- Leave out internal refactors, because users cannot see them.\n")
TOOL_ROUNDS = [
    ("write_file", {"path": "CHANGELOG.md", "content": "- fix: login\n- feat: export\n"}),
    ("read_file", {"path": "CHANGELOG.md"}),
    ("search_files", {"pattern": "fix"}),
    ("write_file", {"path": "RELEASE_NOTES.md", "content": "Fixed: login. New: export.\n"}),
    ("list_files", {}),
]


@pytest.fixture(scope="module")
def stack(fake_model):
    s = Stack(model_url=fake_model.base_url)
    with s:
        s.start_api()
        s.start_worker()
        s.start_worker("reviewer-1", queue="review")
        s.start_worker("reviewer-2", queue="review")
        yield s


def completed_review(client, session_id: str, trigger: str) -> dict | None:
    found = client.get("/v1/reviews", params={"session_id": session_id}).raise_for_status().json()["data"]
    return next((r for r in found if r["trigger"] == trigger and r["status"] == "completed"), None)


def ran_on_a_reviewer(stack: Stack, review_id: str) -> bool:
    """The review finished in one of the reviewer processes, not in the turn worker."""
    done = f"review {review_id} completed"
    logs = {p.name: p.log() for p in stack.procs}
    return done not in logs["worker"] and any(done in logs[name] for name in ("reviewer-1", "reviewer-2"))


def review_notices(client, turn_id: str) -> list[str]:
    """The summaries of the `review.completed` events on a finished turn's SSE stream."""
    frames = client.get(f"/v1/turns/{turn_id}/events").text.split("\n\n")
    return [json.loads(line[len("data:"):])["summary"] for frame in frames if "event: review.completed" in frame
            for line in frame.splitlines() if line.startswith("data:")]


def test_reviews_learn_a_preference_and_a_skill_that_the_next_session_starts_with(stack, model):
    inputs = [f"learning chat {n}: how is the weather?" for n in range(10)]
    inputs[2] = "From now on, always answer in British English."
    inputs[4] = "Please draft the release notes from the changelog."
    model.on("draft the release notes", *[tool_call([call]) for call in TOOL_ROUNDS], text("Release notes drafted."))
    model.on(SKILL_REVIEW, tool_call([("skill_manage", {"action": "create", "name": "release-notes",
                                                        "content": SKILL_MD})]), text("Saved release-notes."))
    model.on(MEMORY_REVIEW, tool_call([("memory", {"action": "add", "target": "user", "content": PREFERENCE})]),
             text("Saved the preference."))
    key = stack.create_user("e2e-learning")
    with stack.client(key) as c:
        first = c.post("/v1/sessions", json={}).json()["id"]
        for line in inputs:  # turn 5 makes 6 model calls: 4 + 6 = 10 since the session began
            turn = c.post(f"/v1/sessions/{first}/turns", json={"input": line}).json()
            assert wait_for_turn(c, turn["id"])["status"] == "completed"

        skill = wait_until(lambda: completed_review(c, first, "skill"), timeout=30, what="the skill review")
        memory = wait_until(lambda: completed_review(c, first, "memory"), timeout=30, what="the memory review")

        assert [r["trigger"] for r in c.get("/v1/reviews", params={"session_id": first}).json()["data"]] == [
            "memory", "skill"]
        assert [(w["tool"], w["outcome"], w["arguments"]["target"]) for w in memory["writes"]] == [
            ("memory", "applied", "user")]
        assert memory["writes"][0]["result"]["success"] is True and memory["summary"] == "Saved the preference."
        assert [(w["tool"], w["outcome"], w["arguments"]["name"]) for w in skill["writes"]] == [
            ("skill_manage", "applied", "release-notes")]
        assert memory["model_calls"] == 2 and memory["prompt_tokens"] > 0
        assert ran_on_a_reviewer(stack, memory["id"]) and ran_on_a_reviewer(stack, skill["id"])
        assert c.get("/v1/memory").json()["user"]["entries"] == [PREFERENCE]
        assert c.get("/v1/skills/release-notes").json()["created_by"] == "review"
        transcript = c.get(f"/v1/sessions/{first}/messages", params={"limit": 500}).json()["data"]
        assert not any("[Background review" in (m["content"] or "") for m in transcript)

        # the memory review ended after the 10th turn's stream: its line comes with the session's next turn
        after = c.post(f"/v1/sessions/{first}/turns", json={"input": "learning chat: one more"}).json()
        assert wait_for_turn(c, after["id"])["status"] == "completed"
        assert "Self-improvement review: saved to user profile" in review_notices(c, after["id"])

        second = c.post("/v1/sessions", json={}).json()["id"]
        turn = c.post(f"/v1/sessions/{second}/turns", json={"input": "learning next session: hello again"}).json()
        assert wait_for_turn(c, turn["id"])["status"] == "completed"

    [opening] = [r.body for r in model.requests
                 if r.body and "learning next session" in latest_user_text(r.body)]
    system_prompt = opening["messages"][0]["content"]
    assert PREFERENCE in system_prompt
    assert "- release-notes: Draft release notes from the changelog." in system_prompt
