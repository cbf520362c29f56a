"""The terminal tool in real turns: the scripted model calls it, the real sandbox runs the command.

Every payload is harmless and bounded (the "fork bomb" forks at most 400 sleepers under a limit of
20; the "memory hog" asks for 512 MB once under 128 MB). These tests judge the sandbox, so the approval gate
is off (APPROVAL_MODE=off; its hard-line floor still applies); the gate in front of the terminal is tested in
test_approval_parking.py and tests/e2e/test_approvals.py.
"""

from __future__ import annotations

import json
import os

import pytest

from services.worker.sandbox import launcher
from services.worker.tools import terminal as terminal_tool
from services.worker.registrations import register_tools
from tests.fakes.model import text, tool_call
from tests.services.worker.terminal_turns import (SECRET, needs_bwrap, one_turn, script_calls,
                                                  sleepers)
from tests.services.worker.test_sandbox import FORK_BOMB
from tests.support.factories import make_user
from tests.support.waiting import wait_until

REGISTRY = register_tools()  # this module's own registry of the built-in tools


@pytest.fixture
def runtime(make_runtime, data):
    return make_runtime(approval_mode="off", data_dir=data)


@needs_bwrap
def test_user_a_reaches_nothing_of_user_b_or_the_server(db, model, data, runtime, settings, monkeypatch):
    """Reproduction: A's terminal names B's memory file, the SQLite file, .env, the services' environment,
    and writes outside its workspace — by absolute and relative paths; every attempt fails."""
    alice, bob = make_user(db), make_user(db)
    bob_memory = data / "users" / bob.id / "memories" / "MEMORY.md"
    bob_memory.parent.mkdir(parents=True)
    bob_memory.write_text(f"bob's memory {SECRET}\n")
    (data / "hstack.db").write_text(f"SQLite format 3 {SECRET}\n")
    (data / ".env").write_text(f"ADMIN_API_KEY={SECRET}\n")
    monkeypatch.setenv("HSTACK_LEAK_PROBE", SECRET)
    real_db = settings.sqlalchemy_url.split("///", 1)[-1] if settings.sqlalchemy_url.startswith("sqlite") else "/x.db"
    reads = [bob_memory, f"../../{bob.id}/memories/MEMORY.md", data / "hstack.db", "../../../hstack.db",
             data / ".env", "../../../.env", real_db]
    bob_ws = data / "users" / bob.id / "workspace"
    bob_ws.mkdir(parents=True)
    writes = ["/hstack-probe", "/etc/hstack-probe", "/tmp/../usr/hstack-probe", bob_ws / "pwned",
              f"../../{bob.id}/workspace/pwned", data / "planted"]
    script_calls(model,
                 ("terminal", {"command": "; ".join(f"cat '{p}'" for p in reads)}),
                 ("terminal", {"command": "env; cat /proc/1/environ; cat /proc/self/environ; "
                                          f"cat /proc/{os.getpid()}/environ; echo"}),
                 ("terminal", {"command": "; ".join(f"echo x > '{p}' && echo WROTE" for p in writes)}),
                 ("terminal", {"command": "echo mine > mine.txt && cat mine.txt"}))

    turn, results = one_turn(db, runtime, alice.id)

    assert turn.status == "completed"
    assert all(SECRET not in str(r) for r in results.values()), results
    assert results["c1"]["output"].count("No such file or directory") == len(reads)
    assert results["c1"]["exit_code"] != 0
    assert "HOME=/workspace" in results["c2"]["output"] and "HSTACK_LEAK_PROBE" not in results["c2"]["output"]
    assert "WROTE" not in results["c3"]["output"]
    assert not (bob_ws / "pwned").exists() and not (data / "planted").exists()
    assert results["c4"] == {"output": "mine\n", "exit_code": 0}
    assert (data / "users" / alice.id / "workspace" / "mine.txt").read_text() == "mine\n"


@needs_bwrap
def test_a_fork_bomb_and_a_memory_hog_are_contained_and_the_worker_carries_on(db, model, data, make_runtime):
    runtime = make_runtime(approval_mode="off", data_dir=data, terminal_max_processes=20, terminal_memory_mb=128)
    alice = make_user(db)
    hog = "python3 -c 'b = bytearray(512 * 1024 * 1024); print(\"allocated\")'"
    script_calls(model, ("terminal", {"command": FORK_BOMB}), ("terminal", {"command": hog}),
                 ("terminal", {"command": "echo alive"}))

    turn, results = one_turn(db, runtime, alice.id)

    assert turn.status == "completed" and turn.output == "done"
    assert "fork refused after" in results["c1"]["output"], results["c1"]
    assert int(results["c1"]["output"].split("fork refused after")[1].split()[0]) < 20
    assert "MemoryError" in results["c2"]["output"] and "allocated" not in results["c2"]["output"]
    assert results["c2"]["exit_code"] != 0
    assert results["c3"] == {"output": "alive\n", "exit_code": 0}


