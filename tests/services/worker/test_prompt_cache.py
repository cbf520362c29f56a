"""A turn's request starts with everything the session's earlier request sent, so the provider's prompt cache
serves it; the tokens it served are recorded in the turn's usage."""

from __future__ import annotations

from shared.stores import turns
from services.demo_model.prefix_cache import serialize
from tests.fakes.model import text, tool_call
from tests.services.worker.reviewing import turns as run_turns
from tests.services.worker.test_memory_prompt import remember


def test_a_memory_update_rides_on_the_new_message_and_the_earlier_request_stays_cached(db, settings, user, session,
                                                                                        model, make_runtime):
    runtime = make_runtime(memory_review_interval=0, skill_review_interval=0)
    model.script(tool_call([("list_files", {})]), text("Nothing there yet."), text("Tea, noted."))
    [first_turn] = run_turns(db, runtime, user.id, session.id, "What files do I have?")
    remember(settings, user.id, "User drinks tea", target="user")  # written elsewhere: a note rides on the next turn
    [second_turn] = run_turns(db, runtime, user.id, session.id, "What do I drink?")

    *_, earlier, later = [r.body for r in model.requests]
    assert "<memory-update>" in later["messages"][-1]["content"]
    assert later["tools"] == earlier["tools"]
    assert later["messages"][:len(earlier["messages"])] == earlier["messages"]  # nothing earlier changed

    first, second = (turns.get_turn(db, None, t.id).usage for t in (first_turn, second_turn))
    assert first["cached_tokens"] > 0  # its second call re-sent its first
    assert second["cached_tokens"] >= len(serialize(earlier)) // 4  # the whole earlier request came from the cache
    assert second["cached_tokens"] < second["prompt_tokens"]
