"""The dead-worker sweep: a turn whose worker died on this host is sent again at once, not after its lease."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys

import pytest

from services.worker.recovery import DeadHolderSweep
from shared.ops import holders
from shared.ops.holders import Holder
from shared.queue.names import RUN_TURN
from shared.stores import turns
from tests.support.factories import make_session

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def holder_of(proc: subprocess.Popen) -> str:
    return str(Holder("worker", socket.gethostname(), proc.pid, holders.pid_namespace(), holders.start_of(proc.pid)))


@pytest.fixture
def process():
    procs = []

    def start() -> subprocess.Popen:
        procs.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"]))
        return procs[-1]

    yield start
    for proc in procs:
        proc.kill()
        proc.wait()


def test_a_dead_holders_turn_is_sent_again_and_a_live_holders_is_left_running(db, user, make_runtime, process):
    runtime = make_runtime()
    sent = []
    runtime.enqueue = lambda name, payload: sent.append((name, payload.turn_id))
    doomed_proc, live_proc = process(), process()
    doomed_session, live_session = make_session(db, user.id), make_session(db, user.id)
    doomed, _ = turns.create_turn(db, user.id, doomed_session.id, "kill me")
    alive, _ = turns.create_turn(db, user.id, live_session.id, "leave me")
    turns.claim_next(db, doomed_session.id, holder_of(doomed_proc), lease_seconds=600)
    turns.claim_next(db, live_session.id, holder_of(live_proc), lease_seconds=600)
    sweep = DeadHolderSweep(db, runtime.worker_id, runtime.send_all, lease_seconds=600)

    assert sweep.sweep() == [] and sent == []
    doomed_proc.send_signal(signal.SIGKILL)
    doomed_proc.wait()
    freed = sweep.sweep()

    assert [t.id for t in freed] == [doomed.id]
    assert sent == [(RUN_TURN, doomed.id)]
    assert turns.claim_next(db, live_session.id, "another", lease_seconds=600) is None, "a live worker keeps its turn"
    taken = turns.claim_next(db, doomed_session.id, "another", lease_seconds=600)
    assert (taken.id, taken.attempts) == (doomed.id, 2)
    assert turns.get_turn(db, None, alive.id).worker_id == holder_of(live_proc)


def test_the_lease_keeper_runs_the_sweep_at_most_every_few_seconds(db, user, make_runtime, process):
    runtime = make_runtime()
    runtime.enqueue = lambda name, payload: None
    calls = []
    sweep = DeadHolderSweep(db, runtime.worker_id, runtime.send_all, lease_seconds=600, every=3600)
    sweep.sweep = lambda: calls.append(1) or []
    runtime.leases.sweep = sweep
    runtime.leases.beat()
    runtime.leases.beat()
    assert calls == [1]


def test_every_worker_runtime_holds_leases_under_an_id_its_host_can_judge(settings):
    from services.worker.runtime import Runtime

    runtime = Runtime.build(settings)
    try:
        assert holders.parse(runtime.worker_id).pid == holders.parse(holders.holder_id("x")).pid
        assert not holders.dead_here(runtime.worker_id)
        assert isinstance(runtime.leases.sweep, DeadHolderSweep)
    finally:
        runtime.leases.stop()