@needs_bwrap
def test_long_output_keeps_head_and_tail_and_read_file_pages_the_whole(db, model, data, runtime):
    alice = make_user(db)
    command = "echo FIRST-LINE; seq 1 40000; echo LAST-LINE; exit 3"

    def read_stored(body: dict):
        stored = json.loads(body["messages"][-1]["content"])["full_output"]
        return tool_call([("read_file", {"path": stored, "offset": 39990, "limit": 20}, "c2")])

    model.script(tool_call([("terminal", {"command": command}, "c1")]), read_stored, text("read it"))

    turn, results = one_turn(db, runtime, alice.id)

    first = results["c1"]
    assert turn.status == "completed" and first["exit_code"] == 3
    assert first["output"].startswith("FIRST-LINE") and first["output"].rstrip().endswith("LAST-LINE")
    assert len(first["output"]) < 51_000 and first["full_output"] in first["output"]
    assert first["full_output"].startswith(".hstack/outputs/") and "read_file" in first["note"]
    assert "39990|39989" in results["c2"]["text"] and "40002|LAST-LINE" in results["c2"]["text"]


@needs_bwrap
def test_exit_codes_timeouts_and_workdir(db, model, data, make_runtime):
    runtime = make_runtime(approval_mode="off", data_dir=data, terminal_max_timeout_seconds=30)
    alice = make_user(db)
    (data / "users" / alice.id / "workspace" / "sub").mkdir(parents=True)
    script_calls(model,
                 ("terminal", {"command": "echo begun; sleep 1000.7171", "timeout": 1}),
                 ("terminal", {"command": "pwd; exit 7", "workdir": "sub"}),
                 ("terminal", {"command": "pwd", "workdir": "../.."}),
                 ("terminal", {"command": "pwd", "workdir": "absent"}),
                 ("terminal", {"command": "true", "timeout": 5000}))

    _, results = one_turn(db, runtime, alice.id)

    assert results["c1"]["output"] == "begun\n" and results["c1"]["exit_code"] == 137
    assert "timed out after 1 s" in results["c1"]["note"] and "all its processes were killed" in results["c1"]["note"]
    assert results["c2"] == {"output": "/workspace/sub\n", "exit_code": 7}
    assert "error" in results["c3"] and "data" not in results["c3"]["error"]
    assert results["c4"] == {"error": "No such folder in the workspace: absent"}
    assert results["c5"]["exit_code"] == 0 and "timeout lowered from 5000 s to 30 s" in results["c5"]["note"]
    wait_until(lambda: not sleepers("1000.7171"), timeout=10, what="the timed-out sleep to be gone")


@needs_bwrap
def test_a_commands_own_timeout_outlasts_the_generic_tool_time_limit(db, model, data, make_runtime):
    """The issue's default terminal timeout is 180 s but every tool call was abandoned after TOOL_TIMEOUT_SECONDS
    (120), so the terminal silently capped commands below it. A call now gets its command's own timeout (plus a
    margin) from the batch: with a 1 s tool limit, a 3 s command still finishes and reports its output."""
    runtime = make_runtime(approval_mode="off", data_dir=data, tool_timeout_seconds=1)
    alice = make_user(db)
    script_calls(model, ("terminal", {"command": "sleep 2; echo slept", "timeout": 20}))

    _, results = one_turn(db, runtime, alice.id)

    assert results["c1"] == {"output": "slept\n", "exit_code": 0}


def test_unsandboxed_terminal_refuses_a_server_with_several_users(db, model, data, make_runtime):
    runtime = make_runtime(approval_mode="off", data_dir=data, terminal_sandbox="none")
    alice, _bob = make_user(db), make_user(db)
    script_calls(model, ("terminal", {"command": "touch ran.txt"}))

    _, results = one_turn(db, runtime, alice.id)

    assert "TERMINAL_SANDBOX=none" in results["c1"]["error"] and "single-user" in results["c1"]["error"]
    assert not (data / "users" / alice.id / "workspace" / "ran.txt").exists()


def test_unsandboxed_terminal_runs_on_a_single_user_box(db, model, data, make_runtime, monkeypatch):
    monkeypatch.setattr(terminal_tool.users, "count_users", lambda db: 1)
    runtime = make_runtime(approval_mode="off", data_dir=data, terminal_sandbox="none")
    alice = make_user(db)
    script_calls(model, ("terminal", {"command": "pwd; echo hi > ran.txt"}))

    _, results = one_turn(db, runtime, alice.id)

    assert results["c1"] == {"output": ".\n", "exit_code": 0}  # the workspace, shown relative
    assert (data / "users" / alice.id / "workspace" / "ran.txt").exists()


def test_a_missing_bwrap_is_a_clear_error_and_never_runs_unsandboxed(db, model, data, runtime, monkeypatch):
    monkeypatch.setattr(launcher.shutil, "which", lambda *a, **k: None)
    alice = make_user(db)
    script_calls(model, ("terminal", {"command": "touch ran.txt"}))

    turn, results = one_turn(db, runtime, alice.id)

    assert turn.status == "completed"
    assert "apt-get install bubblewrap" in results["c1"]["error"]
    assert not (data / "users" / alice.id / "workspace" / "ran.txt").exists()


def test_the_registry_holds_terminal_and_process_for_the_gate_and_the_prompt():
    term, proc = REGISTRY.get("terminal"), REGISTRY.get("process")
    assert term.exclusive and term.toolset == proc.toolset == "terminal"
    assert term.approval_command({"command": "ls -la"}) == "ls -la" and proc.approval_command is None
    assert any("worker restarts" in sentence for sentence in term.guidance)
