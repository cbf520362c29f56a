"""A stopping worker hands its running turn back at the next safe point, and the turn resumes elsewhere."""

from __future__ import annotations

from services.worker.agent.drain import drain_session
from services.worker.tools.registry import ToolRegistry
from shared.stores import turns
from tests.fakes.model import text, tool_call
from tests.services.worker.helpers import post_turn, tool, wait_finished


def test_a_turn_is_handed_back_before_its_next_model_call_and_resumed_without_asking_twice(
        db, user, session, model, make_runtime):
    """Reproduction: under SIGTERM the worker kept its turns until it was killed, and they re-ran
    their model calls after the restart. Here SIGTERM arrives while the turn's tool runs: the turn must be handed
    back before its next model call (queued, no worker, its tool result kept), and the worker that takes it over
    asks the model only for the step still missing."""
    def sigterm_meanwhile(ctx, args):
        stopping.shutdown.begin(8.0)  # what the worker's SIGTERM handler does
        return "tool done"

    registry = ToolRegistry([tool("step", sigterm_meanwhile)])
    stopping = make_runtime(tools=registry, worker_id="worker@stopping")
    model.script(tool_call([("step", {}, "c1")]), text("all done"))
    turn = post_turn(db, user.id, session.id, "one step then answer")

    drain_session(stopping, session.id)

    handed = turns.get_turn(db, user.id, turn.id)
    assert (handed.status, handed.worker_id) == ("queued", None)
    assert len(model.requests) == 1, "the next model call was not made by the stopping worker"

    drain_session(make_runtime(tools=registry, worker_id="worker@fresh"), session.id)
    finished = wait_finished(db, turn.id)
    assert (finished.status, finished.output) == ("completed", "all done")
    assert len(model.requests) == 2, "the step already stored was not asked for again"
