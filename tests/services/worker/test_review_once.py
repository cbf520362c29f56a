"""Exactly once in effect: a review taken over after its worker died writes nothing twice, a finished review
never runs again, and two reviews of one session never run at the same time."""

from __future__ import annotations

import threading

import pytest

import services.worker.tasks as tasks
from shared.queue.names import QUEUE_REVIEW, REVIEW_SESSION, ROUTES
from shared.stores import reviews
from shared.stores.memory import MemoryRequest, MemoryStore
from services.worker.review.drain import drain_reviews
from services.worker.registrations import register_tools
from services.worker.tools.registry import Tool, ToolRegistry
from tests.fakes.model import text, tool_call
from tests.services.worker.reviewing import MEMORY, catch_sends, review_requests, turns
from tests.support.waiting import wait_until

REGISTRY = register_tools()  # this module's own registry of the built-in tools

PREFERENCE = "User wants every answer in British English."
REMEMBER = ("memory", {"action": "add", "target": "user", "content": PREFERENCE})


class WorkerDied(BaseException):
    """Stands for the process going away: nothing in the worker catches it."""


@pytest.fixture
def sent(db, monkeypatch):
    return catch_sends(db, monkeypatch)


def dying_memory_tool() -> ToolRegistry:
    """The real review tools, except that `memory` applies its write and then the worker dies."""
    real = REGISTRY.get("memory")

    def apply_then_die(ctx, args):
        real.handler(ctx, args)
        raise WorkerDied()

    dying = Tool(name="memory", description=real.description, parameters=real.parameters, handler=apply_then_die,
                 toolset=real.toolset)
    return ToolRegistry([dying if tool.name == "memory" else tool for tool in REGISTRY])


class DiesOnCall:
    """The runtime's model client, except that the worker dies when it starts call number `n`."""

    def __init__(self, llm, n: int) -> None:
        self.llm, self.n, self.calls = llm, n, 0
        self.model = llm.model

    def complete(self, *args, **kwargs):
        self.calls += 1
        if self.calls == self.n:
            raise WorkerDied()
        return self.llm.complete(*args, **kwargs)


def due_memory_review(db, user, session, make_runtime, sent):
    runtime = make_runtime(memory_review_interval=1, skill_review_interval=0)
    turns(db, runtime, user.id, session.id, "From now on, always answer in British English.")
    [review_id] = sent.review_ids
    return review_id


def user_entries(settings, user_id: str) -> list[str]:
    return MemoryStore.for_user(settings, user_id).entries("user")


def test_a_write_whose_worker_died_mid_call_is_never_run_again(db, user, session, model, make_runtime, sent):
    review_id = due_memory_review(db, user, session, make_runtime, sent)
    model.on(MEMORY, tool_call([REMEMBER]), text("Saved."))
    first = make_runtime(tools=dying_memory_tool(), memory_review_interval=1)
    with pytest.raises(WorkerDied):
        drain_reviews(first, session.id)
    assert user_entries(first.settings, user.id) == [PREFERENCE]  # applied, but never recorded as finished

    second = make_runtime(memory_review_interval=1)
    assert drain_reviews(second, session.id) == 1

    review = reviews.get_review(db, review_id)
    assert (review.status, review.attempts, review.worker_id) == ("completed", 2, second.worker_id)
    [call] = reviews.ledger(db, review_id)
    assert call.outcome == "interrupted" and "effect is unknown" in call.result
    assert user_entries(second.settings, user.id) == [PREFERENCE]
    resumed = review_requests(model, MEMORY)[-1]["messages"]
    assert resumed[-1] == {"role": "tool", "tool_call_id": review.messages[0]["tool_calls"][0]["id"],
                           "content": call.result}


def test_a_takeover_resumes_after_the_last_recorded_step_without_repeating_it(db, user, session, model,
                                                                              make_runtime, sent, settings):
    review_id = due_memory_review(db, user, session, make_runtime, sent)
    model.on(MEMORY, tool_call([REMEMBER]), text("Saved."))
    first = make_runtime(memory_review_interval=1)
    first.llm = DiesOnCall(first.llm, 2)  # after the write is recorded, before the model hears of it
    with pytest.raises(WorkerDied):
        drain_reviews(first, session.id)
    MemoryStore.for_user(settings, user.id).write(MemoryRequest(target="user", action="remove",
                                                                old_text="British"))

    drain_reviews(make_runtime(memory_review_interval=1), session.id)

    review = reviews.get_review(db, review_id)
    assert (review.status, review.model_calls, review.summary) == ("completed", 2, "Saved.")
    assert [c.outcome for c in reviews.ledger(db, review_id)] == ["applied"]
    assert user_entries(settings, user.id) == []  # the write was not made again after the user removed it
    assert len(review_requests(model, MEMORY)) == 2


def test_a_finished_review_is_never_run_again(db, user, session, model, make_runtime, sent):
    review_id = due_memory_review(db, user, session, make_runtime, sent)
    model.on(MEMORY, text("Nothing to save."))
    runtime = make_runtime()
    assert drain_reviews(runtime, session.id) == 1

    assert tasks.review_session.run(session_id=session.id, review_id=review_id) == 0  # a redelivered task
    assert drain_reviews(make_runtime(), session.id) == 0
    assert len(review_requests(model, MEMORY)) == 1


def test_two_reviews_of_one_session_never_run_at_once(db, user, session, model, make_runtime, sent):
    runtime = make_runtime(memory_review_interval=1, skill_review_interval=0)
    turns(db, runtime, user.id, session.id, "one", "two")
    assert len(sent.review_ids) == 2
    release = threading.Event()
    model.on(MEMORY, lambda body: release.wait(10) and text("Nothing to save."), text("Nothing to save."))
    ran: list[int] = []
    busy = threading.Thread(target=lambda: ran.append(drain_reviews(make_runtime(), session.id)))
    busy.start()
    wait_until(lambda: review_requests(model, MEMORY), what="the first review to reach the model")

    assert drain_reviews(make_runtime(), session.id) == 0  # the session's review is running elsewhere
    assert len(review_requests(model, MEMORY)) == 1
    release.set()
    busy.join(10)

    first, second = (reviews.get_review(db, i) for i in sent.review_ids)
    assert ran == [2] and (first.status, second.status) == ("completed", "completed")
    assert second.started_at >= first.finished_at


def test_the_task_runs_on_the_review_queue_and_drops_a_malformed_payload():
    assert tasks.app.tasks[REVIEW_SESSION].name == REVIEW_SESSION
    assert ROUTES[REVIEW_SESSION] == {"queue": QUEUE_REVIEW}
    assert tasks.review_session.run(session_id="ses_x") == 0
