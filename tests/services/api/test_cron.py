"""/v1/cron/jobs: a user's scheduled jobs over HTTP, their runs, and nobody else's (404)."""

from __future__ import annotations

from shared.queue.names import RUN_TURN
from tests.services.api.helpers import error_of
from tests.support.factories import make_user


def test_create_list_pause_resume_run_and_remove_a_job(client, db, enqueued):
    user = make_user(db)
    made = client.post("/v1/cron/jobs", headers=user.headers,
                       json={"schedule": "0 7 * * 1-5", "prompt": "The morning news", "timezone": "Europe/Paris"})
    assert made.status_code == 201, made.text
    job = made.json()
    assert (job["status"], job["deliver"], job["next_run_at"] is not None) == ("active", "none", True)
    assert [j["id"] for j in client.get("/v1/cron/jobs", headers=user.headers).json()] == [job["id"]]

    paused = client.patch(f"/v1/cron/jobs/{job['id']}", headers=user.headers, json={"status": "paused"}).json()
    assert paused["status"] == "paused"
    assert client.patch(f"/v1/cron/jobs/{job['id']}", headers=user.headers,
                        json={"status": "active"}).json()["status"] == "active"

    run = client.post(f"/v1/cron/jobs/{job['id']}/run", headers=user.headers)
    assert run.status_code == 202 and run.json()["status"] == "running"
    assert [p["turn_id"] for n, p, _ in enqueued.calls if n == RUN_TURN] == [run.json()["turn_id"]]
    runs = client.get(f"/v1/cron/jobs/{job['id']}/runs", headers=user.headers).json()
    assert [(r["id"], r["status"]) for r in runs] == [(run.json()["id"], "running")]

    assert client.delete(f"/v1/cron/jobs/{job['id']}", headers=user.headers).status_code == 204
    assert client.get(f"/v1/cron/jobs/{job['id']}", headers=user.headers).status_code == 404


def test_another_users_job_is_404_everywhere(client, db):
    owner, other = make_user(db), make_user(db)
    job = client.post("/v1/cron/jobs", headers=owner.headers, json={"schedule": "every 2h", "prompt": "p"}).json()
    path = f"/v1/cron/jobs/{job['id']}"
    answers = [client.get(path, headers=other.headers), client.patch(path, headers=other.headers, json={"name": "x"}),
               client.delete(path, headers=other.headers), client.post(path + "/run", headers=other.headers),
               client.get(path + "/runs", headers=other.headers)]
    assert [a.status_code for a in answers] == [404] * 5
    assert client.get("/v1/cron/jobs", headers=other.headers).json() == []
    assert client.get(path, headers=owner.headers).json()["name"] == "p"


def test_bad_schedules_time_zones_fields_and_destinations_are_refused(client, db):
    user = make_user(db)
    cases = [({"schedule": "every day at 7", "prompt": "p"}, "invalid_schedule"),
             ({"schedule": "every 2h", "prompt": "p", "timezone": "Mars/Base"}, "invalid_timezone"),
             ({"schedule": "every 2h", "prompt": "p", "deliver": "telegram:12345"}, "invalid_deliver"),
             ({"schedule": "every 2h", "prompt": "p", "owner": "x"}, None)]
    for body, code in cases:
        answer = client.post("/v1/cron/jobs", headers=user.headers, json=body)
        assert answer.status_code == 422, body
        if code:
            assert error_of(answer)["code"] == code


def test_a_field_that_cannot_be_empty_set_to_null_is_refused_and_the_others_clear(client, db):
    """Reproduction (the fuzz test): PATCH {"allow": null} or {"prompt": null} answered 500."""
    user = make_user(db)
    job = client.post("/v1/cron/jobs", headers=user.headers,
                      json={"schedule": "every 2h", "prompt": "p", "timezone": "UTC"}).json()
    for field in ("allow", "prompt", "name", "schedule", "deliver", "status"):
        answer = client.patch(f"/v1/cron/jobs/{job['id']}", headers=user.headers, json={field: None})
        assert answer.status_code == 422, field
    cleared = client.patch(f"/v1/cron/jobs/{job['id']}", headers=user.headers, json={"timezone": None})
    assert cleared.status_code == 200 and cleared.json()["timezone"] is None
