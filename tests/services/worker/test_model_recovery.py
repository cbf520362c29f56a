"""The model's failures end in a completed turn, as Hermes Agent does. A provider "context length
exceeded" error compresses and asks again once; an answer cut by the output limit is continued and joined;
the compression threshold follows Hermes Agent's arithmetic."""

from __future__ import annotations

import pytest

from shared.stores import sessions
from services.worker.agent.compress_window import threshold_tokens
from services.worker.agent.drain import drain_session
from tests.fakes.model import fail, text
from tests.services.worker.helpers import post_turn, wait_finished
from tests.services.worker.test_compress import MARKER, SMALL, SUMMARY, main_calls, run_turns, words

OVERFLOW = "This model's maximum context length is 4000 tokens. However, your messages resulted in 4100 tokens."


@pytest.mark.parametrize("window, max_tokens, expected", [
    (128_000, 0, 96_000),  # 75% for windows under 512K, not 50%
    (128_000, 4096, int((128_000 - 4096) * 0.75)),  # the answer's max_tokens is reserved
    (2_000_000, 0, 1_000_000),  # a large window keeps the configured 50%
    (80_000, 0, 64_000),  # never below the 64K floor
    (64_000, 0, int(64_000 * 0.85)),  # the floor does not fit: 85% of the window
])
def test_the_threshold_follows_the_anchors_arithmetic(settings, window, max_tokens, expected):
    custom = settings.model_copy(update={"llm_context_window": window, "llm_max_tokens": max_tokens,
                                         "compression_threshold": 0.5, "compression_floor_tokens": 64_000,
                                         "compression_small_window_share": 0.75})
    assert threshold_tokens(custom) == expected


def test_a_context_overflow_compresses_and_the_turn_completes(db, user, session, model, make_runtime):
    runtime = make_runtime(**SMALL, compression_protect_first_n=1)
    run_turns(db, runtime, user, session, model, 6)  # under the threshold: nothing compacted yet
    assert sessions.latest_compaction(db, session.id) is None
    model.on(MARKER, text(SUMMARY))
    model.script(fail(400, OVERFLOW), text("Answered after compressing."))

    posted = post_turn(db, user.id, session.id, words("question6"))
    drain_session(runtime, session.id)
    finished = wait_finished(db, posted.id)

    assert (finished.status, finished.output) == ("completed", "Answered after compressing.")
    assert sessions.latest_compaction(db, session.id) is not None
    refused, retried = main_calls(model)[-2:]
    assert len(retried) < len(refused)  # the retry sent the compacted context


def test_an_overflow_with_nothing_to_compress_fails_with_its_reason(db, user, session, model, make_runtime):
    runtime = make_runtime(**SMALL)
    model.script(fail(400, OVERFLOW), fail(400, OVERFLOW))

    posted = post_turn(db, user.id, session.id, "hello")
    drain_session(runtime, session.id)
    finished = wait_finished(db, posted.id)

    assert (finished.status, finished.error_code) == ("failed", "context_overflow")


def test_an_answer_cut_by_the_output_limit_is_continued_and_the_turn_completes(db, user, session, model,
                                                                                 make_runtime):
    runtime = make_runtime(**SMALL)
    model.script(text("Step one, ", finish_reason="length"), text("step two."))

    posted = post_turn(db, user.id, session.id, "list the steps")
    drain_session(runtime, session.id)
    finished = wait_finished(db, posted.id)

    assert (finished.status, finished.output) == ("completed", "Step one, step two.")
    stored = [m.content for m in sessions.list_messages(db, session.id) if m.role == "assistant"]
    assert stored == ["Step one, step two."]
    assert model.requests[-1].body["max_tokens"] > 0
