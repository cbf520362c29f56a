"""The scheduled-jobs tick: due jobs start once as unattended turns of their own session, two ticks at once
never start a job twice, downtime costs one late run (said so), a missed one-time job says missed, and a run's
delivery is the real outcome of its turn (answer, "failed: why", "refused: why") recorded in the outbox."""

from __future__ import annotations

import threading
from datetime import timedelta

from sqlalchemy import func
from sqlmodel import select

from services.curator.cron import tick
from shared import clock
from shared.clock import utcnow
from shared.models.cron import CronJob, CronRun, JobCreate
from shared.models.gateway import OutboxItem
from shared.models.turns import Turn
from shared.queue.names import RUN_TURN
from shared.stores import cron_jobs, cron_runs, gateway_chats, turns
from tests.support.factories import make_user


def recorder():
    sent: list = []
    return sent, lambda name, payload: sent.append((name, payload))


def telegram_job(db, user_id: str, schedule: str, prompt: str = "say hi", **fields) -> CronJob:
    """A job asked for from the user's Telegram DM, so it delivers there."""
    chat, _, _ = gateway_chats.resolve(db, user_id, f"agent:main:telegram:dm:{abs(hash(user_id)) % 10**9}")
    return cron_jobs.create(db, user_id, JobCreate(schedule=schedule, prompt=prompt, name="news", **fields),
                            origin_session=chat.session_id)


def runs_of(db, job_id: str) -> list[CronRun]:
    with db.read() as s:
        return list(s.exec(select(CronRun).where(CronRun.job_id == job_id).order_by(CronRun.started_at)))


def outbox_of(db, user_id: str) -> list[OutboxItem]:
    with db.read() as s:
        return list(s.exec(select(OutboxItem).where(OutboxItem.user_id == user_id)))


def finish(db, turn_id: str, status, **outcome) -> None:
    """The turn ends as a worker would end it (claimed, then finished)."""
    turn = turns.get_turn(db, None, turn_id)
    assert turns.claim_next(db, turn.session_id, "w-test", 60) is not None
    assert turns.finish_turn(db, turn_id, "w-test", status, **outcome)


def test_a_due_job_starts_once_as_an_unattended_turn_of_its_own_session(db, settings):
    user = make_user(db)
    job = telegram_job(db, user.id, "in 20 minutes")
    assert job.deliver.startswith("telegram:") and job.next_run_at > utcnow()
    sent, send = recorder()

    tick(settings, send)
    assert runs_of(db, job.id) == []
    with clock.travel(timedelta(minutes=21)):
        tick(settings, send)
        tick(settings, send)

    [run] = runs_of(db, job.id)
    turn = turns.get_turn(db, user.id, run.turn_id)
    assert (turn.session_id, turn.interactive) == (job.session_id, False)
    assert "say hi" in turn.input
    assert [(n, p.turn_id) for n, p in sent if p.session_id == job.session_id] == [(RUN_TURN, turn.id)]
    assert cron_jobs.get(db, user.id, job.id).status == "done"


