"""`cronjob`: the agent schedules work for later — create, list, update, pause, resume, remove, run now.

A job created from a chat delivers to that chat unless told otherwise; its runs are unattended turns of the
job's own session (services/curator/cron.py starts them). A scheduled run may not schedule more work.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from shared import clock
from shared.db import get_database
from shared.errors import InvalidInput
from shared.models.cron import JobCreate, JobPublic, JobUpdate
from shared.queue.app import enqueue
from shared.queue.turns import send_turn
from shared.stores import cron_jobs, cron_runs
from services.worker.tools.registry import Tool, ToolContext

ACTIONS = ("create", "list", "update", "pause", "resume", "remove", "run")
FIELDS = ("schedule", "prompt", "deliver", "name", "skill", "timezone", "max_iterations", "timeout_seconds")
# `allow` is the owner's to set (API, CLI, console): the agent may not widen what its own unattended runs may do.


def cronjob(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    db = get_database(ctx.settings.sqlalchemy_url)
    action = args.get("action")
    if action not in ACTIONS:
        raise InvalidInput(f"action must be one of {', '.join(ACTIONS)}.")
    if action in ("create", "run") and _in_scheduled_run(db, ctx):
        raise InvalidInput("A scheduled run cannot create or start scheduled jobs.", code="cron_nested")
    fields = {k: args[k] for k in FIELDS if args.get(k) is not None}
    if action == "list":
        return {"jobs": [_view(j) for j in cron_jobs.list_jobs(db, ctx.user_id)]}
    if action == "create":
        job = cron_jobs.create(db, ctx.user_id, _body(JobCreate, fields), origin_session=ctx.session_id)
        return {"created": _view(job)}
    job_id = str(args.get("job_id") or "")
    if not job_id:
        raise InvalidInput(f"{action} needs job_id (see action=list).")
    if action == "remove":
        cron_jobs.remove(db, ctx.user_id, job_id)
        return {"removed": job_id}
    if action == "run":
        return {"started": _run_now(db, ctx, job_id)}
    if action in ("pause", "resume"):
        fields["status"] = "paused" if action == "pause" else "active"
    if {"prompt", "skill"} & set(fields) and cron_jobs.get(db, ctx.user_id, job_id).allow:
        fields["allow"] = []  # the owner allowed those commands for the work they read, not for a new one
    return {"updated": _view(cron_jobs.update(db, ctx.user_id, job_id, _body(JobUpdate, fields)))}


def _body(model, fields: dict[str, Any]):
    try:
        return model.model_validate(fields)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:5])
        raise InvalidInput(f"cronjob: {problems}") from None


def _in_scheduled_run(db, ctx: ToolContext) -> bool:
    return any(job.session_id == ctx.session_id for job in cron_jobs.list_jobs(db, ctx.user_id))


def _run_now(db, ctx: ToolContext, job_id: str) -> dict[str, Any]:
    claimed = cron_runs.run_now(db, ctx.user_id, job_id, clock.utcnow(),
                                max_running=ctx.settings.max_running_turns_per_user)
    for turn in claimed.send:
        send_turn(enqueue, turn.id, turn.session_id)
    return {"run_id": claimed.started[0].id, "job_id": job_id}


def _view(job) -> dict[str, Any]:
    shown = JobPublic.model_validate(job, from_attributes=True).model_dump(mode="json")
    return {k: shown[k] for k in ("id", "name", "schedule", "prompt", "deliver", "status", "next_run_at",
                                  "last_status", "timezone", "skill", "allow")}


CRONJOB = Tool(
    name="cronjob",
    # A run's budget and timeout (max_iterations, timeout_seconds) are taken if given but not advertised: the
    # owner sets them through the API or CLI, and every schema byte is paid on each request of every chat.
    description=("Schedule a prompt to run later or regularly, unattended, in its own session (not a promise "
                 "to remember), and manage jobs. Answers go to `deliver` (default: this chat)."),
    parameters={
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": list(ACTIONS)},
            "job_id": {"type": "string"},
            "schedule": {"type": "string", "description": "'0 7 * * 1-5', 'every 2h', 'in 20 minutes', ISO time."},
            "prompt": {"type": "string", "description": "Self-contained: runs do not see this chat."},
            "deliver": {"type": "string", "description": "origin, none, telegram:<chat id>, webhook:<route>."},
            "name": {"type": "string"},
            "skill": {"type": "string"},
            "timezone": {"type": "string"},
        },
        "required": ["action"],
    },
    handler=cronjob,
)
