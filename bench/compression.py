"""`python -m bench.compression`: compressions per 100 turns of a long scripted chat, with the threshold
before the change (half the window) and after it (Hermes Agent's: max_tokens reserved, >= 75% of windows under
512K, a 64K floor). Prints figures, asserts nothing.

The chat is deterministic: each turn is a user message, one tool round and an answer. Before every turn
the real planner (services/worker/agent/compress_window.plan) cuts the stored transcript exactly as a
compression would, and the summary is given the length the summariser is asked for.
"""

from __future__ import annotations

from shared.config import load_settings
from shared.models.compactions import Compaction
from shared.models.sessions import Message
from services.worker.agent.compress import assemble, summary_role
from services.worker.agent.compress_window import message_tokens, plan, prompt_tokens, threshold_tokens
from services.worker.agent.history import to_wire

TURNS = 100
SYSTEM = "x" * 4 * 6_000  # a 6K-token system prompt with memory and the skill index
SIZES = {"user": 300, "call": 100, "tool": 2_000, "answer": 700}  # tokens per message of one turn
WINDOWS = (32_768, 128_000, 200_000, 1_000_000)


def chars(tokens: int) -> str:
    return "lorem ipsum " * (tokens * 4 // 12)


def turn_rows(first_id: int, n: int) -> list[Message]:
    call = {"id": f"call_{n}", "type": "function", "function": {"name": "read_file", "arguments": chars(SIZES["call"])}}
    rows = [Message(role="user", content=chars(SIZES["user"])),
            Message(role="assistant", content=None, tool_calls=[call]),
            Message(role="tool", content=chars(SIZES["tool"]), tool_call_id=f"call_{n}", name="read_file"),
            Message(role="assistant", content=chars(SIZES["answer"]))]
    for offset, row in enumerate(rows):
        row.id, row.session_id, row.turn_id = first_id + offset, "ses_bench", f"turn_{n}"
    return rows


def compressions(settings) -> int:
    stored: list[Message] = []
    latest: Compaction | None = None
    count = 0
    for n in range(TURNS):
        stored += turn_rows(len(stored) + 1, n)
        if prompt_tokens(SYSTEM, assemble(stored, latest), None) < threshold_tokens(settings):
            continue
        window = plan(stored, latest, settings)
        if not window.middle:
            continue
        compacted = sum(message_tokens(to_wire(m)) for m in window.middle)
        ceiling = max(256, min(int(settings.llm_context_window * 0.05), 10_000))
        summary = chars(max(min(2_000, ceiling), min(int(compacted * 0.2), ceiling)))
        latest = Compaction(session_id="ses_bench", outcome="compacted", summary=summary,
                            head_through_id=window.head[-1].id if window.head else None,
                            summarized_through_id=window.summarized_through(), summary_role=summary_role(window))
        count += 1
    return count


def main() -> None:
    base = load_settings()
    print(f"compressions per {TURNS} turns (about {sum(SIZES.values()):,} tokens a turn, 6K system prompt)")
    print(f"{'window':>10} {'before: threshold':>18} {'count':>6} {'after: threshold':>17} {'count':>6}")
    for window in WINDOWS:
        before = base.model_copy(update={"llm_context_window": window, "llm_max_tokens": 0,
                                         "compression_floor_tokens": 0, "compression_small_window_share": 0.0})
        after = base.model_copy(update={"llm_context_window": window, "llm_max_tokens": 4096,
                                        "compression_floor_tokens": 64_000, "compression_small_window_share": 0.75})
        print(f"{window:>10,} {threshold_tokens(before):>18,} {compressions(before):>6} "
              f"{threshold_tokens(after):>17,} {compressions(after):>6}")


if __name__ == "__main__":
    main()
