"""/cron: a user's scheduled jobs with next run, last status and their runs' output; create, pause, resume,
run now and remove from the page; another user's job is a 404."""

from __future__ import annotations

from datetime import timedelta

import pytest

from services.curator.cron import tick
from shared import clock
from shared.models.cron import JobCreate
from shared.stores import cron_jobs, cron_runs, turns
from tests.services.api.console.conftest import Browser
from tests.support.factories import make_user

pytestmark = pytest.mark.usefixtures("real_time")


def test_the_page_shows_next_run_last_status_and_output_and_its_buttons_act(signed_in: Browser, db, settings, user):
    made = signed_in.post_form("/cron", "/cron/jobs", {"schedule": "every 1h", "prompt": "Check <b>prices</b>",
                                                       "name": "prices"})
    assert made.status_code == 303
    [job] = cron_jobs.list_jobs(db, user.id)
    with clock.travel(timedelta(hours=1, seconds=5)):
        tick(settings, lambda *_: None)
        [run] = cron_runs.list_runs(db, user.id, job.id)
        assert turns.claim_next(db, job.session_id, "w-page", 60) is not None
        turns.finish_turn(db, run.turn_id, "w-page", turns.TurnStatus.failed, error_code="model_unavailable",
                          error_message="The model provider is unavailable.")
        tick(settings, lambda *_: None)
    page = signed_in.get("/cron").text
    assert "<strong>prices</strong>" in page and "Check &lt;b&gt;prices&lt;/b&gt;" in page
    assert "last status failed" in page and "The model provider is unavailable." in page
    assert f'action="/cron/jobs/{job.id}/pause"' in page

    assert signed_in.post_form("/cron", f"/cron/jobs/{job.id}/pause", {}).status_code == 303
    assert cron_jobs.get(db, user.id, job.id).status == "paused"
    assert f'action="/cron/jobs/{job.id}/resume"' in signed_in.get("/cron").text
    assert signed_in.post_form("/cron", f"/cron/jobs/{job.id}/run", {}).status_code == 303
    assert len(cron_runs.list_runs(db, user.id, job.id)) == 2
    assert signed_in.post_form("/cron", f"/cron/jobs/{job.id}/remove", {}).status_code == 303
    assert cron_jobs.list_jobs(db, user.id) == []


def test_a_bad_schedule_or_destination_is_said_on_the_page(signed_in: Browser, db, user):
    """Reproduction: a form with deliver=mail:x was a 500 page (the body model's error was not caught)."""
    answer = signed_in.post_form("/cron", "/cron/jobs", {"schedule": "whenever", "prompt": "p"})
    assert answer.status_code == 303
    assert "schedule" in signed_in.get("/cron").text.lower()
    bad = signed_in.post_form("/cron", "/cron/jobs", {"schedule": "every 1h", "prompt": "p", "deliver": "mail:x"})
    assert bad.status_code == 303 and "Not accepted: deliver" in signed_in.get("/cron").text
    assert cron_jobs.list_jobs(db, user.id) == []


def test_another_users_job_is_not_shown_and_its_buttons_are_404(browser: Browser, db, user):
    job = cron_jobs.create(db, user.id, JobCreate(schedule="every 1h", prompt="mine", name="secret-job"))
    browser.sign_in(make_user(db).key)
    assert "secret-job" not in browser.get("/cron").text
    for action in ("pause", "run", "remove"):
        assert browser.post_form("/cron", f"/cron/jobs/{job.id}/{action}", {}).status_code == 404
    assert cron_jobs.get(db, user.id, job.id).status == "active"
