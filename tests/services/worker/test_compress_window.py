"""Where compression cuts: the head on the first compaction only, tool groups whole, the last user and
assistant messages always in the tail."""

from __future__ import annotations

import pytest

from shared.models.compactions import Compaction
from shared.models.sessions import Message
from services.worker.agent.compress_window import plan

pytestmark = pytest.mark.once  # backend-independent: see tests/conftest.py

TEXT = "x" * 400  # 100 tokens


def row(i: int, role: str, content: str = TEXT, calls: int = 0) -> Message:
    tool_calls = [{"id": f"c{i}_{n}", "type": "function", "function": {"name": "look", "arguments": "{}"}}
                  for n in range(calls)] or None
    return Message(id=i, session_id="ses", role=role, content=content, tool_calls=tool_calls,
                   tool_call_id=f"c{i - 1}_0" if role == "tool" else None)


def chat(n: int) -> list[Message]:
    return [row(i, "user" if i % 2 else "assistant") for i in range(1, n + 1)]


def ids(rows: list[Message]) -> list[int]:
    return [m.id for m in rows]


def test_the_first_compaction_keeps_the_head_and_a_budgeted_tail(settings):
    custom = settings.model_copy(update={"llm_context_window": 4000, "compression_protect_last_n": 3, "llm_max_tokens": 0,
                                            "compression_floor_tokens": 0, "compression_small_window_share": 0.5})
    window = plan(chat(20), None, custom)  # tail budget 400 tokens, soft ceiling 600: six 100-token messages

    assert ids(window.head) == [1, 2, 3]
    assert ids(window.tail) == list(range(15, 21))
    assert ids(window.middle) == list(range(4, 15))


def test_a_tool_group_the_tail_reaches_into_moves_into_it_whole(settings):
    custom = settings.model_copy(update={"llm_context_window": 4000, "compression_protect_last_n": 3, "llm_max_tokens": 0,
                                            "compression_floor_tokens": 0, "compression_small_window_share": 0.5})
    big = "y" * 2000
    rows = chat(12) + [row(13, "assistant", calls=2), row(14, "tool", big), row(15, "tool", big),
                       row(16, "user"), row(17, "assistant")]
    window = plan(rows, None, custom)  # the 3-message minimum reaches the group: all of it comes, over budget

    assert ids(window.tail) == [13, 14, 15, 16, 17]
    assert ids(window.middle) == list(range(4, 13))


def test_the_last_user_message_stays_in_the_tail_behind_a_long_tool_chain(settings):
    custom = settings.model_copy(update={"llm_context_window": 4000, "compression_protect_last_n": 3, "llm_max_tokens": 0,
                                            "compression_floor_tokens": 0, "compression_small_window_share": 0.5})
    chain = [m for i in range(0, 16, 2) for m in (row(22 + i, "assistant", calls=1), row(23 + i, "tool"))]
    window = plan(chat(20) + [row(21, "user")] + chain, None, custom)

    assert window.tail[0].id == 21
    assert ids(window.middle) == list(range(4, 21))


def test_later_compactions_fold_the_old_head_into_the_summary(settings):
    custom = settings.model_copy(update={"llm_context_window": 4000, "compression_protect_last_n": 3, "llm_max_tokens": 0,
                                            "compression_floor_tokens": 0, "compression_small_window_share": 0.5})
    previous = Compaction(session_id="ses", outcome="compacted", head_through_id=3, summarized_through_id=14,
                          summary="## Goal\nearlier")
    window = plan(chat(30), previous, custom)

    assert window.head == [] and window.previous is previous
    assert ids(window.middle) == [1, 2, 3] + list(range(15, 25))
    assert ids(window.tail) == list(range(25, 31))
    assert window.summarized_through() == 24


def test_nothing_to_compress_when_everything_fits_the_tail(settings):
    window = plan(chat(6), None, settings)
    assert window.middle == []