def test_two_ticks_at_once_over_100_due_jobs_start_each_exactly_once(db, settings):
    """Reproduction: two beats by mistake, both ticking while 100 jobs are due; count the runs."""
    users = [make_user(db) for _ in range(4)]
    jobs = [cron_jobs.create(db, users[i % 4].id, JobCreate(schedule="every 1h", prompt=f"job {i}"))
            for i in range(100)]
    ids = [j.id for j in jobs]
    small = settings.model_copy(update={"cron_claim_batch": 7, "max_running_turns_per_user": 0})
    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def beat():
        try:
            start.wait(10)
            tick(small, lambda *_: None)
        except BaseException as exc:  # the assertion below shows it
            errors.append(exc)

    with clock.travel(timedelta(hours=1, minutes=1)):
        threads = [threading.Thread(target=beat) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    assert errors == []
    with db.read() as s:
        per_job = dict(s.exec(select(CronRun.job_id, func.count()).where(CronRun.job_id.in_(ids))
                              .group_by(CronRun.job_id)).all())
        turn_count = s.exec(select(func.count()).select_from(Turn)
                            .where(Turn.session_id.in_([j.session_id for j in jobs]))).one()
    assert len(per_job) == 100 and set(per_job.values()) == {1}
    assert turn_count == 100


def test_a_daily_job_across_three_days_down_runs_once_and_says_it_ran_late(db, settings):
    user = make_user(db)
    job = telegram_job(db, user.id, "0 7 * * *", timezone="UTC")
    sent, send = recorder()
    with clock.travel(job.next_run_at - utcnow() + timedelta(days=3, hours=1)):
        tick(settings, send)
        tick(settings, send)
        [run] = runs_of(db, job.id)
        assert run.late_by_seconds >= 3 * 86400
        assert cron_jobs.get(db, user.id, job.id).next_run_at > utcnow()
        finish(db, run.turn_id, turns.TurnStatus.completed, output="Good morning.")
        tick(settings, send)
    [item] = outbox_of(db, user.id)
    assert item.target == job.deliver and item.status == "pending"
    assert "ran late by 3 days" in item.text and item.text.endswith("Good morning.")
    assert runs_of(db, job.id)[0].status == "completed"


def test_a_one_time_job_missed_past_the_grace_is_missed_and_says_so(db, settings):
    user = make_user(db)
    job = telegram_job(db, user.id, "in 5 minutes")
    with clock.travel(timedelta(minutes=5) + timedelta(seconds=settings.cron_grace_seconds + 60)):
        tick(settings, lambda *_: None)
    [run] = runs_of(db, job.id)
    assert (run.status, run.turn_id) == ("missed", None)
    assert cron_jobs.get(db, user.id, job.id).status == "done"
    [item] = outbox_of(db, user.id)
    assert "missed: it was due at" in item.text


def test_a_run_whose_model_failed_delivers_failed_why_and_its_status_is_failed(db, settings):
    """Reproduction: the turn failed with model_unavailable; the run must not say completed or stay silent."""
    user = make_user(db)
    job = telegram_job(db, user.id, "every 1h")
    with clock.travel(timedelta(hours=1, seconds=5)):
        tick(settings, lambda *_: None)
        [run] = runs_of(db, job.id)
        finish(db, run.turn_id, turns.TurnStatus.failed, error_code="model_unavailable",
               error_message="The model provider is unavailable.")
        tick(settings, lambda *_: None)
        tick(settings, lambda *_: None)
    [run] = runs_of(db, job.id)
    assert (run.status, run.error) == ("failed", "The model provider is unavailable.")
    assert cron_jobs.get(db, user.id, job.id).last_status == "failed"
    [item] = outbox_of(db, user.id)
    assert item.text == "[news] failed: The model provider is unavailable."


def test_a_run_past_its_timeout_fails_and_its_turn_is_cancelled(db, settings):
    user = make_user(db)
    job = telegram_job(db, user.id, "every 1h", timeout_seconds=60)
    with clock.travel(timedelta(hours=1, seconds=5)):
        tick(settings, lambda *_: None)
    with clock.travel(timedelta(hours=1, minutes=2)):
        tick(settings, lambda *_: None)
    [run] = runs_of(db, job.id)
    assert (run.status, run.error) == ("failed", "timed out after 60 seconds")
    assert turns.get_turn(db, user.id, run.turn_id).status == "cancelled"
    assert "failed: timed out after 60 seconds" in outbox_of(db, user.id)[0].text


def test_a_paused_job_does_not_run_and_resuming_schedules_it_from_now(db, settings):
    user = make_user(db)
    job = cron_jobs.create(db, user.id, JobCreate(schedule="every 1h", prompt="p"))
    cron_jobs.set_status(db, user.id, job.id, "paused")
    with clock.travel(timedelta(hours=5)):
        tick(settings, lambda *_: None)
        assert runs_of(db, job.id) == []
        resumed = cron_jobs.set_status(db, user.id, job.id, "active")
        assert resumed.next_run_at > utcnow() + timedelta(minutes=59)


def test_run_now_starts_a_run_without_moving_the_schedule(db, settings):
    user = make_user(db)
    job = cron_jobs.create(db, user.id, JobCreate(schedule="every 1h", prompt="p"))
    claimed = cron_runs.run_now(db, user.id, job.id, utcnow(), max_running=0)
    assert [r.job_id for r in claimed.started] == [job.id] and len(claimed.send) == 1
    assert cron_jobs.get(db, user.id, job.id).next_run_at == job.next_run_at


def test_a_job_delivers_only_to_its_own_users_chats(db, settings):
    import pytest

    from shared.errors import InvalidInput

    owner, stranger = make_user(db), make_user(db)
    theirs = telegram_job(db, owner.id, "every 1h")
    with pytest.raises(InvalidInput):
        cron_jobs.create(db, stranger.id, JobCreate(schedule="every 1h", prompt="spam", deliver=theirs.deliver))
    with pytest.raises(InvalidInput):
        cron_jobs.create(db, stranger.id, JobCreate(schedule="every 1h", prompt="spam", deliver="webhook:nope"))


def test_a_job_whose_zone_became_unreadable_is_paused_and_says_why_while_the_others_run(db, settings):
    """Reproduction: one job's stored zone no longer known made every tick fail, so no job ran at all."""
    from sqlalchemy import update as sql_update

    user = make_user(db)
    broken = telegram_job(db, user.id, "every 1h", timezone="Europe/Paris")
    fine = cron_jobs.create(db, user.id, JobCreate(schedule="every 1h", prompt="still runs"))
    with db.write() as s:
        s.execute(sql_update(CronJob).where(CronJob.id == broken.id).values(timezone="Atlantis/Capital"))
    with clock.travel(timedelta(hours=1, seconds=5)):
        tick(settings, lambda *_: None)
    assert [r.status for r in runs_of(db, fine.id)] == ["running"]
    [run] = runs_of(db, broken.id)
    assert run.status == "failed" and "Atlantis/Capital" in run.error
    assert cron_jobs.get(db, user.id, broken.id).status == "paused"
    assert "failed: the job was paused" in outbox_of(db, user.id)[0].text


def test_a_one_time_job_in_the_past_is_refused(db):
    import pytest

    from shared.errors import InvalidInput

    with pytest.raises(InvalidInput):
        cron_jobs.create(db, make_user(db).id, JobCreate(schedule="2020-01-01T07:00", prompt="too late"))


def test_a_job_still_running_skips_its_next_slot_instead_of_piling_runs_up(db, settings):
    """Reproduction: an 'every 1m' job whose runs take longer than a minute queued a new turn every minute."""
    user = make_user(db)
    job = cron_jobs.create(db, user.id, JobCreate(schedule="every 1h", prompt="slow"))
    with clock.travel(timedelta(hours=1, seconds=5)):
        tick(settings, lambda *_: None)
    with clock.travel(timedelta(hours=2, seconds=5)):
        tick(settings, lambda *_: None)
        assert len(runs_of(db, job.id)) == 1
        assert cron_jobs.get(db, user.id, job.id).next_run_at > utcnow()


def test_a_tick_goes_past_a_full_batch_of_busy_jobs_to_the_due_ones_behind_it(db, settings):
    """Reproduction: a batch whose jobs were all still busy started nothing, and the tick stopped there, leaving
    the due jobs behind it for later ticks, one batch each."""
    user = make_user(db)
    small = settings.model_copy(update={"cron_claim_batch": 3, "max_running_turns_per_user": 0})
    busy = [cron_jobs.create(db, user.id, JobCreate(schedule="every 1h", prompt=f"busy {i}")) for i in range(3)]
    with clock.travel(timedelta(hours=1, seconds=5)):
        tick(small, lambda *_: None)  # their first runs start, and keep running
        waiting = cron_jobs.create(db, user.id, JobCreate(schedule="every 1h", prompt="behind them"))
    with clock.travel(timedelta(hours=2, seconds=10)):
        tick(small, lambda *_: None)
    assert [len(runs_of(db, j.id)) for j in busy] == [1, 1, 1]
    assert len(runs_of(db, waiting.id)) == 1


def test_one_tick_settles_more_ended_runs_than_a_batch(db, settings):
    """Runs that ended together are all settled (and their deliveries recorded) by the next tick, a batch at a time."""
    user = make_user(db)
    small = settings.model_copy(update={"cron_claim_batch": 2, "max_running_turns_per_user": 0})
    jobs = [telegram_job(db, user.id, "every 1h", prompt=f"p{i}") for i in range(5)]
    with clock.travel(timedelta(hours=1, seconds=5)):
        tick(small, lambda *_: None)
        for job in jobs:
            finish(db, runs_of(db, job.id)[0].turn_id, turns.TurnStatus.completed, output="done")
        tick(small, lambda *_: None)
    assert [runs_of(db, j.id)[0].status for j in jobs] == ["completed"] * 5
    assert len(outbox_of(db, user.id)) == 5
