"""The review fork: the parent's exact context and tools plus one instruction; only memory and skill tools run;
its own budget and record."""

from __future__ import annotations

import json

import pytest

from shared.models.reviews import ReviewTrigger
from shared.models.skills import SkillInstall
from shared.stores import reviews, sessions
from shared.stores.memory import MemoryStore
from shared.stores.skills import SkillStore
from services.demo_model.prefix_cache import serialize
from services.worker.review.drain import drain_reviews
from services.worker.review.prompt import instruction
from tests.fakes.model import fail, text, tool_call
from tests.services.worker.reviewing import MEMORY, SKILL, catch_sends, review_requests, turn_requests, turns
from tests.support.factories import make_session

PREFERENCE = "User wants every answer in British English."
REMEMBER = ("memory", {"action": "add", "target": "user", "content": PREFERENCE})
SKILL_MD = ("---\nname: release-notes\ndescription: Draft release notes from the changelog.\n---\n"
            "1. Read CHANGELOG.md.\n2. Group the entries by area.\n\nPitfalls:\n"
            "- Never list internal refactors, because users cannot see them.\n")
CREATE = ("skill_manage", {"action": "create", "name": "release-notes", "content": SKILL_MD})


@pytest.fixture
def sent(db, monkeypatch):
    return catch_sends(db, monkeypatch)


def one_review(sent, db):
    [review_id] = sent.review_ids
    return reviews.get_review(db, review_id)


def test_the_review_sends_the_parents_last_request_then_its_answer_then_one_instruction(
        db, user, session, model, make_runtime, sent):
    runtime = make_runtime(memory_review_interval=2, skill_review_interval=0)
    model.script(text("Noted."), tool_call([("skills_list", {})]), text("Cheerio!"))
    turns(db, runtime, user.id, session.id, "Always answer in British English, please.", "Say goodbye.")
    parent_last = turn_requests(model)[-1]
    transcript = sessions.list_messages(db, session.id)

    model.on(MEMORY, tool_call([REMEMBER]), text("Saved the preference."))
    assert drain_reviews(make_runtime(), session.id) == 1

    first, second = review_requests(model, MEMORY)
    assert first["messages"][:-2] == parent_last["messages"]  # the provider's cached prefix, message for message
    assert first["messages"][-2] == {"role": "assistant", "content": "Cheerio!"}
    assert first["messages"][-1] == {"role": "user", "content": instruction(ReviewTrigger.memory)}
    assert first["tools"] == parent_last["tools"]  # all of them: tools come first in the cached prefix
    assert second["messages"][:len(first["messages"])] == first["messages"]
    assert second["messages"][-1]["role"] == "tool" and '"success": true' in second["messages"][-1]["content"]

    assert MemoryStore.for_user(runtime.settings, user.id).entries("user") == [PREFERENCE]
    assert sessions.list_messages(db, session.id) == transcript  # nothing written into the conversation
    review = one_review(sent, db)
    assert (review.status, review.summary, review.model_calls) == ("completed", "Saved the preference.", 2)
    assert review.prompt_tokens > 0 and review.completion_tokens > 0 and review.finished_at is not None
    assert [m["role"] for m in review.messages] == ["assistant", "tool", "assistant"]
    [write] = reviews.ledger(db, review.id)
    assert (write.name, write.outcome, write.call_index) == ("memory", "applied", 0)


