"""Celery's task message (protocol 2, JSON, on the Redis transport), built here and sent with one LPUSH.

`send_task` builds the same message through kombu's producer pool, retry wrappers and header machinery:
about 0.6 ms of CPU per send against 0.1 ms for this (bench/README.md, "The api's share of a turn"), on every
accepted turn. tests/shared/test_queue_wire.py holds the two side by side, and every end-to-end test runs turns
sent this way on real Celery workers.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import uuid
from typing import Any

NO_CALLBACKS = {"callbacks": None, "errbacks": None, "chain": None, "chord": None}
_REPLY_TO = str(uuid.uuid4())  # no reply is ever read (results are ignored); Celery names its process's queue here


def task_message(name: str, kwargs: dict[str, Any], queue: str) -> str:
    """The JSON a Celery worker consuming `queue` takes for a call of task `name` with `kwargs`."""
    task_id = str(uuid.uuid4())
    body = json.dumps([[], kwargs, NO_CALLBACKS])
    return json.dumps({
        "body": base64.b64encode(body.encode()).decode(),
        "content-encoding": "utf-8",
        "content-type": "application/json",
        "headers": {
            "lang": "py", "task": name, "id": task_id, "shadow": None, "eta": None, "expires": None,
            "group": None, "group_index": None, "retries": 0, "timelimit": [None, None], "root_id": task_id,
            "parent_id": None, "argsrepr": "()", "kwargsrepr": repr(kwargs),
            "origin": f"gen{os.getpid()}@{socket.gethostname()}", "ignore_result": None,
            "replaced_task_nesting": 0, "stamped_headers": None, "stamps": {},
        },
        "properties": {
            "correlation_id": task_id, "reply_to": _REPLY_TO, "delivery_mode": 2,
            "delivery_info": {"exchange": "", "routing_key": queue}, "priority": 0, "body_encoding": "base64",
            "delivery_tag": str(uuid.uuid4()),
        },
    })
