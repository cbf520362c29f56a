"""The stack under Docker Compose, as README's "Run with Docker Compose" tells a person to run it: build and
start, create a user, a turn over SSE with the demo model, scale out, a worker killed mid-turn, a restart
that keeps everything; once on SQLite and once with `--profile postgres`.

`make compose-test` runs it (HSTACK_COMPOSE_TEST=1); `make test`'s passes skip it. It needs docker with the
compose v2 plugin and the images the Dockerfile and compose file name (deploy/standins/build makes them
where no registry can be reached); under CI=true a missing docker fails instead of skipping."""

from __future__ import annotations

import json
import os
import time

import pytest

from tests.support.compose import Project, copy_checkout, read_sse, require_compose
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.once, pytest.mark.timeout(1200)]

# The stack's recovery intervals, shortened in .env so a killed worker's turn is taken over in seconds.
QUICK_RECOVERY = {"TURN_LEASE_SECONDS": "5", "TURN_HEARTBEAT_SECONDS": "1", "TURN_REQUEUE_AFTER_SECONDS": "5",
                  "SWEEP_INTERVAL_SECONDS": "2"}
MODEL_KEY = "sk-only-for-the-workers-0123456789"
HELD_TURNS = 4
SANDBOX_PROBE = """
import sys
from services.worker.sandbox import Sandbox, run
from shared.config import get_settings

settings = get_settings()
mine, theirs = (settings.data_dir / "users" / user / "workspace" for user in sys.argv[1:3])
for workspace in (mine, theirs):
    workspace.mkdir(parents=True, exist_ok=True)
(theirs / "note.txt").write_text("bob-private-note")
command = f"id -u; echo sandboxed-ok; cat /proc/1/environ; cat {theirs}/note.txt; ls /data/users"
print(run(command, workspace=mine, timeout=60, sandbox=Sandbox.from_settings(settings)).output)
"""


@pytest.fixture(params=["sqlite", "postgres"])
def project(request, tmp_path):
    if os.environ.get("HSTACK_COMPOSE_TEST") != "1":
        pytest.skip("the compose stack runs under `make compose-test`")
    require_compose()
    profile = None if request.param == "sqlite" else "postgres"
    p = Project(copy_checkout(tmp_path / "hermes-stack"), profile=profile)
    extra = dict(QUICK_RECOVERY, LLM_API_KEY=MODEL_KEY)
    if profile:
        extra["POSTGRES_PASSWORD"] = "pg-" + os.urandom(12).hex()
        extra["DATABASE_URL"] = "postgresql+psycopg://hstack:${POSTGRES_PASSWORD}@postgres:5432/hstack"
    p.write_env(**extra)
    try:
        yield p
    finally:
        p.remove()


def environment_names(project: Project, service: str) -> set[str]:
    out = project.exec(service, "python", "-c", "import json, os; print(json.dumps(sorted(os.environ)))")
    return set(json.loads(out))


def check_secrets_stay_where_they_belong(project: Project) -> None:
    gateway = environment_names(project, "gateway")
    assert not gateway & {"ADMIN_API_KEY", "LLM_API_KEY", "REDIS_URL", "DATABASE_URL", "REDIS_PASSWORD"}
    assert "LLM_API_KEY" not in environment_names(project, "api")
    assert "LLM_API_KEY" not in environment_names(project, "curator")
    assert "LLM_API_KEY" in environment_names(project, "worker")
    assert "LLM_API_KEY" in environment_names(project, "reviewer")
    reach = "import socket\nfor host in ('redis', 'worker'):\n    try:\n        socket.getaddrinfo(host, 6379)\n" \
            "        print(host, 'resolves')\n    except OSError:\n        print(host, 'unknown')"
    assert project.exec("gateway", "python", "-c", reach).split() == ["redis", "unknown", "worker", "unknown"]


def check_redis_wants_its_password(project: Project) -> None:
    assert "NOAUTH" in project.exec("redis", "redis-cli", "ping", check=False)
    password = project.env["REDIS_PASSWORD"]
    refused = project.exec("redis", "redis-cli", "--no-auth-warning", "-a", password, "config", "set", "dir", "/tmp",
                           check=False)
    assert "NOPERM" in refused
    assert "NOPERM" in project.exec("redis", "redis-cli", "--no-auth-warning", "-a", password, "flushall",
                                    check=False)


def check_a_turn_streams(project: Project, key: str) -> str:
    with project.client(key) as c:
        sid = c.post("/v1/sessions", json={}).json()["id"]
        turn = c.post(f"/v1/sessions/{sid}/turns", json={"input": "hello from compose"})
        assert turn.status_code == 202, turn.text
        events = read_sse(c, f"/v1/turns/{turn.json()['id']}/events")
    kinds = [e["event"] for e in events]
    assert kinds[0] == "turn.started" and kinds[-1] == "turn.completed", kinds
    answer = "".join(e["data"].get("delta", "") for e in events if e["event"] == "message.delta")
    assert "You said: “hello from compose”" in answer
    return sid


