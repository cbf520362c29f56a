"""`python -m bench.sandbox`: start-up cost of one command under bubblewrap against a plain subprocess
(`true`, p50/p99 over 40 runs each), then the time of a whole one-command turn (the scripted model calls
`terminal("true")`, then answers) with and without the sandbox, beside a turn with no tool call.
Turns run in-process (Runtime + drain_session) on the test environment. Prints figures; asserts nothing."""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from services.worker.sandbox import Sandbox, run

RUNS = 40
TURNS = 30


def sample(sandbox: Sandbox, workspace: Path) -> list[float]:
    out = []
    run("true", workspace=workspace, timeout=30, sandbox=sandbox)  # warm the probe and the page cache
    for _ in range(RUNS):
        start = time.perf_counter()
        run("true", workspace=workspace, timeout=30, sandbox=sandbox)
        out.append((time.perf_counter() - start) * 1000)
    return out


def report(label: str, samples: list[float]) -> float:
    ordered = sorted(samples)
    p50 = statistics.median(samples)
    print(f"{label:<28} p50 {p50:7.2f} ms  p99 {ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]:7.2f} ms")
    return p50


def main() -> None:
    base = Path(tempfile.mkdtemp(prefix="hstack-bench-sandbox-"))
    base.chmod(0o711)
    workspace = base / "workspace"
    workspace.mkdir()
    try:
        plain = report("plain subprocess (none)", sample(Sandbox(kind="none"), workspace))
        if shutil.which("bwrap") is None:
            print("bwrap: not installed (apt-get install bubblewrap)")
            return
        boxed = report("bubblewrap", sample(Sandbox(), workspace))
        report("bubblewrap, network off", sample(Sandbox(network=False), workspace))
        print(f"sandbox start-up overhead per command: {boxed - plain:.2f} ms (x{boxed / plain:.1f})")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    if shutil.which("bwrap") is not None:
        turn_overhead()


def turn_overhead() -> None:
    """p50 of a one-command turn under bwrap and under none, and of a turn without tools."""
    os.environ.setdefault("TEST_DATABASE", "sqlite")
    from tests.support import env as test_env

    env = test_env.prepare()
    env.data_dir.chmod(0o711)  # a root worker's sandbox uid must pass through DATA_DIR's parents
    from services.worker.agent.drain import drain_session
    from services.worker.runtime import Runtime
    from shared.config import get_settings
    from tests.fakes.model import FakeModel, text, tool_call
    from tests.services.worker.helpers import post_turn, wait_finished
    from tests.support.factories import make_session, make_user

    model = FakeModel(port=env.model_port)
    model.start()
    try:
        settings = get_settings()
        runtime = Runtime.build(settings)
        user = make_user(runtime.db)  # the only user, so TERMINAL_SANDBOX=none may run

        def turn_ms(kind: str | None) -> float:
            runtime.settings = settings.model_copy(update={"terminal_sandbox": kind or "bwrap"})
            if kind:
                model.script(tool_call([("terminal", {"command": "true"}, "c1")]), text("done"))
            else:
                model.script(text("done"))
            session = make_session(runtime.db, user.id)
            start = time.perf_counter()
            turn = post_turn(runtime.db, user.id, session.id, "run true")
            drain_session(runtime, session.id)
            assert wait_finished(runtime.db, turn.id).status == "completed"
            return (time.perf_counter() - start) * 1000

        results = {}
        for label, kind in (("turn, no tool call", None), ("turn + terminal (none)", "none"),
                            ("turn + terminal (bwrap)", "bwrap")):
            for _ in range(3):
                turn_ms(kind)  # warm the probe, the connections and the model server
            results[label] = report(label, [turn_ms(kind) for _ in range(TURNS)])
        runtime.leases.stop()
    finally:
        model.stop()
        env.close()
    bare, plain, boxed = results.values()
    print(f"one-command turn: +{plain - bare:.2f} ms for the command unsandboxed, +{boxed - bare:.2f} ms under "
          f"bwrap; the sandbox costs {boxed - plain:.2f} ms per one-command turn (x{boxed / plain:.2f} the "
          f"unsandboxed turn)")


if __name__ == "__main__":
    main()
