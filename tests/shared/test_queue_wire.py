"""The task message `enqueue` sends is the one Celery's own `send_task` sends (workers run it: tests/e2e)."""

from __future__ import annotations

import base64
import json
import uuid

from shared.queue.app import make_celery
from shared.queue.names import QUEUE_TURNS, RUN_TURN
from shared.queue.wire import task_message

PER_MESSAGE = {"id", "root_id", "correlation_id", "reply_to", "delivery_tag"}  # fresh ids in every message


def celerys_message(settings, redis_client, kwargs: dict) -> dict:
    """What Celery itself pushes for this call, read back from the queue under a prefix of this test's own."""
    custom = settings.model_copy(update={"broker_key_prefix": f"wire-{uuid.uuid4().hex[:8]}:"})
    app = make_celery(custom)
    try:
        app.send_task(RUN_TURN, kwargs=kwargs, queue=QUEUE_TURNS)
        return json.loads(redis_client.lpop(custom.broker_key_prefix + QUEUE_TURNS))
    finally:
        app.close()


def without_ids(part: dict) -> dict:
    return {key: value for key, value in part.items() if key not in PER_MESSAGE}


def test_a_task_message_is_celerys_own_field_for_field(settings, redis_client):
    kwargs = {"turn_id": "turn_abc", "session_id": "ses_def"}
    theirs = celerys_message(settings, redis_client, kwargs)
    ours = json.loads(task_message(RUN_TURN, kwargs, QUEUE_TURNS))

    assert set(ours) == set(theirs)
    assert (ours["content-type"], ours["content-encoding"]) == (theirs["content-type"], theirs["content-encoding"])
    assert without_ids(ours["headers"]) == without_ids(theirs["headers"])
    assert without_ids(ours["properties"]) == without_ids(theirs["properties"])
    assert set(ours["headers"]) == set(theirs["headers"]) and set(ours["properties"]) == set(theirs["properties"])
    assert json.loads(base64.b64decode(ours["body"])) == json.loads(base64.b64decode(theirs["body"]))
    assert ours["headers"]["id"] == ours["headers"]["root_id"] == ours["properties"]["correlation_id"]
