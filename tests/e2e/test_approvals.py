"""The approval gate with the real processes: park, decide over the api, resume; expiry with no worker alive."""

from __future__ import annotations

import json
import os
import shutil
import signal

import pytest

from tests.fakes.model import text, tool_call
from tests.services.worker.gated import GUARDIAN_MARKER
from tests.support.processes import Proc, Stack, wait_for_turn, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.once]  # process behaviour: see tests/conftest.py

DANGEROUS = "rm -r build-tmp"
CALLS_FILE = "gated-calls.log"  # written by tests/e2e/gated_worker.py, which only worker processes import


@pytest.fixture(scope="module")
def stack(fake_model):
    overrides = {"RATE_LIMIT_PER_MINUTE": "0", "TURN_RATE_LIMIT_PER_MINUTE": "0", "SWEEP_INTERVAL_SECONDS": "0.5"}
    with Stack(model_url=fake_model.base_url, env_overrides=overrides) as s:
        s.start_api()
        yield s


def start_worker(stack: Stack, mode: str, concurrency: int = 4, **env: str) -> Proc:
    name = f"worker-{mode}"
    proc = stack.spawn(name, ["-m", "celery", "-A", "tests.e2e.gated_worker", "worker", "-Q", "turns", "--pool",
                              "threads", "--concurrency", str(concurrency), "-n", f"{name}@%h", "--without-gossip",
                              "--without-mingle", "--loglevel", "INFO"],
                       HSTACK_SERVICE=name, APPROVAL_MODE=mode, **env)
    wait_until(lambda: stack._announced(proc, name), timeout=30, what=f"{name} to announce itself")
    return proc


def ran(stack: Stack) -> list[str]:
    path = stack.data_dir / CALLS_FILE
    return path.read_text().splitlines() if path.exists() else []


def start_turn(c, text_in: str) -> str:
    session = c.post("/v1/sessions", json={}).raise_for_status().json()
    return c.post(f"/v1/sessions/{session['id']}/turns", json={"input": text_in}).raise_for_status().json()["id"]


def pending(c) -> list[dict]:
    return c.get("/v1/approvals").raise_for_status().json()["data"]


def wait_parked(c, turn_id: str) -> dict:
    wait_for_turn(c, turn_id, statuses=("awaiting_approval",))
    return next(a for a in pending(c) if a["turn_id"] == turn_id)


def test_a_hard_line_command_is_refused_in_every_mode_and_never_runs(stack, model):
    key = stack.create_user("e2e-hardline")
    for mode in ("manual", "smart", "off"):
        worker = start_worker(stack, mode)
        model.on(GUARDIAN_MARKER, text("low"))
        model.on(f"wipe {mode}", tool_call([("shell", {"command": "sudo rm -rf /"})]), text(f"refused in {mode}"))
        with stack.client(key) as c:
            turn = wait_for_turn(c, start_turn(c, f"wipe {mode}"))
            assert turn["output"] == f"refused in {mode}"
        worker.stop()
    assert ran(stack) == []


def test_an_approved_command_runs_after_a_worker_restart_and_the_turn_completes(stack, model):
    worker = start_worker(stack, "manual")
    key = stack.create_user("e2e-approve")
    model.on("clean the build", tool_call([("shell", {"command": DANGEROUS})]), text("build-tmp removed"))
    with stack.client(key) as c:
        turn_id = start_turn(c, "clean the build")
        question = wait_parked(c, turn_id)
        assert question["command"] == DANGEROUS and ran(stack) == []

        worker.signal(signal.SIGTERM)  # a restart while parked: nothing is held, nothing is lost
        assert worker.stop() is not None
        worker = start_worker(stack, "manual")
        decided = c.post(f"/v1/approvals/{question['id']}", json={"decision": "approve", "scope": "once"})
        assert decided.status_code == 200

        done = wait_for_turn(c, turn_id)
        assert (done["status"], done["output"]) == ("completed", "build-tmp removed")
        assert ran(stack).count(DANGEROUS) == 1
        again = c.post(f"/v1/approvals/{question['id']}", json={"decision": "deny"})
        assert again.status_code == 409
        events = c.get(f"/v1/turns/{turn_id}/events").text
        assert "event: approval.requested" in events and "event: turn.completed" in events
    worker.stop()


