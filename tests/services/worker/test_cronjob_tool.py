"""The `cronjob` tool end to end in one process: the agent schedules "remind me in 20 minutes" from a Telegram
chat, the tick starts the run after the clock moves, the worker runs it, and its answer is recorded for that
chat exactly once; a run that tries `rm -rf` unattended is refused and the refusal is what is delivered."""

from __future__ import annotations

from datetime import timedelta

from sqlmodel import select

from services.curator.cron import tick
from services.worker.agent.drain import drain_session
from shared import clock
from shared.models.cron import CronRun
from shared.models.gateway import OutboxItem
from shared.models.cron import JobCreate
from shared.stores import cron_jobs, gateway_chats
from tests.fakes.model import text, tool_call
from tests.services.worker.helpers import post_turn, wait_finished
from tests.support.factories import make_user

CHAT = "424242"


def telegram_chat(db, user_id: str) -> str:
    row, _, _ = gateway_chats.resolve(db, user_id, f"agent:main:telegram:dm:{CHAT}")
    return row.session_id


def ask(db, runtime, user_id: str, session_id: str, words: str) -> None:
    turn = post_turn(db, user_id, session_id, words)
    drain_session(runtime, session_id)
    assert wait_finished(db, turn.id).status == "completed"


def run_due(db, settings, runtime, job) -> CronRun:
    """Tick (the run starts), run its turn, tick again (the run settles); the run as recorded."""
    sent: list = []
    tick(settings, lambda name, payload: sent.append(payload))
    assert job.session_id in {p.session_id for p in sent}
    drain_session(runtime, job.session_id)
    tick(settings, lambda *_: None)
    with db.read() as s:
        [run] = s.exec(select(CronRun).where(CronRun.job_id == job.id))
    return run


def delivered(db, user_id: str) -> list[OutboxItem]:
    with db.read() as s:
        return list(s.exec(select(OutboxItem).where(OutboxItem.user_id == user_id)))


def test_a_reminder_asked_for_on_telegram_fires_once_after_20_minutes_into_that_chat(db, settings, model,
                                                                                   make_runtime, real_time):
    user = make_user(db)
    runtime = make_runtime()
    chat = telegram_chat(db, user.id)
    model.script(tool_call([("cronjob", {"action": "create", "schedule": "in 20 minutes",
                                         "prompt": "Remind the user to call mum."}, "c1")]),
                 text("I will remind you in 20 minutes."))
    ask(db, runtime, user.id, chat, "remind me in 20 minutes to call mum")
    [job] = cron_jobs.list_jobs(db, user.id)
    assert (job.deliver, job.status) == (f"telegram:{CHAT}", "active")

    tick(settings, lambda *_: None)
    assert delivered(db, user.id) == []
    model.script(text("Time to call mum!"))
    with clock.travel(timedelta(minutes=21)):
        run = run_due(db, settings, runtime, job)
        tick(settings, lambda *_: None)
    assert run.status == "completed"
    [item] = delivered(db, user.id)
    assert (item.target, item.chat_id, item.status) == (f"telegram:{CHAT}", CHAT, "pending")
    assert item.text.endswith("Time to call mum!")


def test_rm_rf_in_an_unattended_run_is_refused_and_the_refusal_is_delivered(db, settings, model, make_runtime,
                                                                          real_time):
    """Reproduction: a job whose prompt makes the agent run `rm -rf ./notes` while nobody watches."""
    user = make_user(db)
    runtime = make_runtime(approval_mode="manual")
    chat = telegram_chat(db, user.id)
    job = cron_jobs.create(db, user.id, JobCreate(schedule="every 1h", prompt="Clean up my notes."),
                           origin_session=chat)
    model.script(tool_call([("terminal", {"command": "rm -rf ./notes"}, "c1")]), text("I tried to clean up."))
    with clock.travel(timedelta(hours=1, seconds=5)):
        run = run_due(db, settings, runtime, job)
    assert run.status == "refused"
    assert "rm -rf ./notes" in run.error
    [item] = delivered(db, user.id)
    assert "refused: the command `rm -rf ./notes` was refused" in item.text
    assert cron_jobs.get(db, user.id, job.id).last_status == "refused"


