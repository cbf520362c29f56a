"""The recall search starts as the turn begins, on its own thread, and the turn takes its result."""

from __future__ import annotations

import threading
import uuid

import pytest

from shared.providers import MemoryProvider, register, unregister
from services.worker.agent.drain import drain_session
from tests.fakes.model import text
from tests.services.worker.helpers import post_turn, wait_finished

RECALLED = "[2026-11-02, you answered] Deploys go out on Fridays after the freeze."


@pytest.fixture
def early():
    """A provider that records where its prefetch ran and whether it had begun when the prompt was built."""
    calls: list[tuple] = []
    begun = threading.Event()

    @register
    class Early(MemoryProvider):
        name = f"early-{uuid.uuid4().hex[:6]}"

        def prefetch(self, query, ctx):
            calls.append(("prefetch", threading.current_thread().name, ctx.turn_id))
            begun.set()
            return RECALLED

        def system_prompt_block(self, ctx):
            # built after the search started, and without waiting for it to finish
            calls.append(("prompt_block", begun.wait(5)))
            return None

    Early.calls = calls
    yield Early
    unregister(Early.name)


def test_the_search_runs_beside_the_prompt_build_and_its_block_reaches_the_model(db, user, session, model,
                                                                                  make_runtime, early):
    model.script(text("Fridays."))
    turn = post_turn(db, user.id, session.id, "when do deploys go out again?")
    turn_thread = threading.current_thread().name
    drain_session(make_runtime(memory_provider=early.name), session.id)

    assert wait_finished(db, turn.id).status == "completed"
    assert ("prompt_block", True) in early.calls  # the search had begun before the system prompt was built
    searches = [c for c in early.calls if c[0] == "prefetch"]
    assert len(searches) == 1 and searches[0][2] == turn.id  # searched once for this turn, never twice
    assert searches[0][1] != turn_thread  # on its own thread, off the turn's
    sent = [m for m in model.requests[0].body["messages"] if m["role"] == "user"][-1]["content"]
    assert sent.startswith("when do deploys go out again?\n\n<memory-context>") and RECALLED in sent
