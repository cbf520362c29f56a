"""`hstack cron` against a live api, with a user's key."""

from __future__ import annotations

from shared.stores import cron_jobs
from tests.support.factories import make_user


def test_create_list_pause_resume_run_runs_and_remove(hstack, db):
    user = make_user(db)
    code, out, _ = hstack("cron", "create", "every 2h", "Check the news", "--name", "news",
                          "--allow", "recursive delete", "--key", user.key)
    assert code == 0
    job_id = out.split()[0]
    assert cron_jobs.get(db, user.id, job_id).allow == ["recursive delete"]
    assert "active" in out and "'every 2h' -> none  news" in out

    code, out, _ = hstack("cron", "list", "--key", user.key)
    assert code == 0 and out.startswith(job_id) and out.count("\n") == 1
    assert "paused" in hstack("cron", "pause", job_id, "--key", user.key)[1]
    assert "active" in hstack("cron", "resume", job_id, "--key", user.key)[1]

    code, out, _ = hstack("cron", "run", job_id, "--key", user.key)
    assert code == 0 and out.startswith("started run ")
    code, out, _ = hstack("cron", "runs", job_id, "--key", user.key)
    assert code == 0 and "running" in out

    assert hstack("cron", "remove", job_id, "--key", user.key)[1] == f"removed {job_id}\n"
    assert hstack("cron", "list", "--key", user.key)[1] == "No scheduled jobs.\n"


def test_a_bad_schedule_is_an_error_not_a_traceback(hstack, db):
    user = make_user(db)
    code, _, err = hstack("cron", "create", "whenever", "p", "--key", user.key)
    assert code != 0 and "invalid_schedule" in err


def test_a_users_time_zone_is_where_their_jobs_are_read(hstack, db, api_url):
    import httpx

    user = make_user(db)
    code, out, _ = hstack("users", "timezone", user.name, "Asia/Tokyo")
    assert code == 0 and out == f"{user.name}: scheduled jobs read in Asia/Tokyo.\n"
    code, out, _ = hstack("cron", "create", "0 7 * * *", "Good morning", "--key", user.key)
    job = cron_jobs.get(db, user.id, out.split()[0])
    assert (job.next_run_at.hour, job.next_run_at.minute) == (22, 0)  # 07:00 in Tokyo is 22:00 UTC
    assert hstack("users", "timezone", user.name, "Mars/Olympus")[0] != 0
    assert httpx.patch(f"{api_url}/v1/users/{user.id}", json={"timezone": "UTC"},
                       headers=user.headers).status_code in (401, 403)
    assert hstack("users", "timezone", user.name, "server")[1].endswith("read in the server time zone.\n")
