"""The undertaker ends the services a killed supervisor left behind, and nothing else."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from services.cli.undertaker import Undertaker, still_ours
from shared.ops.holders import start_of

STUBBORN = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); "
            "time.sleep(600)")


def stubborn_service() -> subprocess.Popen:
    """A service that ignores SIGTERM (a hung shutdown), leading its own process group as `hstack run`'s do."""
    proc = subprocess.Popen([sys.executable, "-c", STUBBORN], stdout=subprocess.PIPE, start_new_session=True)
    assert proc.stdout.readline() == b"up\n"
    return proc


@pytest.fixture
def service():
    proc = stubborn_service()
    yield proc
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def test_a_service_that_ignores_sigterm_is_killed_once_the_supervisor_is_gone(service):
    """`hstack run` killed with kill -9 left a service hung in its own shutdown running with nobody to stop it."""
    undertaker = Undertaker(grace=0.5).start()
    undertaker.watch(service.pid)
    undertaker.popen.stdin.close()  # what the kernel does to the pipe when the supervisor dies

    assert service.wait(30) == -signal.SIGKILL
    assert undertaker.popen.wait(30) == 0


def test_a_clean_stop_dismisses_it_without_touching_anything(service):
    undertaker = Undertaker(grace=0.1).start()
    undertaker.watch(service.pid)
    undertaker.dismiss()

    assert undertaker.popen.wait(30) == 0
    assert service.poll() is None


def test_a_reused_pid_is_never_signalled():
    """A recorded group whose number now names another process (the start time differs) is left alone; a
    number with no process left may still have members of our group, so it may be signalled."""
    assert still_ours(os.getpid(), start_of(os.getpid()))
    assert not still_ours(os.getpid(), "1")
    assert still_ours(2 ** 22 + 7, "1")  # above pid_max: no such process
