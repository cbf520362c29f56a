"""`python -m bench.mcp`: how long the SDK's stdio MCP server takes to be usable, started the way a user's is.

Start = spawn, `initialize` and `tools/list` of the test server (tests/fakes/mcp_server.py, the official SDK),
through the worker's pool. Measured under bubblewrap (the user's sandbox, as the worker runs it) and as a
plain subprocess (TERMINAL_SANDBOX=none), then one tool call on the live session. Prints figures; asserts nothing.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.report import figure
from services.worker.mcp_client.pool import Pool, Target
from services.worker.sandbox import Sandbox
from shared.config import load_settings
from shared.messaging.connections import get_redis
from shared.mcp.servers import McpServerIn

RUNS = 8
CALLS = 40


def stage(workspace: Path) -> list[str]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.fakes.mcp_stage import stage as staged  # the bench reuses the tests' staging of the SDK server

    return staged(workspace)


def starts(kind: str, base: Path) -> tuple[list[float], float]:
    """Start times (s) over RUNS fresh servers, and the p50 of a tool call (ms) on the last one."""
    settings = load_settings(DATA_DIR=str(base), REDIS_URL="redis://127.0.0.1:6379/0", TERMINAL_SANDBOX=kind)
    workspace = base / "users" / f"bench-{kind}" / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    argv = stage(workspace)
    if kind == "none":
        argv = [a.replace("/workspace", str(workspace)) for a in argv]
    pool = Pool(settings, get_redis(settings), Sandbox.from_settings(settings))
    out = []
    for n in range(RUNS):
        target = Target(f"bench-{kind}", McpServerIn(name=f"b{n}", command=argv), f"bench-{kind}", workspace)
        began = time.perf_counter()
        pool.tools(target)
        out.append(time.perf_counter() - began)
    calls = []
    for _ in range(CALLS):
        began = time.perf_counter()
        pool.call(target, "echo", {"text": "x"})
        calls.append((time.perf_counter() - began) * 1000)
    pool.close()
    return out, statistics.median(calls)


def main() -> None:
    base = Path(tempfile.mkdtemp(prefix="hstack-bench-mcp-"))
    base.chmod(0o711)
    try:
        for kind in ("bwrap", "none"):
            times, call = starts(kind, base)
            figure(f"SDK stdio MCP server start ({kind}), p50", statistics.median(times), "s", digits=2,
                   note=f"max {max(times):.2f} s over {RUNS}")
            figure(f"MCP tool call on a live session ({kind}), p50", call, "ms", digits=2)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
