"""The bench's scripted reviewer: a short memory write or "Nothing to save.", for our review and the anchor's."""

from __future__ import annotations

from bench.review_model import NOTHING, is_review, review_reply, reviewing
from services.demo_model.replies import text

MEMORY_TOOL = [{"type": "function", "function": {"name": "memory"}}]


def body(last: str, n: int, tools=MEMORY_TOOL, role: str = "user") -> dict:
    messages = [{"role": "user", "content": f"turn {i}"} for i in range(n - 1)]
    return {"messages": messages + [{"role": role, "content": last}], "tools": tools}


def test_a_memory_review_saves_one_short_fact_or_says_nothing_to_save():
    for opening in ("[Background review — memory]\n\nThe conversation…", "Review the conversation above and consider"):
        saved, nothing = review_reply(body(opening, 4)), review_reply(body(opening, 5))
        assert [c.name for c in saved.tool_calls] == ["memory"] and len(saved.tool_calls[0].arguments) < 200
        assert nothing.text == NOTHING and not nothing.tool_calls


def test_a_skills_review_or_one_without_the_memory_tool_has_nothing_to_save():
    assert review_reply(body("[Background review — skills]\n…", 4)).text == NOTHING
    assert review_reply(body("Review the conversation above and update the skill library. Be", 4)).text == NOTHING
    assert review_reply(body("[Background review — memory]", 4, tools=[])).text == NOTHING


def test_the_review_closes_once_its_write_came_back():
    request = body("[Background review — memory]", 4)
    request["messages"].append({"role": "tool", "content": '{"success": true}'})
    assert review_reply(request).text == "Saved."


def test_anything_else_goes_to_the_default_answer():
    respond = reviewing(lambda b: text("echo"))
    assert not is_review(body("What did we review yesterday?", 3))
    assert respond(body("What did we review yesterday?", 3)).text == "echo"
    assert respond(body("[Background review — memory]", 5)).text == NOTHING