def test_a_denied_command_reaches_the_model_as_a_refusal(stack, model):
    worker = start_worker(stack, "manual")
    key = stack.create_user("e2e-deny")
    model.on("drop the tmp", tool_call([("shell", {"command": "rm -r deny-tmp"})]))
    with stack.client(key) as c:
        turn_id = start_turn(c, "drop the tmp")
        question = wait_parked(c, turn_id)
        model.on("drop the tmp", text("OK, I kept deny-tmp."))
        assert c.post(f"/v1/approvals/{question['id']}", json={"decision": "deny"}).status_code == 200
        assert wait_for_turn(c, turn_id)["output"] == "OK, I kept deny-tmp."
    refusal = model.requests[-1].body["messages"][-1]
    assert refusal["role"] == "tool" and "the user denied this command" in refusal["content"]
    assert "rm -r deny-tmp" not in ran(stack)
    worker.stop()


def test_an_unanswered_question_expires_with_no_worker_alive_and_the_model_hears_it(stack, model):
    worker = start_worker(stack, "manual", APPROVAL_TIMEOUT_SECONDS="1")
    key = stack.create_user("e2e-expire")
    model.on("expire me", tool_call([("shell", {"command": "rm -r slow-tmp"})]))
    with stack.client(key) as c:
        turn_id = start_turn(c, "expire me")
        question = wait_parked(c, turn_id)
        worker.stop()
        curator = stack.start_curator()
        wait_until(lambda: c.get("/v1/approvals?status=all").json()["data"][0]["status"] == "expired" or None,
                   timeout=30, what="the curator to expire the approval")
        curator.stop()
        model.on("expire me", text("Nobody approved it, so I stopped."))
        worker = start_worker(stack, "manual")
        assert wait_for_turn(c, turn_id)["output"] == "Nobody approved it, so I stopped."
        assert c.post(f"/v1/approvals/{question['id']}", json={"decision": "approve"}).json()["error"]["code"] \
            == "approval_expired"
    assert "nobody approved this command" in model.requests[-1].body["messages"][-1]["content"]
    assert "rm -r slow-tmp" not in ran(stack)
    worker.stop()


def test_the_guardians_three_verdicts_run_refuse_and_ask(stack, model):
    worker = start_worker(stack, "smart")
    key = stack.create_user("e2e-guardian")
    with stack.client(key) as c:
        outcomes = {}
        for verdict in ("low", "high", "uncertain"):
            command = f"git reset --hard # {verdict}"
            model.on(f"reset {verdict}", tool_call([("shell", {"command": command})]), text(f"after {verdict}"))
            model.on(GUARDIAN_MARKER, text(verdict))
            turn_id = start_turn(c, f"reset {verdict}")
            turn = wait_for_turn(c, turn_id, statuses=("completed", "awaiting_approval"))
            outcomes[verdict] = (turn["status"], command in ran(stack))
    assert outcomes == {"low": ("completed", True), "high": ("completed", False),
                        "uncertain": ("awaiting_approval", False)}
    worker.stop()


def test_fifty_parked_turns_hold_no_worker(stack, model):
    worker = start_worker(stack, "manual", concurrency=4)
    key = stack.create_user("e2e-fifty")
    with stack.client(key) as c:
        for n in range(50):
            model.on(f"park number {n}.", tool_call([("shell", {"command": f"rm -r parked-{n}"})]))
        parked = [start_turn(c, f"park number {n}.") for n in range(50)]
        wait_until(lambda: len(pending(c)) == 50 or None, timeout=120, what="fifty turns to park")

        model.on("unrelated question", text("unrelated answer"))
        other = wait_for_turn(c, start_turn(c, "unrelated question"), timeout=60)

        assert other["output"] == "unrelated answer"
        assert {c.get(f"/v1/turns/{t}").json()["status"] for t in parked} == {"awaiting_approval"}
    worker.stop()