def check_the_image_holds_the_product_and_its_bundled_skills(project: Project, key: str) -> None:
    found = project.exec("api", "python", "-c",
                         "import importlib.util as u; print([m for m in ('tests', 'bench') if u.find_spec(m)])")
    assert found.strip() == "[]"
    with project.client(key) as c:
        listed = {s["name"]: s["origin"] for s in c.get("/v1/skills").json()["data"]}
    assert listed.get("tidy-memory") == "bundled", listed
    out = project.exec("api", "env", f"HSTACK_API_KEY={key}", "HSTACK_URL=http://127.0.0.1:8642",
                       "hstack", "skills", "list")
    assert "tidy-memory" in out


def check_the_sandbox_runs_in_the_worker(project: Project, alice: str, bob: str) -> None:
    out = project.exec("worker", "python", "-", alice, bob, stdin=SANDBOX_PROBE)
    assert "sandboxed-ok" in out and "10001" in out.split(), out
    for secret in (project.env["REDIS_PASSWORD"], MODEL_KEY, "bob-private-note"):
        assert secret not in out, out
    assert f"/data/users/{bob}/workspace/note.txt: No such file" in out and "'/data/users': No such file" in out


def post_turns(project: Project, key: str, count: int) -> list[tuple[str, str]]:
    """(session id, turn id) of `count` turns, one per session."""
    posted = []
    with project.client(key) as c:
        for i in range(count):
            sid = c.post("/v1/sessions", json={}).json()["id"]
            turn = c.post(f"/v1/sessions/{sid}/turns", json={"input": f"held turn {i}"})
            assert turn.status_code == 202, turn.text
            posted.append((sid, turn.json()["id"]))
    return posted


def turn_statuses(project: Project, key: str, turns: list[tuple[str, str]]) -> list[str]:
    with project.client(key) as c:
        return [c.get(f"/v1/turns/{tid}").json()["status"] for _, tid in turns]


def check_a_killed_worker_loses_no_turn(project: Project, key: str) -> None:
    """The demo model is frozen so the turns are held inside the workers' model calls when they die."""
    project.compose("pause", "demo-model")
    turns = post_turns(project, key, HELD_TURNS)
    wait_until(lambda: turn_statuses(project, key, turns) == ["running"] * HELD_TURNS, timeout=60, interval=0.5,
               what="every held turn to be running in a worker")
    project.compose("kill", "worker")
    project.compose("unpause", "demo-model")
    project.compose("up", "-d", "--scale", "worker=2", "--scale", "reviewer=2")
    wait_until(lambda: turn_statuses(project, key, turns) == ["completed"] * HELD_TURNS, timeout=180,
               interval=0.5, what="the held turns to complete after the workers restarted")
    with project.client(key) as c:
        for i, (sid, _) in enumerate(turns):
            messages = c.get(f"/v1/sessions/{sid}/messages").json()["data"]
            assert [m["role"] for m in messages] == ["user", "assistant"], messages
            assert messages[0]["content"] == f"held turn {i}"


def remember_things(project: Project, key: str) -> None:
    with project.client(key) as c:
        wrote = c.post("/v1/memory", json={"target": "memory", "action": "add", "content": "Compose keeps this"})
        assert wrote.status_code == 200, wrote.text
        skill = "---\nname: brew-tea\ndescription: Brew a good cup of tea.\n---\n1. Boil water.\n"
        installed = c.post("/v1/skills", json={"name": "brew-tea", "content": skill, "files": {}})
        assert installed.status_code == 201, installed.text


def check_everything_survived(project: Project, key: str, sid: str) -> None:
    with project.client(key) as c:
        messages = c.get(f"/v1/sessions/{sid}/messages").json()["data"]
        assert [m["role"] for m in messages] == ["user", "assistant"], messages
        assert "Compose keeps this" in c.get("/v1/memory").json()["memory"]["entries"]
        assert c.get("/v1/skills/brew-tea").json()["origin"] == "user"


def test_the_stack_runs_under_compose_as_the_readme_says(project):
    with project.logs_on_failure():
        started = time.monotonic()
        ready_after = project.up("--build")
        print(f"\n[{project.profile or 'sqlite'}] up --build to ready: {ready_after:.1f}s")
        (alice_id, alice), (bob_id, _) = project.create_user("alice"), project.create_user("bob")

        check_secrets_stay_where_they_belong(project)
        check_redis_wants_its_password(project)
        sid = check_a_turn_streams(project, alice)
        check_the_image_holds_the_product_and_its_bundled_skills(project, alice)
        check_the_sandbox_runs_in_the_worker(project, alice_id, bob_id)

        project.compose("up", "-d", "--scale", "worker=2", "--scale", "reviewer=2")
        project.wait_healthy("worker", 2)
        project.wait_healthy("reviewer", 2)
        check_a_killed_worker_loses_no_turn(project, alice)

        remember_things(project, alice)
        project.compose("down")
        restarted_after = project.up()
        print(f"[{project.profile or 'sqlite'}] down, then up to ready: {restarted_after:.1f}s")
        check_everything_survived(project, alice, sid)
        print(f"[{project.profile or 'sqlite'}] scenario wall time: {time.monotonic() - started:.1f}s")
