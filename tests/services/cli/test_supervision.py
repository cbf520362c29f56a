"""`hstack run` keeps the stack up: it restarts a crashed service with backoff and gives up only on a crash loop."""

from __future__ import annotations

import io
import os
import signal
import sys
import threading

import pytest

from services.cli.children import Console
from services.cli.run import Supervisor
from services.cli.supervision import RestartPolicy, exit_reason
from tests.support.waiting import wait_until

pytestmark = pytest.mark.once  # backend-independent: see tests/conftest.py

SLEEPER = [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(60)"]
CRASHER = [sys.executable, "-c", "import sys; print('boom', flush=True); sys.exit(3)"]


def test_backoff_doubles_from_one_second_to_thirty():
    policy = RestartPolicy()

    delays = [policy.crashed(now=float(i)) for i in range(7)]

    assert delays == [1, 2, 4, 8, 16, 30, 30]


def test_a_healthy_minute_resets_the_backoff():
    policy = RestartPolicy()
    for i in range(4):
        policy.crashed(now=float(i))
    policy.healthy(now=10.0)

    assert policy.crashed(now=69.0) == 16, "59 s of health is not a minute"
    policy.healthy(now=100.0)
    assert policy.crashed(now=160.0) == 1


def test_a_crash_loop_past_the_limit_gives_up():
    policy = RestartPolicy(limit=3)

    assert [policy.crashed(now=0.0) for _ in range(3)] == [1, 2, None]


def test_exit_reasons_name_the_signal_or_the_code():
    assert exit_reason(-signal.SIGKILL) == "was killed by SIGKILL"
    assert exit_reason(2) == "exited with code 2"


class Running:
    """A Supervisor watching fake services in a thread, as `hstack run` watches the real ones."""

    def __init__(self, tmp_path, policy) -> None:
        self.out = io.StringIO()
        self.supervisor = Supervisor(Console(self.out), policy=policy)
        self.supervisor.logs_dir = tmp_path
        self.result: list[int] = []
        self.thread = threading.Thread(target=lambda: self.result.append(self.supervisor.watch()), daemon=True)

    def launch(self, name: str, argv: list[str]):
        return self.supervisor.launch(name, argv, dict(os.environ), lambda child: child.alive(), "fake")

    def __enter__(self) -> "Running":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.supervisor.stop_requested.set()
        self.thread.join(10)
        self.supervisor.shutdown()


def test_a_killed_service_is_restarted_and_the_reason_is_logged(tmp_path):
    """kill -9 of the worker under `make run` took the whole stack down, api included. Now the
    supervisor says which service died and how, restarts it after the backoff, and keeps watching."""
    with Running(tmp_path, lambda: RestartPolicy(first=0.1)) as running:
        entry = running.launch("worker", SLEEPER)
        other = running.launch("api", SLEEPER)
        first_pid = entry.child.pid
        wait_until(lambda: entry.ready, timeout=10, what="the worker to be ready")
        os.kill(first_pid, signal.SIGKILL)

        wait_until(lambda: entry.child.pid != first_pid and entry.ready, timeout=10, what="the worker to be back")
        console = running.out.getvalue()
        assert "worker was killed by SIGKILL: restarting it in" in console
        assert "worker    back" in console
        assert other.child.alive() and running.result == [], "nothing else stopped"
    assert running.result == [0]
    assert (tmp_path / "worker.log").read_text().count("up") == 2, "both runs' output is in the service log"


def test_a_service_that_keeps_crashing_stops_the_stack_and_says_why(tmp_path):
    with Running(tmp_path, lambda: RestartPolicy(first=0.05, cap=0.1, limit=3)) as running:
        bystander = running.launch("api", SLEEPER)
        running.launch("curator", CRASHER)
        wait_until(lambda: running.result, timeout=20, what="the supervisor to give up")

    assert running.result == [1]
    console = running.out.getvalue()
    assert "curator exited with code 3 and has crashed 3 times in a row" in console
    assert "hstack logs curator" in console
    assert not bystander.child.alive(), "giving up stops the others too"


@pytest.mark.parametrize("line,shown", [
    ("error   celery.worker.consumer: consumer: Cannot connect to redis", True),
    ('{"ts": "x", "level": "error", "logger": "a", "msg": "b"}', True),
    ("info    celery.worker: Connected to redis", False),
    (" -------------- celery@host v5.7.0", False),
])
def test_only_errors_reach_the_console(tmp_path, line, shown):
    with Running(tmp_path, RestartPolicy) as running:
        entry = running.launch("worker", [sys.executable, "-c", f"print({line!r})"])
        wait_until(lambda: (tmp_path / "worker.log").exists() and line in (tmp_path / "worker.log").read_text(),
                   timeout=10, what="the line in the log")
        entry.child.wait(5)
    assert (line in running.out.getvalue()) is shown
