"""/v1/evolution/runs: start (persisted, then only the id enqueued on the reviewer's queue), list, read, cancel,
restore; budgets per user per day; hostile inputs and another user's ids."""

from __future__ import annotations

import pytest

from shared.queue.names import EVOLVE_SKILL, QUEUE_REVIEW, ROUTES
from shared.stores import evolution_runs
from shared.stores.skill_writes import SkillEditor
from shared.stores.skills import SkillStore
from tests.services.api.helpers import error_of
from tests.support.factories import SKILL, make_user


@pytest.fixture
def skill(db, settings, user) -> str:
    SkillEditor(SkillStore.for_user(db, settings, user.id), "review").create("tidy-notes", SKILL.format("tidy-notes"))
    return "tidy-notes"


def start(client, user, **body):
    return client.post("/v1/evolution/runs", json=body, headers=user.headers)


def test_starting_a_run_commits_it_then_enqueues_only_its_id_on_the_review_queue(client, user, skill, enqueued):
    answer = start(client, user, skill=skill, budget=20)
    assert answer.status_code == 202, answer.text
    run = answer.json()
    assert run["status"] == "queued" and run["skill"] == skill and run["budget_metric_calls"] == 20
    assert enqueued.calls == [(EVOLVE_SKILL, {"run_id": run["id"]}, None)]
    assert ROUTES[EVOLVE_SKILL]["queue"] == QUEUE_REVIEW
    assert client.get(f"/v1/evolution/runs/{run['id']}", headers=user.headers).json()["id"] == run["id"]
    assert [r["id"] for r in client.get("/v1/evolution/runs", headers=user.headers).json()["data"]] == [run["id"]]


def test_a_budget_above_the_setting_is_cut_to_it(client, user, skill, settings):
    run = start(client, user, skill=skill, budget=100_000).json()
    assert run["budget_metric_calls"] == settings.evolve_metric_calls


def test_one_run_per_skill_at_a_time_and_a_daily_limit(client, user, skill, db, settings):
    first = start(client, user, skill=skill).json()
    assert error_of(start(client, user, skill=skill))["code"] == "evolution_run_active"
    client.post(f"/v1/evolution/runs/{first['id']}/cancel", headers=user.headers)
    for _ in range(settings.evolve_daily_runs - 1):
        run = start(client, user, skill=skill).json()
        client.post(f"/v1/evolution/runs/{run['id']}/cancel", headers=user.headers)
    refused = start(client, user, skill=skill)
    assert refused.status_code == 429 and error_of(refused)["code"] == "evolution_budget_exhausted"


def test_cancelling_a_queued_run_ends_it_and_a_second_cancel_is_409(client, user, skill):
    run = start(client, user, skill=skill).json()
    cancelled = client.post(f"/v1/evolution/runs/{run['id']}/cancel", headers=user.headers)
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    again = client.post(f"/v1/evolution/runs/{run['id']}/cancel", headers=user.headers)
    assert again.status_code == 409 and error_of(again)["code"] == "evolution_run_finished"


def test_another_users_run_is_404_everywhere(client, user, skill, db):
    run = start(client, user, skill=skill).json()
    stranger = make_user(db)
    for method, path in (("get", ""), ("post", "/cancel"), ("post", "/restore")):
        answer = getattr(client, method)(f"/v1/evolution/runs/{run['id']}{path}", headers=stranger.headers)
        assert answer.status_code == 404 and error_of(answer)["code"] == "evolution_run_not_found"
    assert client.get("/v1/evolution/runs", headers=stranger.headers).json()["data"] == []
    assert start(client, stranger, skill=skill).status_code == 404  # their skill is not the stranger's


def test_restoring_a_run_that_proposed_nothing_is_409(client, user, skill):
    run = start(client, user, skill=skill).json()
    answer = client.post(f"/v1/evolution/runs/{run['id']}/restore", headers=user.headers)
    assert answer.status_code == 409 and error_of(answer)["code"] == "nothing_to_restore"


@pytest.mark.parametrize("body", [{}, {"skill": 5}, {"skill": ""}, {"skill": "x" * 65}, {"skill": "a", "budget": 0},
                                  {"skill": "a", "budget": "many"}, {"skill": "a", "budget": 10**20},
                                  {"skill": "a", "extra": 1}, {"skill": "../etc"}])
def test_bad_bodies_are_refused_clearly(client, user, body, enqueued):
    answer = client.post("/v1/evolution/runs", json=body, headers=user.headers)
    assert answer.status_code in (404, 422), answer.text
    assert enqueued.calls == []


def test_a_bundled_or_missing_skill_cannot_evolve(client, user, settings):
    bundled = sorted(p.name for p in settings.bundled_skills_dir.iterdir() if (p / "SKILL.md").is_file())
    if bundled:
        answer = start(client, user, skill=bundled[0])
        assert answer.status_code == 422 and error_of(answer)["code"] == "skill_read_only"
    assert start(client, user, skill="no-such-skill").status_code == 404


def test_runs_need_a_key(client):
    assert client.get("/v1/evolution/runs").status_code == 401


def test_a_stale_running_run_is_failed_not_rerun_when_its_task_comes_back(db, settings, user, skill):
    from datetime import timedelta

    from shared.clock import utcnow

    run = evolution_runs.start(db, settings, user.id, skill)
    assert evolution_runs.claim(db, run.id, "w1", utcnow()) is not None
    assert evolution_runs.claim(db, run.id, "w2", utcnow()) is None  # a duplicate delivery while alive
    assert evolution_runs.get(db, user.id, run.id).status == "running"
    assert evolution_runs.claim(db, run.id, "w2", utcnow() + timedelta(minutes=10)) is None  # worker died (kill -9)
    found = evolution_runs.get(db, user.id, run.id)
    assert found.status == "failed" and "stopped mid-way" in found.error and found.staged_id is None
