"""Provider hooks around a turn and a session's end: on_turn_start, queue_prefetch, on_session_end (once)."""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta

import pytest

from services.curator import session_end
from services.worker.agent.drain import drain_session
from shared.clock import utcnow
from shared.models.sessions import ChatSession
from shared.providers import MemoryProvider, register, unregister
from shared.stores import sessions
from tests.fakes.model import text
from tests.services.worker.helpers import post_turn, wait_finished
from tests.support.waiting import wait_until


@pytest.fixture
def hooks():
    """A recording provider registered through the registry; its queue_prefetch waits on `release`."""
    calls: list[tuple] = []
    release = threading.Event()

    @register
    class Hooks(MemoryProvider):
        name = f"hooks-{uuid.uuid4().hex[:6]}"

        def on_turn_start(self, turn_number, message, ctx):
            calls.append(("turn_start", ctx.session_id, ctx.turn_id, turn_number, message))

        def prefetch(self, query, ctx):
            calls.append(("prefetch", ctx.session_id, query))

        def queue_prefetch(self, user_text, assistant_text, ctx):
            calls.append(("queue_prefetch_started", ctx.session_id, user_text, assistant_text))
            release.wait(10)
            calls.append(("queue_prefetch_done", ctx.session_id))

        def on_session_end(self, ctx):
            calls.append(("session_end", ctx.session_id, ctx.user_id))
            raise RuntimeError("a provider failing at session end is logged, not raised")

    Hooks.calls, Hooks.release = calls, release
    yield Hooks
    release.set()
    unregister(Hooks.name)


def test_turn_start_before_prefetch_and_queue_prefetch_after_the_turn_off_its_path(db, settings, user, session,
                                                                                   model, make_runtime, hooks):
    runtime = make_runtime(memory_provider=hooks.name)
    model.script(text("Deploys go out on Fridays."))
    turn = post_turn(db, user.id, session.id, "when do deploys go out?")
    drain_session(runtime, session.id)

    assert wait_finished(db, turn.id).status == "completed"
    wait_until(lambda: any(c[0] == "queue_prefetch_started" for c in hooks.calls), 10, what="queue_prefetch")
    # the turn completed while queue_prefetch is still held: it is not on the turn's path
    assert not any(c[0] == "queue_prefetch_done" for c in hooks.calls)
    assert hooks.calls[:3] == [
        ("turn_start", session.id, turn.id, 1, "when do deploys go out?"),
        ("prefetch", session.id, "when do deploys go out?"),
        ("queue_prefetch_started", session.id, "when do deploys go out?", "Deploys go out on Fridays."),
    ]
    hooks.release.set()
    wait_until(lambda: ("queue_prefetch_done", session.id) in hooks.calls, 10, what="queue_prefetch to finish")


def _age(db, session_id: str, hours: float) -> None:
    with db.write() as s:
        row = s.get(ChatSession, session_id)
        row.created_at = row.updated_at = utcnow() - timedelta(hours=hours)


def test_an_idle_session_ends_once_in_the_sweep(db, settings, user, session, hooks):
    conf = settings.model_copy(update={"memory_provider": hooks.name, "session_idle_end_hours": 24})
    fresh = sessions.create_session(db, user.id)
    _age(db, session.id, 25)

    assert session_end.end_idle_sessions(conf, utcnow()) >= 1
    assert session_end.end_idle_sessions(conf, utcnow()) == 0
    assert session_end.end_session(conf, session.id) is False
    ends = [c for c in hooks.calls if c[0] == "session_end"]
    assert ends == [("session_end", session.id, user.id)]
    assert sessions.get_session(db, None, session.id).ended_at is not None
    assert sessions.get_session(db, None, fresh.id).ended_at is None


def test_an_ended_session_fires_on_session_end_exactly_once(db, settings, user, session, hooks):
    conf = settings.model_copy(update={"memory_provider": hooks.name, "session_idle_end_hours": 0})
    assert session_end.end_session(conf, session.id) is True
    assert session_end.end_session(conf, session.id) is False
    _age(db, session.id, 1000)
    assert session_end.end_idle_sessions(conf, utcnow()) == 0
    assert [c for c in hooks.calls if c[0] == "session_end"] == [("session_end", session.id, user.id)]
