"""Model failures end a turn with a stable code and a human message; retries and fallback recover."""

from __future__ import annotations

from services.worker.agent.drain import drain_session
from tests.fakes.model import fail, text
from tests.services.worker.helpers import event_types, post_turn, stream, wait_finished
from tests.support.hooks import own_hooks


def test_a_rejected_api_key_fails_the_turn_with_model_auth_failed(db, user, session, model, make_runtime,
                                                                     redis_client):
    model.script(fail(401, "invalid api key"))
    turn = post_turn(db, user.id, session.id, "hello")

    drain_session(make_runtime(), session.id)

    failed = wait_finished(db, turn.id)
    assert failed.status == "failed" and failed.error_code == "model_auth_failed"
    assert "API key" in failed.error_message and "Traceback" not in failed.error_message
    assert event_types(redis_client, turn.id) == ["turn.started", "turn.failed"]
    assert stream(redis_client, turn.id)[-1][1] == {
        "error": {"code": "model_auth_failed", "message": failed.error_message}
    }
    assert len(model.requests) == 1  # an auth error is not retried


def test_server_errors_fall_back_to_the_fallback_model(db, user, session, model, make_runtime, redis_client):
    runtime = make_runtime(llm_fallback_model="backup-model", llm_max_retries=1)
    model.script(fail(500, "boom"), fail(502, "bad gateway"), text("Answer from the backup."))
    turn = post_turn(db, user.id, session.id, "hello")

    drain_session(runtime, session.id)

    done = wait_finished(db, turn.id)
    assert done.status == "completed" and done.output == "Answer from the backup."
    assert [r.body["model"] for r in model.requests] == ["scripted", "scripted", "backup-model"]
    assert done.usage["model"] == "backup-model"
    kinds = event_types(redis_client, turn.id)
    assert kinds[0] == "turn.started" and kinds[-1] == "turn.completed"
    assert set(kinds[1:-1]) == {"message.delta"}


def test_an_internal_error_fails_the_turn_without_leaking_details(db, user, session, model, make_runtime,
                                                                    monkeypatch, redis_client):
    def broken_part(ctx):
        raise KeyError("secret internal detail")

    with own_hooks(built_ins=False) as hooks:
        hooks.add_prompt_part(broken_part)
        turn = post_turn(db, user.id, session.id, "hello")
        drain_session(make_runtime(), session.id)

    failed = wait_finished(db, turn.id)
    assert (failed.status, failed.error_code) == ("failed", "internal_error")
    assert failed.error_message == "The agent hit an internal error; the turn was stopped."
    assert "secret internal detail" not in str(stream(redis_client, turn.id))
    assert model.requests == []
