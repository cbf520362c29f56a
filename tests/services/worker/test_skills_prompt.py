"""The skill index in the frozen system prompt, and the skill tools driven by the model in real turns."""

from __future__ import annotations

import json
from datetime import date

from shared.stores import sessions
from shared.stores.skill_writes import SkillEditor
from shared.stores.skills import SkillStore
from services.worker.agent.drain import drain_session
from services.worker.agent.prompt import compose_system_prompt
from services.worker.features.skills import INDEX_HEADER
from services.worker.registrations import register_tools
from services.worker.tools.registry import ToolRegistry
from tests.fakes.model import text, tool_call
from tests.services.worker.helpers import post_turn, wait_finished
from tests.support.factories import make_session

REGISTRY = register_tools()  # this module's own registry of the built-in tools

BUNDLED_LINES = (
    "- investigate-failing-tests: Find why a test suite fails - reproduce one failure, read...",
    "- summarise-a-long-session: Summarise a long conversation for the user - decisions, o...",
    "- tidy-memory: Keep MEMORY and USER within their limits - merge, replace...",
    "- writing-good-skills: Save or improve a skill after hard work - steps first, pi...",
)


def skill_md(name: str, description: str = "Brew a good cup of tea.", body: str = "1. Boil water.\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}"


def run_turns(db, runtime, user_id: str, session_id: str, *inputs: str) -> list:
    posted = [post_turn(db, user_id, session_id, line) for line in inputs]
    drain_session(runtime, session_id)
    finished = [wait_finished(db, t.id) for t in posted]
    assert [t.status for t in finished] == ["completed"] * len(inputs)
    return finished


def test_the_prompt_carries_one_line_per_unarchived_skill_stale_ones_too(db, settings, user, model, make_runtime):
    """A stale skill left the index (learned procedures quietly vanished); only archived ones leave."""
    store = SkillStore.for_user(db, settings, user.id)
    SkillEditor(store, "agent").create("brew-tea", skill_md("brew-tea", "Brew tea the way this user likes it. " * 3))
    SkillEditor(store, "review").create("gone", skill_md("gone"))
    SkillEditor(store, "review").create("resting", skill_md("resting", "A stale agent skill."))
    store.archive("gone")
    store.set_stale("resting")
    chat = make_session(db, user.id)
    run_turns(db, make_runtime(), user.id, chat.id, "hello")

    prompt = sessions.get_session(db, user.id, chat.id).system_prompt
    block = "\n".join([INDEX_HEADER, "<available_skills>",
                       "- brew-tea: Brew tea the way this user likes it. Brew tea the way thi...",
                       *BUNDLED_LINES[:1], "- resting: A stale agent skill.", *BUNDLED_LINES[1:],
                       "</available_skills>"])
    assert f"\n\n{block}\n\n" in prompt
    assert "skill_view" in INDEX_HEADER and "gone" not in prompt
    assert "save it with skill_manage" in prompt  # the tool's guidance sentence


def test_without_the_skill_tools_there_is_no_index(db, settings, user):
    chat = make_session(db, user.id)
    only_files = ToolRegistry([REGISTRY.get("read_file")])

    assert INDEX_HEADER not in compose_system_prompt(chat, only_files, settings, date(2026, 1, 1), db).text
    assert INDEX_HEADER in compose_system_prompt(chat, REGISTRY, settings, date(2026, 1, 1), db).text


def test_a_skill_created_mid_session_reaches_the_next_session_not_this_one(db, user, model, make_runtime):
    runtime = make_runtime()
    chat = make_session(db, user.id)
    create = {"action": "create", "name": "brew-tea", "content": skill_md("brew-tea")}
    model.script(tool_call([("skill_manage", create)]), text("Saved it as a skill."), text("Still here."))
    run_turns(db, runtime, user.id, chat.id, "Remember how I brew tea.", "Anything else?")

    requests = model.requests
    assert len(requests) == 3
    systems = {r.body["messages"][0]["content"] for r in requests}
    assert len(systems) == 1  # byte-identical in every call of the session
    assert "- brew-tea:" not in systems.pop()
    result = next(m for m in requests[1].body["messages"] if m["role"] == "tool")
    assert json.loads(result["content"])["message"] == "Skill 'brew-tea' created."

    later = make_session(db, user.id)
    run_turns(db, runtime, user.id, later.id, "Tea time.")
    assert "- brew-tea: Brew a good cup of tea." in model.requests[-1].body["messages"][0]["content"]


def test_the_model_loads_and_patches_a_skill_through_the_tools(db, settings, user, model, make_runtime):
    store = SkillStore.for_user(db, settings, user.id)
    SkillEditor(store, "agent").create("brew-tea", skill_md("brew-tea"))
    chat = make_session(db, user.id)
    model.script(
        tool_call([("skill_view", {"name": "brew-tea"})]),
        tool_call([("skill_manage", {"action": "patch", "name": "brew-tea", "old_string": "Boil water.",
                                     "new_string": "Boil water, then wait a minute."})]),
        tool_call([("skill_view", {"name": "brew-tea", "file_path": "../../../../etc/passwd"})]),
        text("Done."),
    )
    run_turns(db, make_runtime(), user.id, chat.id, "Fix my tea skill.")

    tool_results = [json.loads(m["content"]) for m in model.requests[-1].body["messages"] if m["role"] == "tool"]
    assert tool_results[0]["content"] == skill_md("brew-tea") and tool_results[0]["files"] == []
    assert tool_results[1]["message"] == "Patched SKILL.md in skill 'brew-tea' (1 replacement)."
    assert "may not contain '..'" in tool_results[2]["error"]
    assert store.detail("brew-tea").content.endswith("1. Boil water, then wait a minute.\n")
    assert (store.detail("brew-tea").view_count, store.detail("brew-tea").use_count) == (1, 1)
