"""Lease holders: a process on the same host tells a dead holder from a live one, and judges no one else's."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys

import pytest

from shared.ops import holders
from shared.ops.holders import Holder
from tests.support.waiting import wait_until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def child_holder(proc: subprocess.Popen, **changes) -> str:
    """The id `proc` would hold leases under (its own pid and start time)."""
    fields = {"service": "worker", "host": socket.gethostname(), "pid": proc.pid,
              "namespace": holders.pid_namespace(), "start": holders.start_of(proc.pid), **changes}
    return str(Holder(**fields))


@pytest.fixture
def sleeper():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield proc
    proc.kill()
    proc.wait()


def test_this_process_is_alive_and_its_id_reads_back():
    mine = holders.holder_id("worker")
    assert holders.parse(mine) == Holder("worker", socket.gethostname(), os.getpid(), holders.pid_namespace(),
                                         holders.start_of(os.getpid()))
    assert not holders.dead_here(mine)


def test_a_live_process_is_alive_and_once_killed_is_dead(sleeper):
    held = child_holder(sleeper)
    assert not holders.dead_here(held)
    sleeper.send_signal(signal.SIGKILL)
    sleeper.wait()
    assert holders.dead_here(held)


def test_a_killed_process_not_yet_reaped_is_dead(sleeper):
    """A zombie (the supervisor has not collected it yet) runs nothing."""
    held = child_holder(sleeper)
    os.kill(sleeper.pid, signal.SIGKILL)
    wait_until(lambda: holders.start_of(sleeper.pid) is None, timeout=10, interval=0.001,
               what="the kernel to make it a zombie")
    assert sleeper.poll() is None or sleeper.returncode == -signal.SIGKILL
    assert holders.dead_here(held)


def test_a_pid_now_used_by_another_process_means_the_holder_is_dead(sleeper):
    """The same pid with another start time is another process: the holder that started before is gone."""
    assert holders.dead_here(child_holder(sleeper, start="1"))


@pytest.mark.parametrize("changes", [{"host": "another-host"}, {"namespace": "4026500000"}])
def test_a_holder_on_another_host_or_in_another_pid_namespace_is_never_judged_from_here(sleeper, changes):
    held = child_holder(sleeper, **changes)
    sleeper.kill()
    sleeper.wait()
    assert not holders.dead_here(held)


@pytest.mark.parametrize("value", [None, "", "worker", "worker@host:12", "worker@test:abc", f"worker@{socket.gethostname()}:x:1:2",
                                   "dead-worker", "@:::"])
def test_ids_that_are_not_holder_ids_are_never_judged_dead(value):
    assert not holders.dead_here(value)
