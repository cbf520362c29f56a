"""`python -m bench.sandbox`: start-up cost of one command under bubblewrap against a plain subprocess
(`true`, p50/p99 over 40 runs each). Prints figures; asserts nothing."""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path

from services.worker.sandbox import Sandbox, run

RUNS = 40


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


if __name__ == "__main__":
    main()