@pytest.mark.skipif(not shutil.which("bwrap") and not os.environ.get("CI"), reason="apt-get install bubblewrap")
def test_the_real_terminal_parks_a_dangerous_command_and_runs_it_in_the_sandbox_once_approved(stack, model):
    """The issue's must-show with the real `terminal` tool (not the recording stand-in): in manual mode
    `rm -r build-tmp` on a folder the test made parks the turn; approved over the api, it runs in the user's
    sandbox, the folder is gone, and the turn completes with the command's output."""
    stack.data_dir.chmod(0o711)  # the sandbox runs a root worker's commands as an unprivileged uid
    worker = stack.start_worker(name="worker-terminal", APPROVAL_MODE="manual")
    key = stack.create_user("e2e-terminal")
    with stack.client(key) as c:
        me = c.get("/v1/keys").raise_for_status().json()["data"][0]["user_id"]
        build = stack.data_dir / "users" / me / "workspace" / "build-tmp"
        build.mkdir(parents=True)
        (build / "x.o").write_text("object")
        model.on("tidy the build", tool_call([("terminal", {"command": "rm -r build-tmp && echo removed"})]),
                 text("the build folder is gone"))
        turn_id = start_turn(c, "tidy the build")
        question = wait_parked(c, turn_id)
        assert question["command"] == "rm -r build-tmp && echo removed" and build.exists()

        c.post(f"/v1/approvals/{question['id']}", json={"decision": "approve", "scope": "once"}).raise_for_status()
        turn = wait_for_turn(c, turn_id)
        assert turn["status"] == "completed" and turn["output"] == "the build folder is gone"
        assert not build.exists()
        messages = c.get(f"/v1/sessions/{turn['session_id']}/messages").raise_for_status().json()["data"]
        [result] = [m["content"] for m in messages if m["role"] == "tool"]
        assert json.loads(result) == {"output": "removed\n", "exit_code": 0}
    worker.stop()


def test_a_script_written_with_write_file_parks_when_the_real_terminal_runs_it(stack, model):
    """Reproduction: a script written with write_file and run with `bash s.sh` ran unasked in manual mode (the
    gate judged the command line only). Now its content parks the turn; rewritten while the question waits,
    the approval does not cover the new content: the turn parks again and only the second approval runs it."""
    stack.data_dir.chmod(0o711)  # the sandbox runs a root worker's commands as an unprivileged uid
    worker = stack.start_worker(name="worker-script", APPROVAL_MODE="manual")
    key = stack.create_user("e2e-script")
    with stack.client(key) as c:
        me = c.get("/v1/keys").raise_for_status().json()["data"][0]["user_id"]
        workspace = stack.data_dir / "users" / me / "workspace"
        for name in ("victim", "other"):
            (workspace / name).mkdir(parents=True)
        model.on("run my script", tool_call([("write_file", {"path": "s.sh", "content": "rm -rf victim\n"})]),
                 tool_call([("terminal", {"command": "bash s.sh && echo ran"})]), text("the script ran"))
        turn_id = start_turn(c, "run my script")
        first = wait_parked(c, turn_id)
        assert (first["command"], first["reason"]) == ("bash s.sh && echo ran", "recursive delete")
        assert (workspace / "victim").exists()

        (workspace / "s.sh").write_text("rm -rf other\n")  # changed while the question waited
        c.post(f"/v1/approvals/{first['id']}", json={"decision": "approve", "scope": "once"}).raise_for_status()
        second = wait_until(lambda: next((q for q in pending(c) if q["id"] != first["id"]), None),
                            what="the changed script to be asked about again")
        assert second["reason"].startswith("changed since it was approved")
        assert (workspace / "other").exists() and (workspace / "victim").exists()

        c.post(f"/v1/approvals/{second['id']}", json={"decision": "approve", "scope": "once"}).raise_for_status()
        assert wait_for_turn(c, turn_id)["output"] == "the script ran"
        assert not (workspace / "other").exists() and (workspace / "victim").exists()
    worker.stop()