def canonical(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def test_the_reviews_first_request_starts_with_the_parents_last_request_byte_for_byte_tools_included(
        db, user, session, model, make_runtime, sent):
    """the provider's prompt cache covers the whole parent request (tools, system, messages)."""
    runtime = make_runtime(memory_review_interval=2, skill_review_interval=0)
    model.script(text("Noted."), tool_call([("read_file", {"path": "notes.txt"})]), text("Done."))
    turns(db, runtime, user.id, session.id, "Remember I like tea.", "Read my notes, please.")
    parent = turn_requests(model)[-1]

    model.on(MEMORY, text("Nothing to save."))
    drain_reviews(make_runtime(), session.id)

    first = review_requests(model, MEMORY)[0]
    assert canonical(first["tools"]) == canonical(parent["tools"])
    assert [t["function"]["name"] for t in first["tools"]] == [t["function"]["name"] for t in parent["tools"]]
    assert len(first["tools"]) > len(REVIEW_ONLY)
    assert first["messages"][0] == parent["messages"][0] and first["messages"][0]["role"] == "system"
    parents = [canonical(m) for m in parent["messages"]]
    assert [canonical(m) for m in first["messages"][:len(parents)]] == parents
    assert len(first["messages"]) == len(parents) + 2  # then the parent's answer and the instruction
    described = {t["function"]["name"]: t["function"]["description"] for t in first["tools"]}
    assert "never a guess" in described["memory"] and "(1) patch a skill" in described["skill_manage"]
    assert "the memory tool's description" in first["messages"][-1]["content"]  # the rules it reads are cached
    review = one_review(sent, db)  # the scripted provider read all the parent had sent from its prompt cache
    assert review.cached_tokens >= len(serialize(parent)) // 4 and review.cached_tokens < review.prompt_tokens


REVIEW_ONLY = ("memory", "skills_list", "skill_view", "skill_manage")


def test_the_prefix_holds_when_a_compaction_shaped_the_parents_context(db, user, session, model, make_runtime, sent):
    runtime = make_runtime(memory_review_interval=6, skill_review_interval=0, llm_context_window=2000,
                           llm_max_tokens=0, compression_floor_tokens=0, compression_small_window_share=0.5,
                           compression_protect_first_n=2)
    model.on("context checkpoint summariser", text("## Goal\nChat about trains."))
    long = "tell me about trains " * 40
    turns(db, runtime, user.id, session.id, *[f"{n} {long}" for n in range(6)])
    assert sessions.latest_compaction(db, session.id) is not None
    parent_last = [b for b in turn_requests(model) if "checkpoint summariser" not in b["messages"][-1]["content"]][-1]

    model.on(MEMORY, text("Nothing to save."))
    drain_reviews(make_runtime(), session.id)

    [request] = review_requests(model, MEMORY)
    assert request["messages"][:-2] == parent_last["messages"]
    assert request["messages"][0] == {"role": "system", "content": sessions.get_session(db, None, session.id).system_prompt}
    assert one_review(sent, db).compaction_id == sessions.latest_compaction(db, session.id).id


def test_other_tools_are_refused_and_the_budget_stops_the_review(db, user, session, model, make_runtime, sent):
    runtime = make_runtime(memory_review_interval=1, skill_review_interval=0, review_max_iterations=2)
    turns(db, runtime, user.id, session.id, "hello")
    model.on(MEMORY, tool_call([("write_file", {"path": "x.txt", "content": "pwned"})]),
             tool_call([("skills_list", {})]), text("never asked for"))

    drain_reviews(runtime, session.id)

    review = one_review(sent, db)
    assert review.model_calls == 2 and review.summary.startswith("[The review stopped after 2 model calls")
    refused, listed = reviews.ledger(db, review.id)
    assert (refused.name, refused.outcome) == ("write_file", "refused")
    assert "[review] only memory and skill tools may be used during a background review" in refused.result
    assert (listed.name, listed.outcome) == ("skills_list", "done")
    assert not (runtime.settings.data_dir / "users" / user.id / "workspace" / "x.txt").exists()


def test_a_skill_review_creates_its_own_skill_but_may_not_touch_the_users(db, user, session, model, make_runtime,
                                                                          sent):
    runtime = make_runtime(memory_review_interval=0, skill_review_interval=1)
    store = SkillStore.for_user(db, runtime.settings, user.id)
    user_md = "---\nname: my-way\ndescription: The user's own procedure.\n---\nDo it my way.\n"
    store.install(SkillInstall(name="my-way", content=user_md))
    turns(db, runtime, user.id, session.id, "draft the release notes")
    patch = ("skill_manage", {"action": "patch", "name": "my-way", "old_string": "my way", "new_string": "any way"})
    model.on(SKILL, tool_call([patch]), tool_call([CREATE]), text("Created release-notes."))

    drain_reviews(runtime, session.id)

    refused, created = reviews.ledger(db, one_review(sent, db).id)
    assert (refused.outcome, created.outcome) == ("refused", "applied")
    assert "may only change skills a review created" in refused.result
    assert store.detail("my-way").content == user_md
    assert store.detail("release-notes").created_by == "review"
    model.script(text("hi"))
    turns(db, runtime, user.id, make_session(db, user.id).id, "new session")
    assert "- release-notes: Draft release notes from the changelog." in turn_requests(model)[-1]["messages"][0]["content"]


def test_memory_write_approval_stages_memory_and_no_longer_refuses_skill_learning(db, user, session, model,
                                                                                  make_runtime, sent):
    """MEMORY_WRITE_APPROVAL silently disabled skill learning (every review skill write refused)."""
    runtime = make_runtime(memory_review_interval=1, skill_review_interval=1, memory_write_approval=True)
    turns(db, runtime, user.id, session.id, "Always answer in British English.")
    model.on("[Background review — memory and skills]", tool_call([REMEMBER, CREATE]), text("Done."))

    drain_reviews(runtime, session.id)

    staged, created = reviews.ledger(db, one_review(sent, db).id)
    assert (staged.outcome, created.outcome) == ("staged", "applied")
    assert MemoryStore.for_user(runtime.settings, user.id).entries("user") == []
    assert SkillStore.for_user(db, runtime.settings, user.id).locate("release-notes").origin.value == "agent"


def test_a_model_failure_fails_the_review_with_its_code(db, user, session, model, make_runtime, sent):
    runtime = make_runtime(memory_review_interval=1, skill_review_interval=0)
    turns(db, runtime, user.id, session.id, "hello")
    model.on(MEMORY, fail(401, "bad key"))

    drain_reviews(runtime, session.id)

    review = one_review(sent, db)
    assert (review.status, review.error_code) == ("failed", "model_auth_failed")


def test_a_review_must_view_a_skill_before_patching_it_and_never_writes_a_pinned_one(
        db, user, session, model, make_runtime, sent):
    """Hermes Agent's read-before-write guard and pinned refusal, both recorded in the ledger."""
    runtime = make_runtime(memory_review_interval=0, skill_review_interval=1)
    store = SkillStore.for_user(db, runtime.settings, user.id)
    from shared.stores.skill_writes import SkillEditor

    SkillEditor(store, "review").create("release-notes", SKILL_MD)
    SkillEditor(store, "review").create("kept-as-is", SKILL_MD.replace("release-notes", "kept-as-is"))
    store.set_pinned("kept-as-is", True)
    turns(db, runtime, user.id, session.id, "draft the release notes")
    patch = {"action": "patch", "name": "release-notes", "old_string": "Group the entries by area.",
             "new_string": "Group the entries by area, newest first."}
    pinned = {**patch, "name": "kept-as-is"}
    model.on(SKILL, tool_call([("skill_manage", patch)]), tool_call([("skill_manage", pinned)]),
             tool_call([("skill_view", {"name": "release-notes"})]), tool_call([("skill_manage", patch)]),
             text("Patched release-notes."))

    drain_reviews(runtime, session.id)

    blind, on_pinned, viewed, patched = reviews.ledger(db, one_review(sent, db).id)
    assert [c.outcome for c in (blind, on_pinned, viewed, patched)] == ["refused", "refused", "done", "applied"]
    assert "skill_view(name='release-notes')" in blind.result
    assert "pinned" in on_pinned.result
    assert "newest first" in store.detail("release-notes").content
    assert "newest first" not in store.detail("kept-as-is").content