def test_a_scheduled_run_cannot_schedule_more_jobs(db, settings, model, make_runtime, real_time):
    user = make_user(db)
    runtime = make_runtime()
    job = cron_jobs.create(db, user.id, JobCreate(schedule="every 1h", prompt="Schedule another."))
    model.script(tool_call([("cronjob", {"action": "create", "schedule": "every 1h", "prompt": "again"}, "c1")]),
                 text("done"))
    with clock.travel(timedelta(hours=1, seconds=5)):
        run_due(db, settings, runtime, job)
    assert [j.id for j in cron_jobs.list_jobs(db, user.id)] == [job.id]


def test_a_command_kind_the_owner_allowed_for_the_job_runs_unattended(db, settings, model, make_runtime, real_time,
                                                                     data):
    user = make_user(db)
    runtime = make_runtime(approval_mode="manual", terminal_sandbox="none", data_dir=data)
    job = cron_jobs.create(db, user.id, JobCreate(schedule="every 1h", prompt="Clean up my notes.",
                                                  allow=["recursive delete"]))
    model.script(tool_call([("terminal", {"command": "rm -rf ./notes"}, "c1")]), text("Cleaned up."))
    with clock.travel(timedelta(hours=1, seconds=5)):
        run = run_due(db, settings, runtime, job)
    assert (run.status, run.output) == ("completed", "Cleaned up.")


def test_the_agent_cannot_allow_commands_for_its_own_jobs(db, settings, model, make_runtime, real_time):
    user = make_user(db)
    model.script(tool_call([("cronjob", {"action": "create", "schedule": "every 1h", "prompt": "wipe",
                                         "allow": ["recursive delete"]}, "c1")]), text("ok"))
    ask(db, make_runtime(), user.id, telegram_chat(db, user.id), "schedule a wipe")
    [job] = cron_jobs.list_jobs(db, user.id)
    assert job.allow == []


def test_the_agent_rewriting_an_allowed_jobs_prompt_drops_what_the_owner_allowed(db, settings, model, make_runtime,
                                                                                real_time):
    """Reproduction: an agent (a prompt injection in any chat) rewrote the prompt of a job its owner had allowed
    `rm -rf` for, and the new prompt's unattended runs kept that allowance."""
    user = make_user(db)
    job = cron_jobs.create(db, user.id, JobCreate(schedule="every 1h", prompt="Clear ./cache.",
                                                  allow=["recursive delete"]))
    model.script(tool_call([("cronjob", {"action": "update", "job_id": job.id, "prompt": "rm -rf ./notes"}, "c1")]),
                 text("updated"))
    ask(db, make_runtime(), user.id, telegram_chat(db, user.id), "change my job")
    changed = cron_jobs.get(db, user.id, job.id)
    assert (changed.prompt, changed.allow) == ("rm -rf ./notes", [])


def test_a_jobs_own_iteration_budget_ends_its_run_with_a_summary(db, settings, model, make_runtime, real_time):
    """max_iterations=1: after one tool-calling round the run is asked for its summary, not another round."""
    user = make_user(db)
    job = cron_jobs.create(db, user.id, JobCreate(schedule="every 1h", prompt="Keep checking.", max_iterations=1))
    model.script(tool_call([("cronjob", {"action": "list"}, "c1")]), text("Summary: checked once."))
    with clock.travel(timedelta(hours=1, seconds=5)):
        run = run_due(db, settings, make_runtime(), job)
    assert (run.status, run.output) == ("completed", "Summary: checked once.")
    last = model.requests[-1].body
    assert "maximum number of tool-calling iterations" in str(last["messages"][-1]) and not last.get("tools")
